package chunk

// The chunker as it was before the one-pass rewrite (per-line regular expressions, tagging and hashing
// per chunk), kept as the reference the new one must match chunk for chunk: TestSameAsReference and
// FuzzSameAsReference compare every field of every piece.

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/text"
)

type refHeading struct {
	level int
	text  string
}

type refBlockKind int

const (
	refBParagraph refBlockKind = iota
	refBHeading
	refBTable
	refBCode
)

type refBlock struct {
	kind  refBlockKind
	level int
	text  string
	page  int
}

var (
	refHeadingRe = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$`)
	refPageRe    = regexp.MustCompile(`^<!-- page (\d+) -->$`)
	refFenceRe   = regexp.MustCompile("^ {0,3}(```+|~~~+)")
)

// refParseBlocks reads markdown into blocks, tracking page markers.
func refParseBlocks(md string) []refBlock {
	var out []refBlock
	lines := strings.Split(md, "\n")
	page := 0
	var para []string
	flushPara := func() {
		if len(para) > 0 {
			out = append(out, refBlock{kind: refBParagraph, text: strings.Join(para, "\n"), page: page})
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if m := refPageRe.FindStringSubmatch(trimmed); m != nil {
			flushPara()
			page, _ = strconv.Atoi(m[1])
			continue
		}
		if m := refFenceRe.FindStringSubmatch(line); m != nil {
			flushPara()
			fence := m[1]
			code := []string{line}
			for i++; i < len(lines); i++ {
				code = append(code, lines[i])
				if strings.HasPrefix(strings.TrimSpace(lines[i]), fence[:3]) && strings.Trim(strings.TrimSpace(lines[i]), fence[:1]) == "" {
					break
				}
			}
			out = append(out, refBlock{kind: refBCode, text: strings.Join(code, "\n"), page: page})
			continue
		}
		if m := refHeadingRe.FindStringSubmatch(line); m != nil {
			flushPara()
			if t := strings.TrimSpace(m[2]); t != "" {
				out = append(out, refBlock{kind: refBHeading, level: len(m[1]), text: t, page: page})
			}
			continue
		}
		if strings.HasPrefix(trimmed, "|") {
			flushPara()
			tbl := []string{trimmed}
			for i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "|") {
				i++
				tbl = append(tbl, strings.TrimSpace(lines[i]))
			}
			out = append(out, refBlock{kind: refBTable, text: strings.Join(tbl, "\n"), page: page})
			continue
		}
		if trimmed == "" {
			flushPara()
			continue
		}
		para = append(para, strings.TrimRight(line, " \t"))
	}
	flushPara()
	return out
}

// refSplitter holds the state of one refSplit.
type refSplitter struct {
	o        Options
	stack    []refHeading
	buf      []string
	bufLen   int
	bufPage  int
	children []Piece
	roots    []string // root refHeading identity per child, for parent packing
}

// refSplit chunks md. It is deterministic and never returns a child with empty body.
func refSplit(md string, o Options) Result {
	if o.ChildChars <= 0 {
		o = DefaultOptions()
	}
	if o.Overlap >= o.ChildChars {
		o.Overlap = o.ChildChars / 4
	}
	if o.ParentChars < o.ChildChars {
		o.ParentChars = o.ChildChars
	}
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
	if res.DocVersion == "" {
		if m := versionRe.FindStringSubmatch(top); m != nil {
			res.DocVersion = m[2]
		}
	}
	if res.EffectiveDate == "" {
		if m := dateRe.FindStringSubmatch(top); m != nil {
			res.EffectiveDate = normDate(m[3])
		}
	}

	s := &refSplitter{o: o}
	for _, b := range refParseBlocks(md) {
		switch b.kind {
		case refBHeading:
			s.flush()
			for len(s.stack) > 0 && s.stack[len(s.stack)-1].level >= b.level {
				s.stack = s.stack[:len(s.stack)-1]
			}
			s.stack = append(s.stack, refHeading{b.level, b.text})
			if res.Title == "" {
				res.Title = b.text
			}
		case refBTable, refBCode:
			s.flush()
			kind := rag.ContentTable
			if b.kind == refBCode {
				kind = rag.ContentCode
			}
			s.emit(b.text, kind, b.page, utf8.RuneCountInString(b.text) > o.ChildChars)
		case refBParagraph:
			n := utf8.RuneCountInString(b.text)
			if n > o.ChildChars {
				s.flush()
				for _, piece := range refSplitLong(b.text, o.ChildChars, o.Overlap) {
					s.emit(piece, "", b.page, false)
				}
				continue
			}
			if s.bufLen > 0 && s.bufLen+2+n > o.ChildChars {
				s.flush()
			}
			if len(s.buf) == 0 {
				s.bufPage = b.page
			} else {
				s.bufLen += 2
			}
			s.buf = append(s.buf, b.text)
			s.bufLen += n
		}
	}
	s.flush()
	res.Children = s.children
	res.Parents = s.parents()
	return res
}

