// Package chunk splits a markdown document into parent and child chunks by structure (seed 003 #9, #37).
//
// Rules, each from a failure seen in production:
//   - a heading flushes the buffer: text under two headings never shares a chunk;
//   - tables and code blocks are atomic: a split table loses its header, split code its meaning (a very
//     large one becomes one oversize chunk, flagged);
//   - paragraphs merge up to ChildChars; a longer paragraph splits at sentence ends (。！？； and line
//     ends; ". ! ?" only before white space, so "v1.2.3" and code survive) with about Overlap characters
//     of whole sentences carried into the next piece;
//   - every child's text starts with its full heading path ("# Product\n## Clause 2"), so the product
//     name is in what embedding, BM25 and rerank see: without it, "the age limit is 65" matched questions
//     about every product;
//   - parents pack adjacent children up to ParentChars and never cross a change of root heading: two
//     products in one parent mixed up their age limits.
package chunk

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/text"
)

// Options are the sizes, in characters (runes) of body text.
type Options struct {
	ChildChars  int
	Overlap     int
	ParentChars int
}

// DefaultOptions are DESIGN.md's sizes.
func DefaultOptions() Options { return Options{ChildChars: 400, Overlap: 50, ParentChars: 2000} }

// Piece is one chunk before it is given ids.
type Piece struct {
	Level       string   `json:"level"`
	Index       int      `json:"index"`
	Text        string   `json:"text"` // what is stored, embedded and searched: heading path + body
	Body        string   `json:"body"`
	Chapter     string   `json:"chapter"`
	ContentType string   `json:"content_type"`
	Tags        []string `json:"tags,omitempty"`
	Page        int      `json:"page,omitempty"`
	Parent      int      `json:"parent"` // children: index into Result.Parents
	Oversize    bool     `json:"oversize,omitempty"`
	Hash        string   `json:"hash"` // SHA-256 of Text
	Tokens      int      `json:"tokens"`
}

// Result is a split document.
type Result struct {
	Parents       []Piece  `json:"parents"`
	Children      []Piece  `json:"children"`
	Title         string   `json:"title,omitempty"`
	DocVersion    string   `json:"doc_version,omitempty"`
	EffectiveDate string   `json:"effective_date,omitempty"`
	Tags          []string `json:"tags,omitempty"` // from front matter
	// Meta is every "key: value" pair of the front matter (keys lower-cased): the document's metadata.
	Meta map[string]string `json:"meta,omitempty"`
}

type heading struct {
	level int
	text  string
	tag   string // cleanTag(text), computed once when the heading is read
	kind  string // the content type this heading names ("" when none), as contentType reads it
	line  string // the heading line a chunk's text repeats: "## text"
	toks  int    // text.EstimateTokens(line)
}

// newHeading reads a heading of the given level and text; its line is written into the arena.
func (s *splitter) newHeading(level int, t string) heading {
	a := s.arena
	a.reserve(level + 1 + len(t))
	m := a.mark()
	a.b.WriteString("######"[:level])
	a.b.WriteByte(' ')
	a.b.WriteString(t)
	line := a.since(m)
	return heading{level: level, text: t, tag: cleanTag(t), kind: headingKind(strings.ToLower(t)), line: line, toks: text.EstimateTokens(line)}
}

// headingKind is the first content type whose words the lower-cased heading contains, or "":
// a heading is classified once, when it is read.
func headingKind(lower string) string {
	for _, tw := range typeWords {
		for _, w := range tw.words {
			if strings.Contains(lower, w) {
				return tw.kind
			}
		}
	}
	return ""
}

type blockKind int

const (
	bParagraph blockKind = iota
	bHeading
	bTable
	bCode
)

type block struct {
	kind  blockKind
	level int
	text  string
	page  int
}

