// Package claims checks an answer against the passages it cites: each cited sentence (a claim) must
// hold its numbers, dates and names in the line of the source it is about, share its content terms and
// not say the opposite. Check is its entry point; Supported summarises the result for the confidence.
package claims

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/answer/reader"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/text"
)

// Claim is one sentence of an answer that cites passages, checked against them: Supported when it
// quotes a cited passage, or when every number, date and amount it states is in the line (or table
// cell) of a cited passage it is about, in the same units, every name it states is in one, enough of
// its content terms are, and that line does not say the opposite. Reason says what was found missing
// or contradicted (or "supported").
type Claim struct {
	Sentence  string `json:"sentence"`
	Citations []int  `json:"citations"`
	Supported bool   `json:"supported"`
	Reason    string `json:"reason"`
	// NumberMissing says a number, date or amount of the sentence is in none of its cited passages:
	// such an answer is never HIGH.
	NumberMissing bool `json:"-"`
}

// ClaimTermShare is the share of a claim's content terms (idf-free, distinct) that must appear in its
// cited passages: a paraphrase keeps most of them, a sentence about something else keeps few.
const ClaimTermShare = 0.5

// Check splits answer into sentences and checks each one carrying a valid [n] against the
// passages it cites (ev[n-1]); sentences without a citation are not claims about the sources and are
// left out, as is the offline notice. The result is in answer order; empty when nothing is cited.
func Check(answer string, ev []rank.Evidence) []Claim {
	body := reader.WithoutNotice(answer)
	sentences := Sentences(body)
	out := []Claim{}
	cache := map[int]*passageFacts{}
	var prevCites []int
	var prevRows map[string]bool
	for _, s := range sentences {
		var cites []int
		for _, m := range lang.CiteRe.FindAllStringSubmatch(s, -1) {
			n, _ := strconv.Atoi(m[1])
			if n >= 1 && n <= len(ev) && !containsInt(cites, n) {
				cites = append(cites, n)
			}
		}
		if len(cites) == 0 {
			continue
		}
		plain := claimText(s)
		c := Claim{Sentence: plain, Citations: cites}
		var facts []*passageFacts
		for _, n := range cites {
			if cache[n] == nil {
				cache[n] = newPassageFacts(ev[n-1])
			}
			facts = append(facts, cache[n])
		}
		// "It supports 25 users [1]." after "The Team plan costs $49 per month [1].": a claim that names
		// no row is about the row the claim before it, citing the same, named
		var rows map[string]bool
		if slices.Equal(cites, prevCites) {
			rows = prevRows
		}
		c.Supported, c.Reason, c.NumberMissing, prevRows = checkClaimAfter(plain, cites, facts, true, rows)
		prevCites = cites
		out = append(out, c)
	}
	return out
}

// claimText is a claim's sentence as the reader sees it without its [n] markers: one line, no list
// marker, and no space left before the punctuation the marker stood before ("per month.").
func claimText(s string) string {
	plain := strings.TrimSpace(strings.TrimLeft(lang.OneLine(lang.CiteRe.ReplaceAllString(s, "")), "-*• "))
	return reSpacePunct.ReplaceAllString(plain, "$1")
}

var reSpacePunct = regexp.MustCompile(`\s+([.,;:!?。，；：！？、）)])`)

