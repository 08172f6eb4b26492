package reader

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Code is the reader's rule for source code outside a fenced block: a compression window that starts
// inside a fence, an indented block, a configuration line or a list of identifiers reads like prose to
// the sentence splitter, and "const retryThreshold = 0.85" was quoted at HIGH 0.86 for a question about
// a design document's threshold. Such a line is never quoted for a prose question, and an answer that
// quotes one is never HIGH (see answer.Assess).

// codePrefixes open a statement or a declaration in common languages.
var codePrefixes = []string{"func ", "def ", "class ", "const ", "var ", "let ", "import ", "package ", "return ",
	"#include", "#define", "public ", "private ", "static ", "if (", "for (", "while (", "} else", "//", "/*",
	"SELECT ", "INSERT ", "UPDATE ", "DELETE FROM", "CREATE TABLE", "$ ", "export ", "fn ", "struct ", "type "}

// codeOperators are tokens that only code holds.
var codeOperators = map[string]bool{"=": true, "==": true, ":=": true, "+=": true, "-=": true, "!=": true, "=>": true,
	"->": true, "&&": true, "||": true, "{": true, "}": true, "};": true, "();": true, "<-": true, "===": true}

// CodeLine reports whether a line is source code or a run of identifiers rather than a sentence: a
// statement's opening keyword or closing brace, or at least as many identifier-like tokens
// (snake_case, camelCase, dotted.names, calls(), operators) as plain words. A sentence naming one
// identifier ("Set `max_retries` to 3 in the config file.") is prose; Chinese text is prose.
func CodeLine(line string) bool {
	if !mayBeCode(line) {
		return false
	}
	s := strings.TrimSpace(line)
	s = strings.TrimSpace(strings.TrimLeft(s, "-*+>"))
	if s == "" {
		return false
	}
	cjk := 0
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			cjk++
		}
	}
	if cjk > 3 {
		return false
	}
	for _, p := range codePrefixes {
		if strings.HasPrefix(s, p) && len(s) > len(p) {
			// "type " and "return " also open English sentences: the rest must look like code too
			if p == "type " || p == "return " || p == "export " || p == "package " || p == "import " || p == "class " {
				continue
			}
			return true
		}
	}
	if last, _ := utf8.DecodeLastRuneInString(s); last == '{' || last == ';' && strings.ContainsAny(s, "=()") {
		return true
	}
	ident, words := 0, 0
	for _, tok := range strings.Fields(s) {
		switch {
		case codeOperators[tok]:
			ident++
		case identifier(tok):
			ident++
		case plainWord(tok):
			words++
		}
	}
	return ident > 0 && ident >= words
}

// identifier reports whether a token is shaped like a name in code: snake_case, lowerCamelCase, a
// dotted path of words (cfg.Retry.Max, not "e.g." nor "U.S."), a call "f(x)", or "key=value".
func identifier(tok string) bool {
	tok = strings.Trim(tok, "`'\",;:!?[]")
	tok = strings.TrimRight(tok, ".")
	if tok == "" {
		return false
	}
	if i := strings.IndexByte(tok, '('); i > 0 && strings.HasSuffix(tok, ")") {
		return true
	}
	if strings.Contains(tok, "=") && !strings.HasPrefix(tok, "=") {
		return true
	}
	if i := strings.IndexByte(tok, '_'); i > 0 && i < len(tok)-1 && strings.IndexFunc(tok, unicode.IsLetter) >= 0 {
		return true
	}
	if strings.IndexByte(tok, '.') > 0 {
		ok := true
		for p := range strings.SplitSeq(tok, ".") {
			r, _ := utf8.DecodeRuneInString(p)
			ok = ok && len(p) >= 2 && unicode.IsLetter(r) && strings.ToUpper(p) != p
		}
		if ok {
			return true
		}
	}
	// lowerCamelCase with a hump after two lower-case letters: retryThreshold, maxBackoffMs (not
	// "iPhone" nor "eBay")
	rs := []rune(tok)
	if len(rs) >= 5 && unicode.IsLower(rs[0]) && unicode.IsLower(rs[1]) {
		for i := 2; i < len(rs); i++ {
			if unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1]) {
				return true
			}
			if !unicode.IsLetter(rs[i]) && !unicode.IsDigit(rs[i]) {
				break
			}
		}
	}
	return false
}

// plainWord reports whether a token is a word of prose: letters, with at most an apostrophe, a hyphen
// or trailing punctuation.
func plainWord(tok string) bool {
	tok = strings.TrimRight(strings.TrimLeft(tok, "(\"'“‘"), ".,;:!?)\"'”’")
	if tok == "" {
		return false
	}
	for _, r := range tok {
		if !unicode.IsLetter(r) && r != '\'' && r != '-' && r != '’' {
			return false
		}
	}
	return true
}

// reCodeAsked: a question that asks about code itself; its lines may then be quoted (never at HIGH).
// Not "function" nor "method": "What is the function of the liver?" asks about prose.
var reCodeAsked = regexp.MustCompile(`(?i)\b(code|snippet|syntax|variable|identifier)s?\b|代码|变量|函数名|配置项`)

// CodeQuestion reports whether a question asks about code: it names an identifier, holds backticks,
// or asks for code, a snippet, a variable... ("What does `retry_threshold` default to?").
func CodeQuestion(q string) bool {
	if strings.Contains(q, "`") || reCodeAsked.MatchString(q) {
		return true
	}
	for _, tok := range strings.Fields(q) {
		if identifier(strings.TrimRight(tok, "?？")) {
			return true
		}
	}
	return false
}

// opensInCode reports whether a passage starts inside a fenced code block: a compression window cut
// after the opening fence leaves an odd number of fences, the first one bare ("```", a closing
// fence: an opening one usually names its language) and code above it. Read from the top, that
// closing fence would open a "block" holding the prose after it, and the code before it would be
// read as prose.
func opensInCode(lines []string) bool {
	fences, first := 0, -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			if first < 0 {
				first = i
			}
			fences++
		}
	}
	if fences%2 == 0 || strings.TrimSpace(lines[first]) != "```" {
		return false
	}
	code, prose := 0, 0
	for _, l := range lines[:first] {
		switch {
		case strings.TrimSpace(l) == "":
		case CodeLine(l):
			code++
		default:
			prose++
		}
	}
	return code > 0 && code >= prose
}

// mayBeCode is CodeLine's one pass over the bytes: a line without a character code needs (_ = ( ) { }
// ; & | < > / # $), a dotted name (a.b) or a lowerCamel hump cannot be code, and most prose lines stop
// here without a token split.
func mayBeCode(line string) bool {
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case codeByte[c]:
			return true
		case c == '.' && i > 0 && i+1 < len(line) && asciiLetter(line[i-1]) && asciiLetter(line[i+1]):
			return true
		case c >= 'A' && c <= 'Z' && i > 0 && line[i-1] >= 'a' && line[i-1] <= 'z':
			return true
		}
	}
	return false
}

// codeByte marks the characters mayBeCode looks for.
var codeByte = func() (t [256]bool) {
	for _, c := range []byte("_=(){};&|<>/#$") {
		t[c] = true
	}
	return t
}()

func asciiLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