// parseBlocks reads markdown into blocks in one pass over its lines, tracking page markers, and hands
// each to use in order (no slice of blocks is built: appending them was a tenth of parsing). Each line
// is classified by its first non-blank byte (a page marker, a code fence, a heading, a table row, a
// blank line or paragraph text), with no regular expressions: they were a fifth of chunking time. A
// paragraph, table or code block whose lines need no trimming is a substring of md, not a copy.
func parseBlocks(md string, use func(block)) {
	page := 0
	var para lineRun
	flushPara := func() {
		if para.n > 0 {
			use(block{kind: bParagraph, text: para.text(md, "\n"), page: page})
			para = lineRun{}
		}
	}
	for pos := 0; pos <= len(md); {
		line, next := nextLine(md, pos)
		if len(line) > 0 && plainStart[line[0]] {
			// most lines: a paragraph line, since only white space, "<", "`", "~", "#" or "|" can
			// start anything else
			para.add(md, pos, line, trimBlanksRight(line))
			pos = next
			continue
		}
		if line == "" { // half the lines of a typical markdown file: nothing else to test
			flushPara()
			pos = next
			continue
		}
		trimmed := strings.TrimSpace(line)
		if n, ok := pageMarker(trimmed); ok {
			flushPara()
			page = n
			pos = next
			continue
		}
		if fence := codeFence(line); fence != "" {
			flushPara()
			end := len(md) // an unclosed block runs to the end
			if next <= len(md) {
				end, next = closingFence(md, next, fence)
			}
			use(block{kind: bCode, text: md[pos:end], page: page})
			pos = next
			continue
		}
		if level, text, ok := atxHeading(line); ok {
			flushPara()
			if text != "" {
				use(block{kind: bHeading, level: level, text: text, page: page})
			}
			pos = next
			continue
		}
		if strings.HasPrefix(trimmed, "|") {
			flushPara()
			var tbl lineRun
			tbl.add(md, pos, line, trimmed)
			for pos = next; pos <= len(md); {
				l, nx := nextLine(md, pos)
				t := strings.TrimSpace(l)
				if !strings.HasPrefix(t, "|") {
					break
				}
				tbl.add(md, pos, l, t)
				pos = nx
			}
			use(block{kind: bTable, text: tbl.text(md, "\n"), page: page})
			continue
		}
		if trimmed == "" {
			flushPara()
		} else {
			para.add(md, pos, line, trimBlanksRight(line))
		}
		pos = next
	}
	flushPara()
}

// closingFence finds the line that closes a code block opened by fence, searching the lines from
// from (a line start): it returns where that line ends and where the line after it starts (as
// nextLine does), or len(md) and past the end when no line closes the block. Only lines whose first
// non-blank character is the fence's are tested, found by searching for that character rather than
// reading every line of code.
func closingFence(md string, from int, fence string) (end, next int) {
	for from <= len(md) {
		h := strings.IndexByte(md[from:], fence[0])
		if h < 0 {
			break
		}
		h += from
		start := strings.LastIndexByte(md[:h], '\n') + 1 // from is a line start, so start >= from
		line, nx := nextLine(md, start)
		if strings.TrimSpace(md[start:h]) == "" && closesFence(line, fence) {
			return start + len(line), nx
		}
		from = nx // the line's first non-blank character is not the fence's, or it does not close
	}
	return len(md), len(md) + 1
}

// trimBlanksRight is strings.TrimRight(s, " \t") without building a cutset per call.
func trimBlanksRight(s string) string {
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// mayHaveVersion is versionRe's cheap first test on lower-cased text, false only when the pattern
// cannot match: no "ver" (or "version") followed by an optional ".", blanks, an optional colon,
// blanks, an optional "v" and a digit. English prose is full of "ver" ("every", "over"), which made
// the pattern itself a few per cent of chunking time. Text with the two runes (?i) also folds to
// ASCII letters (U+017F, U+212A) is left to the pattern.
func mayHaveVersion(lower string) bool {
	if strings.ContainsRune(lower, 0x17F) || strings.ContainsRune(lower, 0x212A) {
		return true
	}
	for rest := lower; ; {
		i := strings.Index(rest, "ver")
		if i < 0 {
			return false
		}
		rest = rest[i+3:]
		if afterVersionWord(rest) || (strings.HasPrefix(rest, "sion") && afterVersionWord(rest[4:])) {
			return true
		}
	}
}

// versionFrom is where in top versionRe's leftmost match can start at the earliest: the first "版本"
// or the first case-insensitive "ver" that afterVersionWord accepts (after "sion" or not). Running the
// pattern from there finds the same leftmost match sooner (it backtracks at every byte before).
// Text with a rune (?i) folds to an ASCII letter is searched whole.
func versionFrom(top string) int {
	if strings.ContainsRune(top, 0x17F) || strings.ContainsRune(top, 0x212A) {
		return 0
	}
	from := strings.Index(top, "版本")
	if from < 0 {
		from = len(top)
	}
	for i := 0; i+3 <= from; i++ {
		if top[i]|0x20 != 'v' || top[i+1]|0x20 != 'e' || top[i+2]|0x20 != 'r' {
			continue
		}
		rest := top[i+3:]
		if afterVersionWord(rest) || (len(rest) >= 4 && strings.EqualFold(rest[:4], "sion") && afterVersionWord(rest[4:])) {
			return i
		}
	}
	if from == len(top) {
		return 0 // no candidate found here: let the pattern decide on the whole text
	}
	return from
}

// afterVersionWord reports whether s starts like what versionRe wants after its keyword (any case):
// \.? \s* [:：]? \s* v? \d (the "." only directly after "ver", which a caller may pass too).
func afterVersionWord(s string) bool {
	s = strings.TrimPrefix(s, ".")
	blanks := func(s string) string { return strings.TrimLeft(s, " \t\n\f\r") }
	s = blanks(s)
	if t, ok := strings.CutPrefix(s, ":"); ok {
		s = t
	} else if t, ok := strings.CutPrefix(s, "："); ok {
		s = t
	}
	s = blanks(s)
	if s != "" && s[0]|0x20 == 'v' {
		s = s[1:]
	}
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// runeCount is utf8.RuneCountInString: eight bytes at a time over ASCII (four times faster on a
// paragraph of English) and two- and three-byte sequences checked inline (the decoder's call per
// character was a fifth of chunking Chinese); the chunker counts every paragraph, sentence and piece.
// Anything else, valid or not, is decoded as RuneCountInString would: an invalid byte is one rune.
func runeCount(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < utf8.RuneSelf:
			for ; i+8 <= len(s); i += 8 {
				w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
					uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
				if w&highBits != 0 {
					break
				}
				n += 8
			}
			for ; i < len(s) && s[i] < utf8.RuneSelf; i++ {
				n++
			}
			continue
		case c >= 0xE1 && c <= 0xEF && c != 0xED && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80:
			// E0 (overlong below A0) and ED (surrogates above 9F) constrain their second byte;
			// every other three-byte lead takes any two continuation bytes
			i += 3
		case c >= 0xC2 && c <= 0xDF && i+1 < len(s) && s[i+1]&0xC0 == 0x80:
			i += 2
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		n++
	}
	return n
}

// closesFence reports a line that closes a code block opened by fence: after trimming, three or more
// of the fence's character and nothing else.
func closesFence(line, fence string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, fence[:3]) && strings.Trim(t, fence[:1]) == ""
}