func (s *refSplitter) flush() {
	if len(s.buf) == 0 {
		return
	}
	s.emit(strings.Join(s.buf, "\n\n"), "", s.bufPage, false)
	s.buf, s.bufLen = nil, 0
}

func (s *refSplitter) headingLines(from int) string {
	var b strings.Builder
	for _, h := range s.stack[from:] {
		b.WriteString(strings.Repeat("#", h.level) + " " + h.text + "\n")
	}
	return b.String()
}

func (s *refSplitter) emit(body, kind string, page int, oversize bool) {
	body = strings.TrimSpace(body)
	if body == "" {
		return
	}
	prefix := s.headingLines(0)
	txt := body
	if prefix != "" {
		txt = prefix + "\n" + body
	}
	names := make([]string, len(s.stack))
	for i, h := range s.stack {
		names[i] = h.text
	}
	if kind == "" {
		kind = refContentType(names)
	}
	root := ""
	if len(s.stack) > 0 {
		root = strconv.Itoa(s.stack[0].level) + " " + s.stack[0].text
	}
	s.children = append(s.children, Piece{
		Level: rag.LevelChild, Index: len(s.children), Text: txt, Body: body, Chapter: strings.Join(names, " > "),
		ContentType: kind, Tags: refTags(names), Page: page, Oversize: oversize, Hash: refHash(txt), Tokens: text.EstimateTokens(txt),
	})
	s.roots = append(s.roots, root)
}

// parents packs adjacent children into parents of at most ParentChars body characters that never
// cross a change of root refHeading, and points each child at its parent.
func (s *refSplitter) parents() []Piece {
	var out []Piece
	for i := 0; i < len(s.children); {
		j, size := i, 0
		for j < len(s.children) && s.roots[j] == s.roots[i] {
			n := utf8.RuneCountInString(s.children[j].Body)
			if j > i && size+n > s.o.ParentChars {
				break
			}
			size += n
			j++
		}
		out = append(out, s.parent(i, j, len(out)))
		i = j
	}
	return out
}

func (s *refSplitter) parent(from, to, idx int) Piece {
	var b strings.Builder
	var prev []string
	for k := from; k < to; k++ {
		c := &s.children[k]
		c.Parent = idx
		path := refHeadingPath(c.Text, c.Body)
		common := 0
		for common < len(prev) && common < len(path) && prev[common] == path[common] {
			common++
		}
		if k > from || len(path) > 0 {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			for _, h := range path[common:] {
				b.WriteString(h + "\n")
			}
			if len(path[common:]) > 0 {
				b.WriteString("\n")
			}
		}
		b.WriteString(c.Body + "\n")
		prev = path
	}
	txt := strings.TrimSpace(b.String())
	first := s.children[from]
	return Piece{Level: rag.LevelParent, Index: idx, Text: txt, Body: txt, Chapter: first.Chapter, ContentType: first.ContentType,
		Tags: first.Tags, Page: first.Page, Hash: refHash(txt), Tokens: text.EstimateTokens(txt), Parent: -1}
}

