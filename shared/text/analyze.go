package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Stopwords is Lucene's English stop word set (EnglishAnalyzer's default).
var Stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with") {
		Stopwords[w] = true
	}
}

// joiner characters may sit inside an identifier: "server.shutdown", "v1.2.3", "HTTP/2", "Qwen2.5",
// "¥0.008", "snake_case", "x-ray".
func joiner(r rune) bool {
	switch r {
	case '.', '_', '-', '/', '¥', '$', '€', '£', '%', '+', '#', ':':
		return true
	}
	return false
}

// Fold normalises one rune for matching: full-width ASCII to ASCII, the ideographic space to a space,
// lower case.
func Fold(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E:
		r -= 0xFEE0
	case r == 0x3000:
		r = ' '
	case r == 0xFFE5: // full-width yen
		r = '¥'
	}
	return unicode.ToLower(r)
}

// Analyze is the one analyzer every keyword path uses (BM25 indexing and queries, lexical rerank and
// coverage). Latin words are lower-cased, stop words dropped and Porter-stemmed ("'s" removed first);
// identifiers with inner punctuation are kept whole as well as split into their stemmed parts; CJK runs
// become overlapping character bigrams, and a lone CJK character is kept as a unigram. Hyphens only
// split.
func Analyze(s string) []string {
	var out []string
	var a Analyzer
	a.Each(s, func(t string, _ int32) { out = append(out, t) })
	return out
}

// Analyzer is Analyze for many texts in a row. One made by NewAnalyzer numbers the distinct terms it
// produces and remembers the term of every plain word and CJK bigram it has read, so a word seen
// before costs one map lookup instead of a stem, an allocation and the caller's own lookups (an index
// build analyzes the same few thousand words millions of times). Its terms are exactly Analyze's. The
// zero value remembers nothing and numbers nothing. Memory grows with the vocabulary read: use one per
// batch. Not safe for concurrent use: one per goroutine.
type Analyzer struct {
	remember bool
	words    map[string]int32 // folded plain word -> its term's number, -1 for a stop word
	grams    map[string]int32 // CJK unigram or bigram -> its number
	ids      map[string]int32 // term -> number
	terms    []string         // number -> term
	word     []byte           // the word being read, folded, as UTF-8
	join     bool             // the word holds a joiner or an apostrophe (the general rules apply)
	cjk      []rune           // the CJK run being read
	buf      []byte
}

// NewAnalyzer returns an Analyzer that numbers and remembers terms.
func NewAnalyzer() *Analyzer {
	return &Analyzer{remember: true, words: map[string]int32{}, grams: map[string]int32{}, ids: map[string]int32{}}
}

// Each calls fn with each term of s, in Analyze's order, and the term's number: in one Analyzer from
// NewAnalyzer the same term always has the same number, counting up from 0 in order of first
// appearance (so a caller can count terms in slices, not maps); -1 from the zero value.
func (a *Analyzer) Each(s string, fn func(term string, id int32)) {
	a.word, a.join, a.cjk = a.word[:0], false, a.cjk[:0]
	for _, r := range s {
		r = Fold(r)
		switch {
		case IsCJK(r):
			a.flushWord(fn)
			a.cjk = append(a.cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || joiner(r) || r == '\'' || r == '’':
			a.flushCJK(fn)
			if joiner(r) || r == '\'' || r == '’' {
				a.join = true
			}
			a.word = utf8.AppendRune(a.word, r)
		default:
			a.flushCJK(fn)
			a.flushWord(fn)
		}
	}
	a.flushCJK(fn)
	a.flushWord(fn)
}

// Term returns the term numbered id by Each.
func (a *Analyzer) Term(id int32) string { return a.terms[id] }

// Terms is how many distinct terms Each has numbered.
func (a *Analyzer) Terms() int { return len(a.terms) }

func (a *Analyzer) number(t string) int32 {
	if !a.remember {
		return -1
	}
	if id, ok := a.ids[t]; ok {
		return id
	}
	id := int32(len(a.terms))
	a.ids[t] = id
	a.terms = append(a.terms, t)
	return id
}

func (a *Analyzer) flushCJK(fn func(string, int32)) {
	switch len(a.cjk) {
	case 0:
		return
	case 1:
		a.gram(a.cjk[0:1], fn)
	default:
		for i := 0; i+1 < len(a.cjk); i++ {
			a.gram(a.cjk[i:i+2], fn)
		}
	}
	a.cjk = a.cjk[:0]
}

// gram emits the term of one or two CJK runes, from memory when it has been seen.
func (a *Analyzer) gram(rs []rune, fn func(string, int32)) {
	a.buf = a.buf[:0]
	for _, r := range rs {
		a.buf = utf8.AppendRune(a.buf, r)
	}
	if !a.remember {
		fn(string(a.buf), -1)
		return
	}
	if id, ok := a.grams[string(a.buf)]; ok {
		fn(a.terms[id], id)
		return
	}
	t := string(a.buf)
	id := a.number(t)
	a.grams[t] = id
	fn(t, id)
}

func (a *Analyzer) flushWord(fn func(string, int32)) {
	if len(a.word) == 0 {
		return
	}
	switch {
	case a.join:
		// identifiers, possessives and trimmed punctuation: the general rules
		for _, t := range appendWord(nil, []rune(string(a.word))) {
			fn(t, a.number(t))
		}
	case a.remember:
		id, ok := a.words[string(a.word)]
		if !ok {
			id = -1
			w := string(a.word)
			if !Stopwords[w] {
				id = a.number(Stem(w))
			}
			a.words[w] = id
		}
		if id >= 0 {
			fn(a.terms[id], id)
		}
	default:
		// a plain word: appendWord would find one part equal to the word and no trimming to do
		if w := string(a.word); !Stopwords[w] {
			fn(Stem(w), -1)
		}
	}
	a.word, a.join = a.word[:0], false
}

// appendWord adds the terms of one raw token.
func appendWord(out []string, raw []rune) []string {
	// trim punctuation that cannot be part of a term at either end (currency may lead, % + # may trail)
	for len(raw) > 0 && (joiner(raw[0]) && !strings.ContainsRune("¥$€£", raw[0]) || raw[0] == '\'' || raw[0] == '’') {
		raw = raw[1:]
	}
	for len(raw) > 0 && (joiner(raw[len(raw)-1]) && !strings.ContainsRune("%+#", raw[len(raw)-1]) || raw[len(raw)-1] == '\'' || raw[len(raw)-1] == '’') {
		raw = raw[:len(raw)-1]
	}
	if len(raw) == 0 {
		return out
	}
	w := string(raw)
	w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s") // English possessive
	parts := strings.FieldsFunc(w, func(r rune) bool { return joiner(r) || r == '\'' || r == '’' })
	if len(parts) == 0 {
		return out
	}
	if len(parts) == 1 && parts[0] == w {
		if !Stopwords[w] {
			out = append(out, Stem(w))
		}
		return out
	}
	// the identifier whole ("v1.2.3", "server.shutdown", "¥0.008", "HTTP/2"); hyphenated words are only
	// split, as Lucene does: "long-term" or "il-6" as one term splits their evidence (SciFact train
	// nDCG@10 0.696 with hyphen wholes, 0.702 without)
	if !strings.ContainsAny(w, "'’") && strings.ContainsFunc(w, func(r rune) bool { return joiner(r) && r != '-' }) {
		out = append(out, w)
	}
	for _, p := range parts {
		if !Stopwords[p] {
			out = append(out, Stem(p))
		}
	}
	return out
}