// plainStart marks the bytes a line can start with only as paragraph text: ASCII other than white
// space and the first characters of a page marker, code fence, heading or table row.
var plainStart = func() (t [256]bool) {
	for c := 0x21; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune("<`~#|", rune(c))
	}
	return t
}()

// nextLine returns the line of md starting at pos (without its "\n") and the position after it;
// past the last line the position is len(md)+1, which ends the callers' loops (strings.Split's last,
// possibly empty, element is a line too).
func nextLine(md string, pos int) (string, int) {
	if i := strings.IndexByte(md[pos:], '\n'); i >= 0 {
		return md[pos : pos+i], pos + i + 1
	}
	return md[pos:], len(md) + 1
}

// lineRun collects the kept part of consecutive lines. While every kept part is its whole line the run
// is the substring md[start:end]; the first trimmed line switches it to a copy.
type lineRun struct {
	n          int
	start, end int
	copied     []string // nil while the run is a substring
}

func (r *lineRun) add(md string, pos int, line, kept string) {
	whole := len(kept) == len(line) && (r.n == 0 || pos == r.end+1)
	switch {
	case r.copied == nil && whole:
		if r.n == 0 {
			r.start = pos
		}
		r.end = pos + len(line)
	default:
		if r.copied == nil {
			if r.n > 0 {
				r.copied = strings.Split(md[r.start:r.end], "\n")
			} else {
				r.copied = []string{}
			}
		}
		r.copied = append(r.copied, kept)
	}
	r.n++
}

func (r *lineRun) text(md, sep string) string {
	if r.copied == nil {
		return md[r.start:r.end]
	}
	return strings.Join(r.copied, sep)
}

// pageMarker reads a trimmed "<!-- page N -->" line (extract.PageMarker).
func pageMarker(t string) (int, bool) {
	const open, closing = "<!-- page ", " -->"
	if len(t) <= len(open)+len(closing) || !strings.HasPrefix(t, open) || !strings.HasSuffix(t, closing) {
		return 0, false
	}
	digits := t[len(open) : len(t)-len(closing)]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, _ := strconv.Atoi(digits) // an overlong number clamps, as it always has
	return n, true
}

// codeFence returns the fence (a run of three or more backticks or tildes after at most three spaces)
// that opens a code block on line, or "".
func codeFence(line string) string {
	i := 0
	for i < 3 && i < len(line) && line[i] == ' ' {
		i++
	}
	if i == len(line) || (line[i] != '`' && line[i] != '~') {
		return ""
	}
	c, j := line[i], i
	for j < len(line) && line[j] == c {
		j++
	}
	if j-i < 3 {
		return ""
	}
	return line[i:j]
}

// atxHeading reads "# text" (one to six #, then a space or tab, after at most three spaces); text loses
// the closing #s and surrounding blanks and may be empty (a heading that names nothing).
func atxHeading(line string) (level int, text string, ok bool) {
	i := 0
	for i < 3 && i < len(line) && line[i] == ' ' {
		i++
	}
	j := i
	for j < len(line) && line[j] == '#' {
		j++
	}
	level = j - i
	if level < 1 || level > 6 || j == len(line) || (line[j] != ' ' && line[j] != '\t') {
		return 0, "", false
	}
	return level, strings.TrimSpace(strings.TrimRight(line[j:], " \t#")), true
}