// Sentences splits an answer into sentences, attaching a fragment made only of citations
// ("... per year. [1]") to the sentence before it.
func Sentences(body string) []string {
	var out []string
	for _, s := range lang.SplitSentences(body) {
		rest := strings.TrimSpace(lang.CiteRe.ReplaceAllString(s, ""))
		if strings.Trim(rest, " .。,，;；-*") == "" {
			if len(out) > 0 && lang.CiteRe.MatchString(s) {
				out[len(out)-1] += " " + strings.TrimSpace(s)
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// passageFacts is what a cited passage holds, computed once per answer: its numbers, dates, terms
// and text, and per line (sentence, or table row read with its header) the same, so that a claim's
// number is looked for in the line the claim is about rather than anywhere in the passage.
type passageFacts struct {
	all  string // the passage's text, chapter and file name
	norm string // normVerbatim, for quotes
	// the rest is read on the first claim that is not a quote (load): an extractive answer quotes,
	// and reading every line of its passages would be paid for nothing
	loaded  bool
	numbers lang.NumberSet
	dates   []lang.Date
	terms   map[string]bool
	lower   string // folded, for names
	lines   []lineFacts
	weight  map[string]float64 // a term's weight in this passage: rarer lines, more telling
}

type lineFacts struct {
	numbers lang.NumberSet
	dates   []lang.Date
	terms   map[string]bool
	// key holds the terms of a table row's key cell (its first cell that is not a number); nil for
	// prose. A claim is about a row only when it names that row's key.
	key map[string]bool
	// scale says the line or its header states a scale ("revenue (kUSD)", "万元"): a claim's "515
	// thousand" may be its "515".
	scale bool
	// header says the line is a table's header row: naming its first column ("plan") names no row.
	header bool
	// bare says the line holds numbers and at most one word of its own, fewer than its numbers (a
	// table row whose layout was lost: "低于 95.0% 50%").
	bare bool
	// text is the line, folded; for a table row under a header, cells are its cells and heads the
	// header's (folded), keyCol the index of its key cell: a number is read in its column.
	text         string
	cells, heads []string
	keyCol       int
}

var reScale = regexp.MustCompile(`(?i)\b(thousands?|millions?|billions?|mn|bn)\b|\(k[a-z]{0,3}\)|\bk(usd|eur|gbp|cny)\b|万|亿|千`)

func newPassageFacts(e rank.Evidence) *passageFacts {
	all := e.Text + "\n" + e.ChildText + "\n" + e.Chapter + "\n" + e.FileName
	return &passageFacts{all: all, norm: normVerbatim(all)}
}

// load reads the passage's numbers, dates, terms and lines, once.
func (f *passageFacts) load() {
	if f.loaded {
		return
	}
	f.loaded = true
	all := f.all
	folded := lang.FoldLower(all)
	ds := lang.ExtractDates(folded)
	f.numbers, f.dates, f.terms, f.lower, f.weight = datedNumbers(folded, ds), ds, map[string]bool{}, folded, map[string]float64{}
	for _, t := range text.Analyze(all) {
		f.terms[t] = true
	}
	for _, c := range lang.CurrencyCodes(folded) {
		f.terms[c] = true
	}
	header := ""   // a table row's context is its header: "| Team | 49 |" is about "monthly price"
	previous := "" // the table row before this line
	wordLine := "" // the last line of words without numbers: the header of a table whose pipes were lost (PDF)
	for _, l := range lang.SplitSentences(all) {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		lf := lineFacts{terms: map[string]bool{}}
		context := ""
		if strings.HasPrefix(t, "|") {
			cells := rowCells(t)
			if isSeparatorRow(cells) {
				// the row above a separator is a header, also when another table ends right above it
				if n := len(f.lines) - 1; n >= 0 && f.lines[n].key != nil && previous != "" {
					header, f.lines[n].header = previous, true
				}
				continue
			}
			if header == "" {
				header, lf.header = t, true
			} else {
				context = header
				lf.cells, lf.heads = rowCells(lang.FoldLower(t)), rowCells(lang.FoldLower(header))
			}
			lf.key, lf.keyCol = rowKeyTerms(cells)
			previous = t
		} else {
			header, previous = "", ""
		}
		lt := lang.FoldLower(t)
		lf.text = lt // its clauses' negations are read only for the lines a claim is about (clausesOf)
		lf.dates = lang.ExtractDates(lt)
		lf.numbers = datedNumbers(lt, lf.dates)
		own := text.Analyze(t)
		words := len(contentOf(own))
		if lf.key == nil && len(lf.numbers) > 0 && words <= 1 && words < len(lf.numbers) {
			// a table row keeps its header too: "| 99.0% 至 99.9% | 10% |" is about 月可用性 and 返还比例
			context, lf.bare = strings.TrimSpace(context+"\n"+wordLine), true
		}
		if len(lf.numbers) == 0 && words > 0 && lf.key == nil {
			wordLine = t
		}
		for _, x := range own {
			lf.terms[x] = true
		}
		if context != "" {
			for _, x := range text.Analyze(context) {
				lf.terms[x] = true
			}
		}
		for _, c := range lang.CurrencyCodes(lt + " " + lang.FoldLower(context)) {
			lf.terms[c] = true
		}
		lf.scale = reScale.MatchString(t + " " + context)
		f.lines = append(f.lines, lf)
	}
	f.weigh()
}

// weigh sets each term's weight in the passage from the share of lines holding it.
func (f *passageFacts) weigh() {
	df := map[string]int{}
	for _, l := range f.lines {
		for x := range l.terms {
			df[x]++
		}
	}
	for x, n := range df {
		f.weight[x] = math.Log(1 + float64(len(f.lines))/float64(n))
	}
}

// datedNumbers is the numbers of folded text s outside its dates, plus the dates' years: "in 2026" is
// stated by "2026-03-05", "5 yuan" is not.
func datedNumbers(s string, ds []lang.Date) lang.NumberSet {
	set := lang.NumbersOf(lang.MaskDates(s, ds))
	for _, d := range ds {
		if d.Y > 0 {
			set[float64(d.Y)] = true
		}
	}
	return set
}

// rowCells splits a markdown table row into its trimmed cells.
func rowCells(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(row), "|"), "|")
	cells := strings.Split(row, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func isSeparatorRow(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" {
			return false
		}
	}
	return true
}

// rowKeyTerms are the terms of a row's first cell that is not a number (nil when there is none), and
// that cell's index.
func rowKeyTerms(cells []string) (map[string]bool, int) {
	for i, c := range cells {
		ts := text.Analyze(c)
		if len(contentOf(ts)) == 0 {
			continue
		}
		key := map[string]bool{}
		for _, t := range ts {
			key[t] = true
		}
		return key, i
	}
	return nil, -1
}

// aboutLines returns the lines of the passage a claim (or the clause of it holding a fact) is about:
// when the claim names a table row's whole key ("sick leave", "Team"), those rows and the prose lines
// that name the same key; otherwise every prose line and the rows whose key shares a term with the
// claim (rows named in the fact's clause before it, lead, first). Of those, the ones that share the
// most weighted clause terms are returned, ties broken by
// the whole claim's content terms (whole) and then kept.
func (f *passageFacts) aboutLines(claimTerms map[string]bool, lead, clause, whole []string) []int {
	// the rows named before the fact in its own clause ("Business" in "..., and the Business plan
	// costs $199"), else those the claim names
	names := map[string]bool{}
	for _, t := range lead {
		names[t] = true
	}
	var named []map[string]bool
	for range 2 {
		for _, l := range f.lines {
			if l.key != nil && !l.header && termSubset(l.key, names) {
				named = append(named, l.key)
			}
		}
		if len(named) > 0 {
			break
		}
		names = claimTerms
	}
	var cand []int
	for i, l := range f.lines {
		switch {
		case len(named) > 0 && l.key != nil:
			if !l.header && termSubset(l.key, names) {
				cand = append(cand, i)
			}
		case len(named) > 0:
			for _, k := range named {
				if termSubset(k, l.terms) {
					cand = append(cand, i)
					break
				}
			}
		case l.key == nil || termsOverlap(l.key, claimTerms):
			cand = append(cand, i)
		}
	}
	return f.bestLines(f.bestLines(cand, clause), whole)
}

// bestLines keeps the lines of cand sharing the most weighted terms with terms (ties kept).
func (f *passageFacts) bestLines(cand []int, terms []string) []int {
	scores := make([]float64, len(cand))
	best := 0.0
	for j, i := range cand {
		for _, t := range terms {
			if f.lines[i].terms[t] {
				scores[j] += f.weight[t]
			}
		}
		best = max(best, scores[j])
	}
	var out []int
	for j, i := range cand {
		if scores[j] >= best*(1-1e-9) {
			out = append(out, i)
		}
	}
	return out
}

func termSubset(a, b map[string]bool) bool {
	for t := range a {
		if !b[t] {
			return false
		}
	}
	return len(a) > 0
}

func termsOverlap(a, b map[string]bool) bool {
	for t := range a {
		if b[t] {
			return true
		}
	}
	return false
}

// claimFacts is what one claim states, read once: its terms, dates and numbers, each fact with the
// content terms of the clause it sits in.
type claimFacts struct {
	all     map[string]bool // every analyzed term, numbers too (row keys may be numbers: "2026-Q2")
	terms   []string        // content terms (contentTerms)
	dates   []factIn[lang.Date]
	numbers []factIn[lang.Number]
	folded  string // the claim, folded
}

type factIn[T any] struct {
	fact T
	// clause holds the content terms of the fact's clause (the claim's when the clause has none), lead
	// those of the clause before the fact: the row a fact is about is named before it ("the Business
	// plan costs $199"), a key-like word after it is usually about something else ("email within 2
	// business days").
	clause, lead []string
	// units is what the fact is counted in: its time unit and currency as written next to it, and the
	// period its clause states (numbers only).
	units lang.Units
}

func readClaim(s string) claimFacts {
	folded := lang.FoldLower(s)
	ds := lang.ExtractDates(folded)
	rest := lang.MaskDates(folded, ds)
	c := claimFacts{all: map[string]bool{}, terms: contentTerms(rest), folded: folded}
	for _, t := range text.Analyze(s) {
		c.all[t] = true
	}
	bounds := []int{0}
	for _, m := range lang.ReClause.FindAllStringIndex(rest, -1) {
		_, n := utf8.DecodeRuneInString(rest[m[0]:])
		bounds = append(bounds, m[0]+n)
	}
	bounds = append(bounds, len(rest))
	clauseAt := func(pos int) ([]string, []string) {
		for i := 1; i < len(bounds); i++ {
			if pos < bounds[i] || i == len(bounds)-1 {
				lead := contentTerms(rest[bounds[i-1]:max(bounds[i-1], pos)])
				if ts := contentTerms(rest[bounds[i-1]:bounds[i]]); len(ts) > 0 {
					return ts, lead
				}
				return c.terms, lead
			}
		}
		return c.terms, nil
	}
	for _, d := range ds {
		clause, lead := clauseAt(d.Start)
		c.dates = append(c.dates, factIn[lang.Date]{d, clause, lead, lang.Units{}})
	}
	for i := 1; i < len(bounds); i++ {
		part, off := rest[bounds[i-1]:bounds[i]], 0
		for _, n := range lang.ExtractNumbers(part) {
			if k := strings.Index(part[off:], n.Raw); k >= 0 {
				off += k
			}
			clause, lead := clauseAt(bounds[i-1] + off)
			u := lang.AdjacentUnits(part[:off], part[min(len(part), off+len(n.Raw)):])
			u.Period = lang.PeriodOf(part)
			c.numbers = append(c.numbers, factIn[lang.Number]{n, clause, lead, u})
		}
	}
	return c
}

// checkClaimQuotes checks one sentence against its cited passages. A sentence found word for word in
// one of them is supported (unless quotes is false: the tests measure the other checks on sentences
// known to be right). Otherwise every date and number (normalised) must be in a line of a cited
// passage that the sentence is about (in a table row, in a column its clause names, when it names
// one) and counted in the same units, every name (see claimNames) in a cited passage, at least
// ClaimTermShare of its content terms too, and the line it is about must not say the opposite.
func checkClaimQuotes(s string, cites []int, facts []*passageFacts, quotes bool) (bool, string, bool) {
	ok, why, missing, _ := checkClaimAfter(s, cites, facts, quotes, nil)
	return ok, why, missing
}

// checkClaimAfter is checkClaimQuotes for a claim following one that named the table rows prev (their
// key terms; nil when none): a claim naming no row is read as naming those. It also returns the rows
// this claim is about, for the next one.
func checkClaimAfter(s string, cites []int, facts []*passageFacts, quotes bool, prev map[string]bool) (ok bool, why string, missing bool, rows map[string]bool) {
	where := citeList(cites)
	if quotes && claimQuoted(s, facts) {
		return true, "supported", false, nil
	}
	for _, f := range facts {
		f.load()
	}
	c := readClaim(s)
	rows = namedRows(c.all, facts)
	if len(rows) == 0 && len(prev) > 0 {
		for t := range prev {
			c.all[t] = true
		}
		rows = prev
	}
	ok, why, missing = checkFacts(s, c, where, cites, facts)
	return ok, why, missing, rows
}

// namedRows is the union of the key terms of the table rows of facts whose whole key terms names.
func namedRows(terms map[string]bool, facts []*passageFacts) map[string]bool {
	var out map[string]bool
	for _, f := range facts {
		for _, l := range f.lines {
			if l.key == nil || l.header || !termSubset(l.key, terms) {
				continue
			}
			if out == nil {
				out = map[string]bool{}
			}
			for t := range l.key {
				out[t] = true
			}
		}
	}
	return out
}

// checkFacts checks claim s, read as c, fact by fact against its cited passages (loaded).
func checkFacts(s string, c claimFacts, where string, cites []int, facts []*passageFacts) (bool, string, bool) {
	for _, d := range c.dates {
		found, about := false, false
		for _, f := range facts {
			if !hasDate(f.dates, d.fact) {
				continue
			}
			found = true
			for _, i := range f.aboutLines(c.all, d.lead, d.clause, c.terms) {
				if hasDate(f.lines[i].dates, d.fact) {
					about = true
				}
			}
		}
		if msg := factMessage(d.fact.Raw, where, found, about); msg != "" {
			return false, msg, true
		}
	}
	if msg := checkNumbers(c, where, facts); msg != "" {
		return false, msg, true
	}
	for _, name := range lang.ClaimNames(s) {
		found := false
		for _, f := range facts {
			if f.hasName(name) {
				found = true
				break
			}
		}
		if !found {
			return false, fmt.Sprintf("%q is not in %s", name, where), false
		}
	}
	if len(c.terms) == 0 {
		return true, "supported", false
	}
	have := 0
	for _, t := range c.terms {
		for _, f := range facts {
			if f.hasTerm(t) {
				have++
				break
			}
		}
	}
	if float64(have)/float64(len(c.terms)) < ClaimTermShare {
		return false, fmt.Sprintf("only %d of its %d content terms are in %s", have, len(c.terms), where), false
	}
	if k := opposed(lang.FoldLower(s), c.terms, facts); k >= 0 {
		return false, fmt.Sprintf("%s says the opposite", citeList(cites[k:k+1])), false
	}
	return true, "supported", false
}

// numbersTogether reports whether a bare line of a cited passage (numbers, hardly a word) holds all
// of the claim's numbers, two or more, and is one of the bare lines that share the most of the
// claim's terms: a table whose layout the PDF lost ("99.0% 至 99.9% 10%") is recognised by its
// numbers when its words are far above it, and "低于 95.0%" is the row that says 低于. So is a table
// row when the claim names no row's key. A line of words is not: "一" and "3" together are in too
// many sentences.
func numbersTogether(ns []factIn[lang.Number], terms []string, all map[string]bool, facts []*passageFacts) bool {
	if len(ns) < 2 {
		return false
	}
	for _, f := range facts {
		var bare []int
		named := false
		for i, l := range f.lines {
			if l.bare {
				bare = append(bare, i)
			}
			named = named || l.key != nil && !l.header && termSubset(l.key, all)
		}
		if !named { // "the plan for 25 users costs $49": a row is known by its cells too
			for i, l := range f.lines {
				if l.key != nil {
					bare = append(bare, i)
				}
			}
		}
	lines:
		for _, i := range f.bestLines(bare, terms) {
			for _, n := range ns {
				if !f.lines[i].numbers.Has(n.fact.Value) {
					continue lines
				}
			}
			return true
		}
	}
	return false
}

// factMessage says why a date or number is not supported ("" when it is).
func factMessage(raw, where string, found, about bool) string {
	raw = strings.TrimSpace(raw)
	switch {
	case !found:
		return fmt.Sprintf("%s is not in %s", raw, where)
	case !about:
		return fmt.Sprintf("%s is in %s, but not in the line the sentence is about", raw, where)
	}
	return ""
}

func hasDate(ds []lang.Date, c lang.Date) bool {
	for _, d := range ds {
		if c.Matches(d) {
			return true
		}
	}
	return false
}

// hasTerm reports whether the passage holds term t, or a term sharing its first five or more letters
// ("month" and "monthli").
func (f *passageFacts) hasTerm(t string) bool {
	if f.terms[t] {
		return true
	}
	if len(t) < 5 || lang.HasCJK(t) {
		return false
	}
	for x := range f.terms {
		n := min(len(x), len(t))
		if n >= 5 && x[:n] == t[:n] {
			return true
		}
	}
	return false
}

// hasName reports whether the passage names name: as written (folded), or, for a word, by its stem
// ("Employees" in "each employee").
func (f *passageFacts) hasName(name string) bool {
	if strings.Contains(f.lower, lang.FoldLower(name)) {
		return true
	}
	ts := text.Analyze(name)
	for _, t := range ts {
		if !f.hasTerm(t) {
			return false
		}
	}
	return len(ts) > 0 && !lang.HasCJK(name)
}

// claimQuoted reports whether s, normalised (normVerbatim) and long enough to mean something, is found
// word for word in a passage: a quote is supported whatever the line structure around it.
func claimQuoted(s string, facts []*passageFacts) bool {
	q := normVerbatim(s)
	if utf8.RuneCountInString(q) < 6 {
		return false
	}
	for _, f := range facts {
		for off := 0; ; {
			i := strings.Index(f.norm[off:], q)
			if i < 0 {
				break
			}
			i += off
			before, _ := utf8.DecodeLastRuneInString(f.norm[:i])
			after, _ := utf8.DecodeRuneInString(f.norm[i+len(q):])
			first, _ := utf8.DecodeRuneInString(q)
			last, _ := utf8.DecodeLastRuneInString(q)
			if !(latinRune(before) && latinRune(first)) && !(latinRune(after) && latinRune(last)) {
				return true
			}
			off = i + 1
		}
	}
	return false
}

func latinRune(r rune) bool {
	return r != utf8.RuneError && !text.IsCJK(r) && unicode.IsLetter(r) || unicode.IsDigit(r)
}

// normVerbatim folds s and keeps its letters and digits, one space between Latin words and none
// next to CJK: the same text with other spacing, punctuation or markup compares equal.
func normVerbatim(s string) string {
	var b strings.Builder
	sep := false
	var prev rune
	for _, r := range lang.FoldLower(s) {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			sep = true
			continue
		}
		if sep && b.Len() > 0 && !text.IsCJK(prev) && !text.IsCJK(r) {
			b.WriteByte(' ')
		}
		sep = false
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// contentTerms are a text's distinct analyzed terms less numbers (checked on their own) and
// one-character terms, with currency symbols read as their codes: "$49" is the term "usd".
func contentTerms(s string) []string {
	out := contentOf(text.Analyze(s))
	for _, c := range lang.CurrencyCodes(lang.FoldLower(s)) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// contentOf keeps the distinct content terms of analyzed terms.
func contentOf(ts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		t = strings.TrimLeft(t, "$€£¥")
		if seen[t] || utf8.RuneCountInString(t) < 2 || isNumeric(t) {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

func isNumeric(t string) bool {
	for _, r := range t {
		if !(r >= '0' && r <= '9' || strings.ContainsRune(".,%-/:+#", r)) {
			return false
		}
	}
	return true
}

func citeList(cites []int) string {
	var parts []string
	for _, n := range cites {
		parts = append(parts, fmt.Sprintf("[%d]", n))
	}
	return "source " + strings.Join(parts, "")
}

func containsInt(xs []int, v int) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// Supported is the share of claims that are supported (1 when there are none: nothing was
// claimed about the sources, so nothing was found unsupported).
func Supported(cs []Claim) float64 {
	if len(cs) == 0 {
		return 1
	}
	n := 0
	for _, c := range cs {
		if c.Supported {
			n++
		}
	}
	return float64(n) / float64(len(cs))
}

// numberFits says why number n of a claim, found in line l, is not the line's fact ("" when it is): in a
// table row, the clause names a column ("$25 per month" names the monthly price) and n is in another
// (25 is the users cell); or the line counts n in another unit of the same kind ("10 weeks", the line
// says days; "€49", the column is USD; "per year", the column is monthly).
func (l lineFacts) numberFits(n factIn[lang.Number], claim string) string {
	if l.heads == nil {
		return l.proseUnitsFit(n)
	}
	var in []int // the columns holding n
	named, inNamed := false, false
	for i, h := range l.heads {
		if i == l.keyCol || i >= len(l.cells) {
			continue
		}
		holds := cellHolds(l.cells[i], n.fact)
		if holds && keyLike(l.cells[i]) && strings.Contains(claim, l.cells[i]) {
			return "" // the claim names the cell itself ("2026-Q2"): the number is its key, not its value
		}
		if holds {
			in = append(in, i)
		}
		if termsLike(contentTerms(h), n.clause) {
			named = true
			inNamed = inNamed || holds
		}
	}
	if len(in) == 0 { // in the key cell or the header's context only: nothing to compare
		return ""
	}
	if named && !inNamed {
		return fmt.Sprintf("holds it in the %q column, which the sentence does not name", l.heads[in[0]])
	}
	for _, i := range in {
		u := lang.HeaderUnits(l.heads[i])
		for _, cu := range lang.NumberUnits(l.cells[i], n.fact.Value) {
			u = overlay(u, cu)
		}
		if n.units.Conflicts(u) == "" {
			return ""
		}
	}
	u := lang.HeaderUnits(l.heads[in[0]])
	for _, cu := range lang.NumberUnits(l.cells[in[0]], n.fact.Value) {
		u = overlay(u, cu)
	}
	return fmt.Sprintf("states it in %s (%q column), not %s", u.Describe(), l.heads[in[0]], n.units.Describe())
}

// keyLike reports whether a table cell's letters make it a name ("2026-Q2", "v2") rather than an
// amount with its unit ("20 days", "2 GB", "$49"): a claim quoting "20 days" still states a value to
// check in its column.
func keyLike(cell string) bool {
	words := strings.FieldsFunc(cell, func(r rune) bool { return !unicode.IsLetter(r) })
	if len(words) == 0 {
		return false
	}
	for _, w := range words {
		if !unitWord(w) {
			return true
		}
	}
	return false
}

// unitWord reports a folded word that is a unit of measure, a time unit or a currency.
func unitWord(w string) bool {
	if _, ok := lang.UnitWords[strings.ToUpper(w)]; ok {
		return true
	}
	if lang.ReTimeWord.MatchString(w) || lang.UnitNames[w] != "" || lang.CurrencySigns[w] {
		return true
	}
	return lang.CurrencyCode(w) != "" && lang.ReCurrencyAfter.MatchString(w)
}

// proseUnitsFit is numberFits for a line that is not a table row: some occurrence of the number must
// not be counted in another unit than the claim's.
func (l lineFacts) proseUnitsFit(n factIn[lang.Number]) string {
	us := lang.NumberUnits(l.text, n.fact.Value)
	if n.fact.Scaled() {
		us = append(us, lang.NumberUnits(l.text, n.fact.Base)...)
	}
	for _, u := range us {
		if n.units.Conflicts(u) == "" {
			return ""
		}
	}
	if len(us) == 0 {
		return ""
	}
	return fmt.Sprintf("states it in %s, not %s", us[0].Describe(), n.units.Describe())
}

// overlay is u with what v states set over it (a cell's "20 days" says more than its header).
func overlay(u, v lang.Units) lang.Units {
	if v.Time != "" {
		u.Time = v.Time
	}
	if v.Period != "" {
		u.Period = v.Period
	}
	if v.Currency != "" {
		u.Currency = v.Currency
	}
	return u
}

// cellHolds reports whether a folded table cell states number n (its value, or its base when scaled).
func cellHolds(cell string, n lang.Number) bool {
	set := lang.NumbersOf(cell)
	return set.Has(n.Value) || n.Scaled() && set.Has(n.Base)
}

// termsLike reports whether a and b share a term, or two terms sharing their first five or more
// letters ("month" and "monthli").
func termsLike(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
			if k := min(len(x), len(y)); k >= 5 && !lang.HasCJK(x) && x[:k] == y[:k] {
				return true
			}
		}
	}
	return false
}

// English negations, and the Chinese negating characters with the words in which they negate nothing
// (非常 is "very", 未来 "future", 不仅 "not only ... but"). "without" is left out: it qualifies a noun
// ("PDFs without a text layer are refused, because docmind does not do OCR" negates one verb, not two).
var (
	enNegations = map[string]bool{"not": true, "no": true, "never": true, "none": true, "nothing": true, "nobody": true,
		"nor": true, "neither": true, "cannot": true}
	cnNegations  = "不没无未非别勿"
	cnNotNegated = []string{"不仅", "不但", "不光", "不断", "不同", "不过", "不少", "不久", "不管", "不论", "不如", "不错", "不已",
		"无论", "无数", "无线", "无锡", "非常", "非洲", "除非", "未来", "淹没", "埋没", "出没", "隐没", "沉没", "别人", "别的", "别名",
		"别称", "没收", "分别", "区别", "特别", "类别", "级别", "性别", "个别", "告别", "差别", "识别", "辨别", "鉴别", "派别", "别墅"}
)

// negations counts the negations of folded text s: "no" and "not" words, n't, and the Chinese
// negating characters outside the words where they negate nothing. A leading answer word ("yes,",
// "no,", "不，", "会的，") is not counted: it answers the question, the clause after it states the fact.
func negations(s string) int {
	s = strings.TrimSpace(s)
	if m := reAnswerWord.FindStringIndex(s); m != nil {
		s = s[m[1]:]
	}
	n := 0
	s = strings.ReplaceAll(s, "’", "'") // "doesn’t"
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' || text.IsCJK(r) }) {
		w = strings.Trim(w, "'")
		if enNegations[w] || strings.HasSuffix(w, "n't") {
			n++
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !strings.ContainsRune(cnNegations, r) {
			continue
		}
		word := false
		for _, x := range cnNotNegated {
			xr := []rune(x)
			for k := range xr {
				if xr[k] == r && i-k >= 0 && i-k+len(xr) <= len(rs) && string(rs[i-k:i-k+len(xr)]) == x {
					word = true
				}
			}
		}
		if !word {
			n++
		}
	}
	// 剩余 / 剩下 / 余下 ("what is left") say what 未休 / 未使用 ("not yet taken") say: counted as one
	// negation, so "剩余年假可顺延" rewords "未休年假可顺延" and "已休年假可顺延" still flips it
	for _, w := range []string{"剩余", "剩下", "余下"} {
		n += strings.Count(s, w)
	}
	return n
}

var reAnswerWord = regexp.MustCompile(`^(yes|no|yeah|nope|correct|right|indeed)\b[,.!:;]\s*|^(是的|对的|对|是|会的|会|不会|不是|没有|不|否|可以|不可以|能|不能)[,.!:;]\s*`)

// opposed returns the index of the cited passage whose line the claim is about says the opposite of
// it, -1 when none does or another cited passage agrees with the claim.
func opposed(claim string, terms []string, facts []*passageFacts) int {
	if len(terms) < 2 {
		return -1
	}
	clauses, k := clausesOf(claim), -1
	for i, f := range facts {
		switch f.agrees(clauses, terms) {
		case 1:
			return -1
		case -1:
			if k < 0 {
				k = i
			}
		}
	}
	return k
}

// clause is one clause of a claim or line, its content terms and whether it is negated. Negation is
// counted per clause: "docmind does not do OCR, so it cannot read scanned PDFs" holds two negated
// clauses, not an even number of negations that cancel out.
type clause struct {
	terms   []string
	negated bool
	// restrict is the clause's bound and restriction words ("no more than", "only", "after", 之后, 不超过),
	// sorted: a negated line may be reworded with other ones and no negation ("not available after 30
	// days" is "available only within 30 days"), so a pair whose words differ is not compared; a pair
	// with the same words is ("may exceed 2 GB" against "may not exceed 2 GB" flips it).
	restrict string
}

var reClauseBreak = regexp.MustCompile(`[,;:，；：。!?！？]|\.\s|\s(so|because|but|while|whereas|although|since)\s`)

// clausesOf splits folded text s into its clauses.
func clausesOf(s string) []clause {
	var out []clause
	for _, part := range reClauseBreak.Split(s, -1) {
		ts := contentTerms(part)
		if len(ts) == 0 {
			continue
		}
		out = append(out, clause{terms: ts, negated: negations(part)%2 == 1, restrict: restrictions(part)})
	}
	return out
}

// Restrictions and bounds let a negated line be reworded without its negation ("not available after 30
// days" is "available only within 30 days", "no more than 25" is "at most 25", 不低于 is 至少): a claim
// clause is compared with its line clause only when both hold the same ones (restrictions).
var reRestrict = regexp.MustCompile(`\b(only|at most|at least|up to|limited|within|after|before|until|unless|except|beyond|longer|later)\b|` +
	`仅|只|至少|至多|最多|最少|以内|之内|之后|之前|以后|以前|以上|以下|除非|除了`)

// restrictions is the sorted set of bound and restriction words of folded text s. A bound is named
// without its negation ("no more than" and "more than" are both "more than", 不超过 and 超过 both 超过):
// whether it is negated is the clause's negation, so "may exceed" against "may not exceed" is compared.
func restrictions(s string) string {
	ws := append(reBare.FindAllString(s, -1), reRestrict.FindAllString(s, -1)...)
	for i, w := range ws {
		ws[i] = strings.Join(strings.Fields(w), " ")
	}
	slices.Sort(ws)
	return strings.Join(slices.Compact(ws), "|")
}

// reBare is a bound without its negation.
var reBare = regexp.MustCompile(`(more|less|fewer|greater|later|earlier|longer|higher|lower)\s+than|exceed(s|ed|ing)?|` +
	`低于|少于|超过|高于|多于|大于|小于|晚于|早于`)

// agrees compares the clauses of a claim with the lines of the passage it is about (the ones sharing
// most of its weighted content terms, at least half of them and two): 1 when a clause of one of them
// is negated as the claim's clause about the same thing is, -1 when every such pair says the opposite
// (one negated, the other not), 0 when no line or clause is about the claim, or the pairs are unsure.
// Table rows are not compared: a cell's "None" is a value, not a statement negated.
func (f *passageFacts) agrees(claim []clause, terms []string) int {
	all := make([]int, len(f.lines))
	for i := range all {
		all[i] = i
	}
	seen := false
	for _, i := range f.bestLines(all, terms) {
		l := f.lines[i]
		if l.key != nil {
			continue
		}
		have := 0
		for _, t := range terms {
			if l.terms[t] {
				have++
			}
		}
		if have < 2 || 2*have < len(terms) {
			continue
		}
		switch clausesAgree(claim, clausesOf(l.text)) {
		case 1:
			return 1
		case -1:
			seen = true
		}
	}
	if seen {
		return -1
	}
	return 0
}

// clausesAgree compares each claim clause with the line clause it shares most terms with (two at
// least): 1 when one pair is negated alike, -1 when the pairs compared all differ, 0 when none was.
// A clause is not compared when its restriction words differ from its line clause's, or when line clauses tied
// for best disagree.
func clausesAgree(claim, line []clause) int {
	seen := false
	for _, c := range claim {
		bestHave, negated, mixed := 1, false, false
		for _, d := range line {
			switch have := sharedTerms(c.terms, d.terms); {
			case have > bestHave:
				bestHave, negated, mixed = have, d.negated, d.restrict != c.restrict
			case have == bestHave && bestHave > 1:
				mixed = mixed || d.restrict != c.restrict || d.negated != negated
			}
		}
		if bestHave < 2 || mixed {
			continue
		}
		if c.negated == negated {
			return 1
		}
		seen = true
	}
	if seen {
		return -1
	}
	return 0
}

func sharedTerms(a, b []string) int {
	n := 0
	for _, t := range a {
		if slices.Contains(b, t) {
			n++
		}
	}
	return n
}

// checkNumbers says why a number of claim c is not supported by the line of a cited passage it is
// about ("" when every one is): not in the passages, in another line, in another column, or counted
// in another unit.
func checkNumbers(c claimFacts, where string, facts []*passageFacts) string {
	together := numbersTogether(c.numbers, c.terms, c.all, facts)
	for _, n := range c.numbers {
		if together {
			break
		}
		found, about, why := false, false, ""
		for _, f := range facts {
			if !f.numbers.Has(n.fact.Value) && !(n.fact.Scaled() && f.numbers.Has(n.fact.Base)) {
				continue
			}
			found = true
			for _, i := range f.aboutLines(c.all, n.lead, n.clause, c.terms) {
				l := f.lines[i]
				if !l.numbers.Has(n.fact.Value) && !(n.fact.Scaled() && l.scale && l.numbers.Has(n.fact.Base)) {
					continue
				}
				if w := l.numberFits(n, c.folded); w != "" {
					why = w
					continue
				}
				about = true
			}
		}
		if found && !about && why != "" {
			return fmt.Sprintf("%s: %s %s", strings.TrimSpace(n.fact.Raw), where, why)
		}
		if msg := factMessage(n.fact.Raw, where, found, about); msg != "" {
			return msg
		}
	}
	return ""
}