// refHeadingPath returns the refHeading lines a child's text starts with.
func refHeadingPath(txt, body string) []string {
	prefix := strings.TrimSuffix(txt, body)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(prefix), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func refHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// refSentenceEnd reports a sentence-ending rune: CJK ends always, ASCII ends only before white space.
func refSentenceEnd(rs []rune, i int) bool {
	r := rs[i]
	switch r {
	case '。', '！', '？', '；', '!', '?', '…':
		if r == '!' || r == '?' {
			return i+1 == len(rs) || unicode.IsSpace(rs[i+1])
		}
		return true
	case '.':
		return i+1 == len(rs) || unicode.IsSpace(rs[i+1])
	case '\n':
		return true
	}
	return false
}

// refClosers may follow a sentence end and belong to the sentence.
const refClosers = `"'”’」』）)]】》`

// refSentences splits s into refSentences; concatenating them gives s back.
func refSentences(s string) []string {
	rs := []rune(s)
	var out []string
	start := 0
	for i := 0; i < len(rs); i++ {
		if !refSentenceEnd(rs, i) {
			continue
		}
		j := i + 1
		for j < len(rs) && strings.ContainsRune(refClosers, rs[j]) {
			j++
		}
		for j < len(rs) && unicode.IsSpace(rs[j]) {
			j++
		}
		out = append(out, string(rs[start:j]))
		start = j
		i = j - 1
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

// refSplitLong cuts a paragraph longer than max into pieces of at most max characters at sentence ends,
// each starting with the previous piece's trailing refSentences up to overlap characters. A sentence
// longer than max is cut at max (preferring a space).
func refSplitLong(p string, maxChars, overlap int) []string {
	var sents []string
	for _, s := range refSentences(p) {
		rs := []rune(s)
		for len(rs) > maxChars {
			cut := maxChars
			for k := maxChars - 1; k > maxChars/2; k-- {
				if unicode.IsSpace(rs[k]) {
					cut = k + 1
					break
				}
			}
			sents = append(sents, string(rs[:cut]))
			rs = rs[cut:]
		}
		if len(rs) > 0 {
			sents = append(sents, string(rs))
		}
	}
	var pieces []string
	var cur []string
	curLen := 0
	fresh := 0 // refSentences in cur that are not overlap
	for _, s := range sents {
		n := utf8.RuneCountInString(s)
		if curLen+n > maxChars && fresh > 0 {
			pieces = append(pieces, strings.TrimSpace(strings.Join(cur, "")))
			// carry whole trailing refSentences up to overlap characters
			var carry []string
			carried := 0
			for k := len(cur) - 1; k >= 0; k-- {
				m := utf8.RuneCountInString(cur[k])
				if carried+m > overlap || carried+m+n > maxChars {
					break
				}
				carry = append([]string{cur[k]}, carry...)
				carried += m
			}
			cur, curLen, fresh = carry, carried, 0
		}
		cur = append(cur, s)
		curLen += n
		fresh++
	}
	if fresh > 0 {
		pieces = append(pieces, strings.TrimSpace(strings.Join(cur, "")))
	}
	return pieces
}

// RefSplit exposes the reference to the external tests (which may import shared/bench for its texts).
var RefSplit = refSplit

// refCleanTag is cleanTag without its fast path for plain headings.
func refCleanTag(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.In(r, unicode.Pi, unicode.Pf) || strings.ContainsRune("\"'`\\\uFF02\uFF07\u201E\u201A", r) || unicode.IsControl(r) || r == 0xFFFD {
			continue
		}
		b.WriteRune(r)
	}
	t := strings.Join(strings.Fields(b.String()), " ")
	if len(t) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = strings.TrimSpace(t[:cut])
	}
	if rag.ValidateTag(t) != nil {
		return ""
	}
	return t
}

// refTags are the cleaned heading texts of the path (at most 6).
func refTags(path []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range path {
		if t := refCleanTag(h); t != "" && !seen[t] && len(out) < 6 {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// refContentType classifies by the innermost heading that names a kind.
func refContentType(path []string) string {
	for i := len(path) - 1; i >= 0; i-- {
		h := strings.ToLower(path[i])
		for _, tw := range typeWords {
			for _, w := range tw.words {
				if strings.Contains(h, w) {
					return tw.kind
				}
			}
		}
	}
	return rag.ContentGeneral
}