// section is what every chunk under one heading path shares, computed once when the path changes
// rather than for each chunk: the heading lines, chapter, content type, tags and root identity.
type section struct {
	prefix  string    // the heading lines, each ending in "\n"
	path    []heading // the headings (parents repeat the lines not yet shown)
	chapter string
	kind    string
	tags    []string // shared by the section's pieces; capacity clipped so an append copies
	tokens  int      // EstimateTokens(prefix)
}

// newSection is the section of the current heading stack; its prefix and chapter are written into
// the arena.
func (s *splitter) newSection() *section {
	stack := s.stack
	sec := &section{path: slices.Clone(stack), kind: stackContentType(stack), tags: slices.Clip(stackTags(stack))}
	size := 0
	for _, h := range stack {
		size += len(h.line) + 1 + len(h.text) + len(" > ")
	}
	a := s.arena
	a.reserve(size)
	m := a.mark()
	for _, h := range stack {
		a.b.WriteString(h.line)
		a.b.WriteByte('\n')
		sec.tokens += h.toks + 1 // each line ends in "\n"
	}
	sec.prefix = a.since(m)
	m = a.mark()
	for i, h := range stack {
		if i > 0 {
			a.b.WriteString(" > ")
		}
		a.b.WriteString(h.text)
	}
	sec.chapter = a.since(m)
	return sec
}

// sameRoot reports whether two sections are under the same root heading (the same level and text),
// which parents never cross.
func sameRoot(a, b *section) bool {
	if len(a.path) == 0 || len(b.path) == 0 {
		return len(a.path) == len(b.path)
	}
	return a.path[0].level == b.path[0].level && a.path[0].text == b.path[0].text
}

// stackTags are the cleaned heading texts of the stack, outermost first, without repeats, at most 6;
// nil when there are none.
func stackTags(stack []heading) []string {
	var out []string
	for i, h := range stack {
		if h.tag != "" && !slices.Contains(out, h.tag) && len(out) < 6 {
			if out == nil {
				out = make([]string, 0, min(len(stack)-i, 6))
			}
			out = append(out, h.tag)
		}
	}
	return out
}

// stackContentType is the kind of the innermost heading that names one (content type words in
// typeWords), else general.
func stackContentType(stack []heading) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i].kind != "" {
			return stack[i].kind
		}
	}
	return rag.ContentGeneral
}

// splitter holds the state of one Split.
type splitter struct {
	o          Options
	stack      []heading
	sec        *section // of the current stack; nil after a heading until the next chunk needs it
	buf        []string
	bufSize    measure // of the paragraphs in buf joined by blank lines
	bufPage    int
	children   []Piece
	secs       []*section // each child's section
	runes      []int      // each child's body length in runes
	bodyTokens []int      // each child's EstimateTokens(body)
	arena      *arena     // the pieces' texts and hashes
	// firstHeading is the document's title when the front matter gives none
	firstHeading string
}

// Split chunks md. It is deterministic and never returns a child with empty body.
func Split(md string, o Options) Result {
	o = o.normalized()
	md, res := documentMeta(md)
	s := newSplitter(md, o)
	parseBlocks(md, s.add)
	s.flush()
	if res.Title == "" {
		res.Title = s.firstHeading
	}
	if len(s.children) > 0 { // an empty document keeps nil children ("children": null), as it always has
		res.Children = s.children
	}
	res.Parents = s.parents()
	return res
}

// normalized replaces sizes that cannot work: no child size (the defaults), an overlap as long as a
// child, parents smaller than a child.
func (o Options) normalized() Options {
	if o.ChildChars <= 0 {
		o = DefaultOptions()
	}
	if o.Overlap >= o.ChildChars {
		o.Overlap = o.ChildChars / 4
	}
	if o.ParentChars < o.ChildChars {
		o.ParentChars = o.ChildChars
	}
	return o
}

// documentMeta reads the front matter (returning md without it) and, when the front matter does not
// give them, the version and effective date from the first 2000 bytes.
func documentMeta(md string) (string, Result) {
	var res Result
	md, fm := frontMatter(md)
	res.DocVersion, res.EffectiveDate, res.Tags = fm["version"], fm["effective_date"], tagList(fm["tags"])
	if res.EffectiveDate == "" {
		res.EffectiveDate = fm["date"]
	}
	res.Title = fm["title"]
	if len(fm) > 0 {
		res.Meta = fm
	}
	top := md[:min(len(md), 2000)]
	// The two patterns are case-insensitive alternations, slow to run over text that cannot match:
	// each is tried only when its keyword is there.
	lower := strings.ToLower(top)
	if res.DocVersion == "" && (mayHaveVersion(lower) || strings.Contains(top, "版本")) {
		if m := versionRe.FindStringSubmatch(top[versionFrom(top):]); m != nil {
			res.DocVersion = m[2]
		}
	}
	if res.EffectiveDate == "" && (strings.Contains(lower, "effective") || strings.Contains(top, "生效") ||
		strings.Contains(top, "施行") || strings.Contains(top, "发布日期")) {
		if m := dateRe.FindStringSubmatch(top); m != nil {
			res.EffectiveDate = normDate(m[3])
		}
	}
	return md, res
}

