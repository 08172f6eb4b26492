package inject

import (
	"regexp"
	"strings"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rank"
)

var (
	reImage = regexp.MustCompile(`!\[([^\]]*)\]\(\s*([^)\s]*)[^)]*\)`)
	reLink  = regexp.MustCompile(`\[([^\]]+)\]\(\s*([^)\s]*)[^)]*\)`)
	// reTag is an HTML element that can load, link or run something; the page renders no raw HTML,
	// but an answer is also read by API clients that might.
	reTag = regexp.MustCompile(`(?is)<\s*/?\s*(img|iframe|script|svg|object|embed|a|link|meta|style|form|input|video|audio|source|base|frame)\b[^>]*>`)
	reURL = regexp.MustCompile(`(?i)\b(https?|ftp|javascript|data):[^\s)\]"'<>]+|\b//[a-z0-9.-]+\.[a-z]{2,}[^\s)\]"'<>]*`)
	// rePayload is what an injected instruction asks to be said: an all-capitals token ("PWNED-7F3A")
	// or a quoted phrase.
	rePayload = regexp.MustCompile(`\b[A-Z][A-Z0-9_-]{3,}\b|["“']([^"”']{4,60})["”']|「([^」]{2,40})」|“([^”]{2,40})”`)
)

// inside reports whether url points at the server itself (a path, not another host).
func inside(url string) bool {
	return strings.HasPrefix(url, "/") && !strings.HasPrefix(url, "//") || strings.HasPrefix(url, "#")
}

// Sanitise cleans an answer written over ev, whose flagged passages are flags: images, links and
// HTML elements pointing outside the server are removed (a link keeps its text), URLs that a flagged
// passage carries are removed, and a sentence that instructs the assistant or repeats what a flagged
// passage asked to be said is dropped. It returns the cleaned answer and how many things it removed.
func Sanitise(answer string, ev []rank.Evidence, flags []Flag) (string, int) {
	n := 0
	out := reImage.ReplaceAllStringFunc(answer, func(m string) string {
		if inside(reImage.FindStringSubmatch(m)[2]) {
			return m
		}
		n++
		return ""
	})
	out = reLink.ReplaceAllStringFunc(out, func(m string) string {
		sm := reLink.FindStringSubmatch(m)
		if inside(sm[2]) {
			return m
		}
		n++
		return sm[1]
	})
	out = reTag.ReplaceAllStringFunc(out, func(string) string { n++; return "" })
	urls, payloads := attackerText(ev, flags)
	if len(urls) > 0 {
		out = reURL.ReplaceAllStringFunc(out, func(m string) string {
			for _, u := range urls {
				if strings.Contains(strings.ToLower(m), u) {
					n++
					return ""
				}
			}
			return m
		})
	}
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		kept, dropped := keepSentences(line, payloads)
		n += dropped
		if dropped > 0 && strings.TrimSpace(strings.Trim(strings.TrimSpace(kept), "-*•")) == "" {
			continue // the whole line was the injected text
		}
		lines = append(lines, kept)
	}
	return strings.Join(lines, "\n"), n
}

// keepSentences drops the sentences of line that instruct the assistant or carry a payload.
func keepSentences(line string, payloads []string) (string, int) {
	if strings.TrimSpace(line) == "" {
		return line, 0
	}
	sents := lang.SplitSentences(line)
	if len(sents) == 0 {
		return line, 0
	}
	var keep []string
	dropped := 0
	for _, s := range sents {
		if echoes(s, payloads) {
			dropped++
			continue
		}
		keep = append(keep, s)
	}
	if dropped == 0 {
		return line, 0
	}
	sep := " "
	if lang.HasCJK(line) {
		sep = ""
	}
	prefix := ""
	if t := strings.TrimSpace(line); strings.HasPrefix(t, "- ") && len(keep) > 0 && !strings.HasPrefix(strings.TrimSpace(keep[0]), "-") {
		prefix = "- "
	}
	return prefix + strings.Join(keep, sep), dropped
}

// echoes reports whether sentence s instructs the assistant or repeats an injected payload.
func echoes(s string, payloads []string) bool {
	if Detect(s) != "" {
		return true
	}
	n := Normalise(s)
	for _, p := range payloads {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// attackerText gathers, from the flagged passages' instructing sentences, the URLs (host and path,
// lower case) and payloads (normalised) that an obeying answer would carry.
func attackerText(ev []rank.Evidence, flags []Flag) (urls, payloads []string) {
	for _, f := range flags {
		if f.Source < 1 || f.Source > len(ev) {
			continue
		}
		e := ev[f.Source-1]
		body := e.Text + "\n" + e.ChildText
		for _, u := range reURL.FindAllString(body, -1) {
			u = strings.ToLower(u)
			if i := strings.Index(u, "://"); i >= 0 {
				u = u[i+3:]
			}
			u = strings.TrimPrefix(u, "//")
			if host, _, _ := strings.Cut(u, "/"); host != "" {
				urls = append(urls, host)
			}
		}
		// the instructing sentences, and the markup and URLs of the passage (a sentence splitter may cut
		// "p.gif?d=PWNED" off the sentence that asks for it)
		parts := lang.SplitSentences(stripInvisible(body))
		parts = append(parts, reTag.FindAllString(body, -1)...)
		parts = append(parts, reURL.FindAllString(body, -1)...)
		for _, s := range parts {
			if Detect(s) == "" && !reTag.MatchString(s) && !reURL.MatchString(s) {
				continue
			}
			for _, m := range rePayload.FindAllStringSubmatch(s, -1) {
				p := m[0]
				for _, g := range m[1:] {
					if g != "" {
						p = g
					}
				}
				if p = strings.TrimSpace(Normalise(p)); len([]rune(p)) >= 2 && !commonCaps[p] {
					payloads = append(payloads, p)
				}
			}
		}
	}
	return urls, payloads
}

// commonCaps are capitalised words an instruction uses that an honest answer may also hold.
var commonCaps = map[string]bool{"system": true, "note": true, "important": true, "user": true, "assistant": true,
	"instructions": true, "admin": true, "warning": true, "http": true, "https": true, "json": true, "html": true, "url": true}

func stripInvisible(s string) string {
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, s)
}

// Unsafe reads one passage: nil when it instructs nothing, otherwise a test that reports whether a
// sentence of it must not be quoted (it instructs the assistant, repeats what the instruction asks to
// be said, or carries an outside image, link, HTML element or the instruction's URL).
func Unsafe(e rank.Evidence) func(sentence string) bool {
	flags := Passages([]rank.Evidence{e})
	if len(flags) == 0 {
		return nil
	}
	urls, payloads := attackerText([]rank.Evidence{e}, flags)
	return func(s string) bool {
		if echoes(s, payloads) || reImage.MatchString(s) || reTag.MatchString(s) {
			return true
		}
		l := strings.ToLower(s)
		for _, u := range urls {
			if strings.Contains(l, u) {
				return true
			}
		}
		return false
	}
}