// newSplitter sizes a splitter's slices and arena for md.
func newSplitter(md string, o Options) *splitter {
	s := &splitter{o: o}
	// Room for the children a text of this size usually yields (about one per 260-300 characters with
	// the default sizes, in English and Chinese alike), so the slices of large pieces are not regrown
	// and copied while they fill.
	// The character count is estimated from the first 4 KB (counting all of it cost a tenth of Split).
	sample := md[:min(len(md), 4096)]
	runes := len(md)
	if len(sample) > 0 {
		runes = int(int64(len(md)) * int64(runeCount(sample)) / int64(len(sample)))
	}
	guess := runes*2/(o.ChildChars+o.Overlap+10) + 8
	s.children, s.secs, s.runes, s.bodyTokens = make([]Piece, 0, guess), make([]*section, 0, guess), make([]int, 0, guess), make([]int, 0, guess)
	// Children and parents each repeat the text once, plus heading paths and hashes: about 2.1 (Chinese)
	// to 2.4 (English) times the document. Blocks are capped so a large document is not one huge buffer.
	s.arena = newArena(min(len(md)*5/2+1024, 4<<20))
	return s
}

// add takes the next block of the document: a heading starts a section, a table or code block is a
// child of its own, a paragraph joins the buffer of short ones or, when long, is cut at its sentences.
func (s *splitter) add(b block) {
	switch b.kind {
	case bHeading:
		s.flush()
		for len(s.stack) > 0 && s.stack[len(s.stack)-1].level >= b.level {
			s.stack = s.stack[:len(s.stack)-1]
		}
		s.stack = append(s.stack, s.newHeading(b.level, b.text))
		s.sec = nil
		if s.firstHeading == "" {
			s.firstHeading = b.text
		}
	case bTable, bCode:
		s.flush()
		kind := rag.ContentTable
		if b.kind == bCode {
			kind = rag.ContentCode
		}
		m := measureOf(b.text, len(b.text))
		s.emit(b.text, kind, b.page, m.runes > s.o.ChildChars, m)
	case bParagraph:
		s.addParagraph(b)
	}
}

func (s *splitter) addParagraph(b block) {
	o := s.o
	m := measureOf(b.text, o.ChildChars) // a longer one is cut at its sentences, measured there
	if m.runes > o.ChildChars {
		s.flush()
		for _, piece := range splitLong(b.text, o.ChildChars, o.Overlap) {
			s.emit(piece.text, "", b.page, false, measure{runes: piece.runes, tokens: piece.tokens})
		}
		return
	}
	if s.bufSize.runes > 0 && s.bufSize.runes+2+m.runes > o.ChildChars {
		s.flush()
	}
	if len(s.buf) == 0 {
		s.bufPage = b.page
	} else {
		// a blank line: two characters, and two tokens that end the words on either side
		s.bufSize.runes += 2
		s.bufSize.tokens += 2
	}
	s.buf = append(s.buf, b.text)
	s.bufSize.runes += m.runes
	s.bufSize.tokens += m.tokens
}

func (s *splitter) flush() {
	if len(s.buf) == 0 {
		return
	}
	if len(s.buf) == 1 {
		s.emit(s.buf[0], "", s.bufPage, false, s.bufSize)
	} else {
		s.emitJoined(s.buf, "", s.bufPage, false, s.bufSize)
	}
	s.buf, s.bufSize = s.buf[:0], measure{}
}

// measure is a text's length in runes and its token estimate, each -1 when not yet known.
type measure struct{ runes, tokens int }

// measureOf measures s up to maxRunes runes: past them, the runes are more than maxRunes and the
// tokens unknown.
func measureOf(s string, maxRunes int) measure {
	tokens, runes := text.EstimateTokensAndRunes(s, maxRunes)
	if runes > maxRunes {
		tokens = -1
	}
	return measure{runes: runes, tokens: tokens}
}

// emit adds one child. Its text is the section's heading lines, a blank line and the body; the hash
// and token estimate are computed here, once, and the section's fields are shared.
// size is the body's measure as far as the caller knows it.
func (s *splitter) emit(body, kind string, page int, oversize bool, size measure) {
	s.emitJoined([]string{body}, kind, page, oversize, size)
}

// emitJoined is emit of the paragraphs joined by blank lines, written once: straight into the child's
// text, whose tail is the body (joining first and then prefixing copied every merged chunk twice).
func (s *splitter) emitJoined(paras []string, kind string, page int, oversize bool, bodySize measure) {
	if s.sec == nil {
		s.sec = s.newSection()
	}
	sec := s.sec
	n := len(sec.prefix) + 1
	for _, p := range paras {
		n += len(p) + 2
	}
	a := s.arena
	a.reserve(n)
	m := a.mark()
	if sec.prefix != "" {
		a.b.WriteString(sec.prefix)
		a.b.WriteByte('\n')
	}
	start := a.mark() - m
	for i, p := range paras {
		if i > 0 {
			a.b.WriteString("\n\n")
		}
		a.b.WriteString(p)
	}
	txt := a.since(m)
	body := txt[start:]
	if t := strings.TrimSpace(body); len(t) != len(body) {
		if t == "" {
			return
		}
		// rare: white space at either end of the body; the text is rebuilt around the trimmed body
		body, bodySize, txt = t, measure{-1, -1}, t
		if sec.prefix != "" {
			txt = sec.prefix + "\n" + t
			body = txt[len(sec.prefix)+1:]
		}
	}
	if body == "" {
		return
	}
	runes, bodyTokens := bodySize.runes, bodySize.tokens
	if runes < 0 {
		runes = runeCount(body)
	}
	if bodyTokens < 0 {
		bodyTokens = text.EstimateTokens(body)
	}
	tokens := bodyTokens
	if sec.prefix != "" {
		tokens += sec.tokens + 1 // the estimate is additive across a line end, which always ends a word
	}
	if kind == "" {
		kind = sec.kind
	}
	c := nextPiece(&s.children)
	c.Level, c.Index, c.Text, c.Body, c.Chapter = rag.LevelChild, len(s.children)-1, txt, body, sec.chapter
	c.ContentType, c.Tags, c.Page, c.Oversize, c.Hash, c.Tokens = kind, sec.tags, page, oversize, a.hash(txt), tokens
	s.secs = append(s.secs, sec)
	s.runes = append(s.runes, runes)
	s.bodyTokens = append(s.bodyTokens, bodyTokens)
}

// parents packs adjacent children into parents of at most ParentChars body characters that never
// cross a change of root heading, and points each child at its parent.
func (s *splitter) parents() []Piece {
	var out []Piece
	if len(s.children) > 0 {
		out = make([]Piece, 0, len(s.children)/3+1) // a parent packs three to five children by default
	}
	for i := 0; i < len(s.children); {
		j, size := i, 0
		for j < len(s.children) && sameRoot(s.secs[j], s.secs[i]) {
			n := s.runes[j]
			if j > i && size+n > s.o.ParentChars {
				break
			}
			size += n
			j++
		}
		s.parent(i, j, len(out), nextPiece(&out))
		i = j
	}
	return out
}

// nextPiece adds a zero piece to the end of ps for the caller to fill in place: appending a whole
// Piece copied it with a write barrier over all its pointers whenever the collector was running.
func nextPiece(ps *[]Piece) *Piece {
	if len(*ps) == cap(*ps) {
		*ps = slices.Grow(*ps, 1)
	}
	*ps = (*ps)[:len(*ps)+1]
	return &(*ps)[len(*ps)-1]
}

// parent fills p, the parent at index idx, with children from up to to.
func (s *splitter) parent(from, to, idx int, p *Piece) {
	size := 0
	for k := from; k < to; k++ {
		size += len(s.secs[k].prefix) + len(s.children[k].Body) + 3 // blank line, path, blank line, body, line end
	}
	b := &s.arena.b
	s.arena.reserve(size)
	m := s.arena.mark()
	// The token estimate is summed from the parts already estimated: every part ends at a line end,
	// which ends a word, so the estimate of the whole is the sum plus one per line end written, minus
	// the final one that TrimSpace drops.
	tokens := -1
	var prev []heading
	for k := from; k < to; k++ {
		c := &s.children[k]
		c.Parent = idx
		path := s.secs[k].path
		common := 0
		for common < len(prev) && common < len(path) && prev[common].line == path[common].line {
			common++
		}
		if k > from || len(path) > 0 {
			if b.Len() > m {
				b.WriteString("\n")
				tokens++
			}
			for _, h := range path[common:] {
				b.WriteString(h.line)
				b.WriteString("\n")
				tokens += h.toks + 1
			}
			if len(path[common:]) > 0 {
				b.WriteString("\n")
				tokens++
			}
		}
		b.WriteString(c.Body)
		b.WriteString("\n")
		tokens += s.bodyTokens[k] + 1
		prev = path
	}
	txt := strings.TrimSpace(s.arena.since(m))
	first := &s.children[from]
	p.Level, p.Index, p.Text, p.Body, p.Chapter, p.ContentType = rag.LevelParent, idx, txt, txt, first.Chapter, first.ContentType
	p.Tags, p.Page, p.Hash, p.Tokens, p.Parent = first.Tags, first.Page, s.arena.hash(txt), tokens, -1
}

// sentenceEnd reports whether r ends a sentence: CJK ends always, ASCII ends only before white space
// (next is the rune after r, or -1 at the end of the text).
func sentenceEnd(r, next rune) bool {
	switch r {
	case '。', '！', '？', '；', '…', '\n':
		return true
	case '.', '!', '?':
		return next < 0 || unicode.IsSpace(next)
	}
	return false
}

const (
	highBits = 0x8080808080808080
	lowBits  = 0x0101010101010101
)

// quietPrefix is the length of the longest prefix of s that holds no sentence end: ASCII other than
// ". ! ?" and line ends, read eight bytes at a time, and ideographs (U+4000-U+9FFF, three bytes, none
// of them an end). Byte by byte, this scan was most of the cost of cutting long paragraphs.
func quietPrefix(s string) int {
	i := 0
	for i < len(s) {
		for ; i+8 <= len(s); i += 8 {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if w&highBits != 0 {
				break
			}
			if m := asciiEnders(w); m != 0 {
				return i + bits.TrailingZeros64(m)/8
			}
		}
		if i == len(s) {
			break
		}
		switch c := s[i]; {
		case c < utf8.RuneSelf:
			if c == '.' || c == '!' || c == '?' || c == '\n' {
				return i
			}
			i++
		case c >= 0xE4 && c <= 0xE9 && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80:
			i += 3
		default:
			return i
		}
	}
	return i
}

// asciiEnders marks (high bit of each byte) the bytes of w, eight ASCII bytes, that are ". ! ?" or a
// line end. No byte exceeds 0x7F, so adding 0x7F to a byte never carries: it sets the high bit of
// every byte but a zero one.
func asciiEnders(w uint64) uint64 {
	eq := func(c uint64) uint64 { return ^((w ^ c*lowBits) + 0x7F*lowBits) }
	return (eq('.') | eq('!') | eq('?') | eq('\n')) & highBits
}

// closers may follow a sentence end and belong to the sentence.
const closers = `"'”’」』）)]】》`

// sentences splits s into sentences; concatenating them gives s back. The sentences are substrings of
// s (no copies), found in one pass over its bytes.
func sentences(s string) []string {
	out := make([]string, 0, len(s)/48+1) // a sentence per 50-100 bytes is typical
	start := 0
	for i := 0; i < len(s); {
		i += quietPrefix(s[i:])
		if i == len(s) {
			break
		}
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		j := i + size
		next := rune(-1)
		if j < len(s) && r < utf8.RuneSelf { // only ". ! ?" look at the next rune
			next, _ = utf8.DecodeRuneInString(s[j:])
		}
		if !sentenceEnd(r, next) {
			i = j
			continue
		}
		for j < len(s) {
			c, n := utf8.DecodeRuneInString(s[j:])
			if !strings.ContainsRune(closers, c) {
				break
			}
			j += n
		}
		for j < len(s) {
			c, n := utf8.DecodeRuneInString(s[j:])
			if !unicode.IsSpace(c) {
				break
			}
			j += n
		}
		out = append(out, s[start:j])
		start, i = j, j
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// piece is a cut of a long paragraph with its length in runes and its token estimate (-1: unknown).
type piece struct {
	text   string
	runes  int
	tokens int
}

// sentence is a sentence of a long paragraph (or a part of one longer than the pieces): the substring
// of the paragraph at off, or, cut from text that is not valid UTF-8, a copy (off -1). Its token
// estimate adds up with its neighbours' (a sentence ends in white space or punctuation, which ends a
// word), except for the parts of a sentence cut inside a word: theirs is -1.
type sentence struct {
	text   string
	off    int
	runes  int
	tokens int
}

// splitLong cuts a paragraph longer than max into pieces of at most max characters at sentence ends,
// each starting with the previous piece's trailing sentences up to overlap characters. A sentence
// longer than max is cut at max (preferring a space). Pieces are substrings of p, not copies, and
// each sentence is measured once: a piece's length and estimate are its sentences' sums.
func splitLong(p string, maxChars, overlap int) []piece {
	sents := boundedSentences(p, maxChars)
	pieces := make([]piece, 0, len(p)/max(maxChars-overlap, 1)+1) // a piece adds about maxChars-overlap characters
	cur := make([]sentence, 0, 16)
	curLen := 0
	fresh := 0 // sentences in cur that are not overlap
	for _, s := range sents {
		if curLen+s.runes > maxChars && fresh > 0 {
			pieces = append(pieces, joinPiece(p, cur, curLen))
			k, carried := carryFrom(cur, overlap, maxChars-s.runes)
			cur, curLen, fresh = append(cur[:0], cur[k:]...), carried, 0
		}
		cur = append(cur, s)
		curLen += s.runes
		fresh++
	}
	if fresh > 0 {
		pieces = append(pieces, joinPiece(p, cur, curLen))
	}
	return pieces
}

// carryFrom is where the whole trailing sentences of cur that the next piece repeats start: at most
// overlap characters, and at most room, and how many characters they have.
func carryFrom(cur []sentence, overlap, room int) (int, int) {
	carried := 0
	k := len(cur)
	for k > 0 {
		m := cur[k-1].runes
		if carried+m > overlap || carried+m > room {
			break
		}
		carried += m
		k--
	}
	return k, carried
}

// joinPiece is the sentences of cur, joined and trimmed: a substring of p when they are adjacent
// substrings of it, as they are unless a sentence was cut from invalid UTF-8.
func joinPiece(p string, cur []sentence, runes int) piece {
	joined := ""
	adjacent := cur[0].off >= 0
	for k := 1; k < len(cur) && adjacent; k++ {
		adjacent = cur[k].off == cur[k-1].off+len(cur[k-1].text)
	}
	if adjacent {
		last := cur[len(cur)-1]
		joined = p[cur[0].off : last.off+len(last.text)]
	} else {
		parts := make([]string, len(cur))
		for k, s := range cur {
			parts[k] = s.text
		}
		joined = strings.Join(parts, "")
	}
	tokens := 0
	for _, s := range cur {
		if s.tokens < 0 {
			tokens = -1
			break
		}
		tokens += s.tokens
	}
	t := strings.TrimSpace(joined)
	if len(t) != len(joined) {
		lead := len(joined) - len(strings.TrimLeftFunc(joined, unicode.IsSpace))
		runes -= runeCount(joined[:lead]) + runeCount(joined[lead+len(t):])
		if tokens >= 0 { // white space ends a word: the estimate is additive across it
			tokens -= text.EstimateTokens(joined[:lead]) + text.EstimateTokens(joined[lead+len(t):])
		}
	}
	return piece{text: t, runes: runes, tokens: tokens}
}

// boundedSentences is sentences(p) with their offsets and lengths, each sentence longer than
// maxChars cut into parts of at most maxChars characters, preferring to cut after a space in the
// second half.
func boundedSentences(p string, maxChars int) []sentence {
	all := sentences(p)
	out := make([]sentence, 0, len(all))
	off := 0
	for _, s := range all {
		tokens, n := text.EstimateTokensAndRunes(s, len(s))
		switch {
		case n <= maxChars:
			out = append(out, sentence{text: s, off: off, runes: n, tokens: tokens})
		case utf8.ValidString(s):
			out = cutValid(out, s, off, n, maxChars)
		default:
			out = cutRunes(out, s, maxChars)
		}
		off += len(s)
	}
	return out
}

// cutValid appends the parts of s (valid UTF-8, n runes, at off in the paragraph) that cutRunes
// would make, as substrings: byte offsets of the first maxChars+1 runes stand in for the []rune.
func cutValid(out []sentence, s string, off, n, maxChars int) []sentence {
	pos := make([]int, maxChars+1)
	for n > maxChars {
		i := 0
		for k := range pos {
			pos[k] = i
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		cut := maxChars
		for k := maxChars - 1; k > maxChars/2; k-- {
			if r, _ := utf8.DecodeRuneInString(s[pos[k]:]); unicode.IsSpace(r) {
				cut = k + 1
				break
			}
		}
		out = append(out, sentence{text: s[:pos[cut]], off: off, runes: cut, tokens: -1})
		s, off, n = s[pos[cut]:], off+pos[cut], n-cut
	}
	if n > 0 {
		out = append(out, sentence{text: s, off: off, runes: n, tokens: -1})
	}
	return out
}

// cutRunes cuts s, a sentence longer than maxChars that is not valid UTF-8, through []rune as the
// chunker always has: each invalid byte becomes U+FFFD, so the parts are copies.
func cutRunes(out []sentence, s string, maxChars int) []sentence {
	rs := []rune(s)
	for len(rs) > maxChars {
		cut := maxChars
		for k := maxChars - 1; k > maxChars/2; k-- {
			if unicode.IsSpace(rs[k]) {
				cut = k + 1
				break
			}
		}
		out = append(out, sentence{text: string(rs[:cut]), off: -1, runes: cut, tokens: -1})
		rs = rs[cut:]
	}
	if len(rs) > 0 {
		out = append(out, sentence{text: string(rs), off: -1, runes: len(rs), tokens: -1})
	}
	return out
}
