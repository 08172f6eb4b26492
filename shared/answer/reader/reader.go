// Package reader is the offline answerer: without a language model it quotes the sentences, table
// rows and list items of the retrieved passages that best answer the question, each with its [n], under
// a notice in the question's language saying no model wrote it. Extractive.Read is its one entry point;
// it never calls out and returns values only.
package reader

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/inject"
	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/text"
)

// OfflineNotice opens every extractive answer: the reader must know no language model wrote it.
const OfflineNotice = "No language model is configured, so this answer quotes the passages of your documents that best match the question."

// NoEvidenceAnswer is the extractive answer when nothing was retrieved. It never claims that the thing
// asked about does not exist: only that the selected knowledge bases did not yield it.
const NoEvidenceAnswer = "No language model is configured, and no passage in the selected knowledge bases matched the question. Try other words, or check that the documents you expect are ingested."

// NoMatchAnswer is the extractive answer when passages were retrieved but none shares a word with the
// question (the vector leg found them): nothing is quoted, the passages are still listed as sources.
const NoMatchAnswer = "No language model is configured, and no sentence in the retrieved passages shares the words of the question, so nothing is quoted. The closest passages are listed as sources; they may still be relevant."

// NoQuoteAnswer is the extractive answer when the passages share the question's words only in their
// titles or headings: there is no sentence to quote, and saying "no passage shares the words" would
// be false.
const NoQuoteAnswer = "No language model is configured. The retrieved passages share the question's words only in their titles or headings, so no sentence is quoted; the passages are listed as sources."

// The same four sentences for a question in Chinese: the quotes are in the documents' language, but
// what docmind itself says follows the question's (a model is told to answer in it too).
const (
	OfflineNoticeZH    = "未配置语言模型，以下内容摘自与问题最相关的文档段落。"
	NoEvidenceAnswerZH = "未配置语言模型，所选知识库中没有与问题相关的段落。请换一种说法，或确认所需文档已经导入。"
	NoMatchAnswerZH    = "未配置语言模型，检索到的段落中没有与问题用词相同的句子，因此不作引用。下面列出最接近的段落作为来源，它们仍可能相关。"
	NoQuoteAnswerZH    = "未配置语言模型。检索到的段落只在标题中出现了问题的用词，因此不引用句子，只列出这些段落作为来源。"
)

// offlineTexts are the extractive answer's own sentences in one language.
type offlineTexts struct{ notice, noEvidence, noMatch, noQuote string }

// offlineFor picks the sentences for query's language: Chinese when it holds a CJK character.
func offlineFor(query string) offlineTexts {
	if lang.HasCJK(query) {
		return offlineTexts{OfflineNoticeZH, NoEvidenceAnswerZH, NoMatchAnswerZH, NoQuoteAnswerZH}
	}
	return offlineTexts{OfflineNotice, NoEvidenceAnswer, NoMatchAnswer, NoQuoteAnswer}
}

// WithoutNotice returns answer without the offline notice it opens with (either language): the notice
// is not a claim about the documents, nor part of what the answer says.
func WithoutNotice(answer string) string {
	for _, n := range [...]string{OfflineNotice, OfflineNoticeZH, OfflineSummaryNotice, OfflineSummaryNoticeZH} {
		if strings.Contains(answer, n) {
			return strings.Replace(answer, n, "", 1)
		}
	}
	return answer
}

// Extractive is the offline reader (DESIGN.md section 9): it answers from the top sources, each quoted
// line followed by its [n]. A table row whose cells match the question is answered as "header: value"
// pairs (or as one cell when the question also names a column); prose is split into sentences and
// clauses and scored with BM25 at sentence level, boosted when a sentence holds what the question asks
// for (a number, a date, a price...).
type Extractive struct {
	MaxSentences  int // lines quoted at most (default 5)
	PerSource     int // lines taken from one source at most (default 4)
	MaxSentRunes  int // longer sentences are split at clause ends (default 160)
	SourcesToRead int // top sources considered (default 5)
}

func (x Extractive) defaults() Extractive {
	if x.MaxSentences <= 0 {
		x.MaxSentences = 5
	}
	if x.PerSource <= 0 {
		x.PerSource = 4
	}
	if x.MaxSentRunes <= 0 {
		x.MaxSentRunes = 160
	}
	if x.SourcesToRead <= 0 {
		x.SourcesToRead = 5
	}
	return x
}

// Reading is what the reader found, besides the answer: the features the confidence uses.
type Reading struct {
	Answer string
	Asked  lang.Asked // what the question asks for
	Held   bool       // a quoted line holds it
	Table  bool       // the first quoted line is a table row or cell
	Cover  float64    // idf-weighted share of the question's terms the quoted lines hold
	Top    bool       // the first quoted line comes from source [1]
	// Code says a quoted line is source code or a run of identifiers (only for a question about code:
	// CodeQuestion); such an answer is never HIGH
	Code bool
}

// unit is one quotable line: a sentence, a clause, or a table row.
type unit struct {
	src, pos int
	show     string   // what is quoted
	terms    []string // what is scored
	row      *tableRow
	score    float64
	matched  map[string]bool // question terms it holds
	holds    bool
	// section counts the headings above the line in its passage: the line after the best one is
	// quoted only from the same section ("## How do I change my beneficiary?" starts another topic).
	section int
	// faq is the terms of the heading above the line when that heading is a question: an FAQ's
	// answer lines ("- 理赔申请书") share no word with the question their heading asks.
	faq []string
	// code marks a line of source code or a run of identifiers outside a fence (CodeLine)
	code bool
	// fit is how the line's numbers meet the question's numeric condition (weighNumbers)
	fit lang.Fit
}

// tableRow is one data row of a markdown table with its header.
type tableRow struct {
	header, cells []string
	keyCols       []int // columns whose cell matches the question (the row's keys)
	col           int   // the column the question names (-1: none)
	// keyCover is the largest share of a key cell's terms the question holds: "Business" is named by
	// "the Business plan" (1), "email within 2 business days" only brushed by it (1/5).
	keyCover float64
	// column marks a row of a column listed whole (columnUnits): the question named no row
	column bool
	// labels are the columns that tell the table's rows apart (rowLabels), named in a one-cell answer
	labels []int
	// fit is how the row's range or value meets the question's numeric condition (rowFit)
	fit lang.Fit
}

// Compose returns the answer for query over ev (ev[i] is source i+1).
func (x Extractive) Compose(query string, ev []rank.Evidence) string { return x.Read(query, ev).Answer }

// Read answers query over ev (ev[i] is source i+1) and says how.
func (x Extractive) Read(query string, ev []rank.Evidence) Reading {
	x = x.defaults()
	r := Reading{Asked: lang.AskedFor(query)}
	say := offlineFor(query)
	if len(ev) == 0 {
		r.Answer = say.noEvidence
		return r
	}
	qterms := QuestionTerms(query)
	var units []unit
	flags := inject.Passages(ev)
	flagged := map[int]bool{}
	for _, f := range flags {
		flagged[f.Source-1] = true
	}
	codeAsked := CodeQuestion(query)
	var cond *lang.Condition // the question's numeric condition: lines are compared with it as numbers
	if c, ok := lang.ConditionOf(query); ok {
		cond = &c
	}
	for i, e := range ev[:min(len(ev), x.SourcesToRead)] {
		body := e.Text
		if strings.TrimSpace(body) == "" {
			body = e.ChildText
		}
		us := x.units(i, body, qterms, codeAsked, cond)
		if flagged[i] {
			// a passage that instructs the assistant: its instructing sentences, and any that repeat
			// what it asks to be said, are never quoted (SEC-03); the rest of it still may be
			unsafe := inject.Unsafe(e)
			us = slices.DeleteFunc(us, func(u unit) bool { return unsafe(u.show) })
		}
		units = append(units, us...)
	}
	if !codeAsked {
		// a prose question is never answered with code (CodeLine): the threshold a design document
		// explains, not the constant its example declares
		units = slices.DeleteFunc(units, func(u unit) bool { return u.code })
	}
	idf := x.idf(qterms, units)
	var total float64
	for _, t := range qterms {
		total += idf[t]
	}
	scoreUnits(units, qterms, idf, total, r.Asked, query)
	weighNumbers(units, cond)
	cands := units[:0:0]
	for _, u := range units {
		if u.score > 0 && !restates(u, qterms, r.Asked) {
			cands = append(cands, u)
		}
	}
	if len(cands) == 0 {
		r.Answer = say.noMatch
		if sharesTerm(qterms, ev) {
			r.Answer = say.noQuote
		}
		return r
	}
	slices.SortStableFunc(cands, func(a, b unit) int { return cmp.Compare(b.score, a.score) })
	picked := x.extend(x.pick(cands, r.Asked), units, cands, qterms, r.Asked, query)
	covered := map[string]bool{}
	for _, u := range picked {
		r.Held = r.Held || u.holds
		r.Code = r.Code || u.code
		for t := range u.matched {
			covered[t] = true
		}
	}
	for _, t := range qterms {
		if covered[t] && total > 0 {
			r.Cover += idf[t] / total
		}
	}
	r.Table, r.Top = picked[0].row != nil, picked[0].src == 0
	// no image, link or HTML element pointing outside the server is quoted, whatever the passage holds
	r.Answer, _ = inject.Sanitise(render(say.notice, picked), ev, flags)
	return r
}

// extend adds to the picked sentences the one after (or before) the best when the question asks for
// it, and up to two bridges to a second hop, each with the line of its passage that best matches the
// question, within MaxSentences.
func (x Extractive) extend(picked, units, cands []unit, qterms []string, asked lang.Asked, query string) []unit {
	if n, ok := next(picked, units, asked); ok && len(picked) < x.MaxSentences && !pickedAlready(picked, n) {
		picked = append(picked, n)
	}
	if p, ok := previous(picked, units, query); ok && len(picked) < x.MaxSentences && !pickedAlready(picked, p) {
		picked = append(picked, p)
	}
	for range 2 {
		b, ok := bridge(picked, units, qterms, asked, query)
		if !ok || len(picked) > x.MaxSentences {
			break
		}
		if pickedAlready(picked, b) { // the same sentence in another passage: mark it taken, look again
			b.show = ""
		}
		picked = append(picked, b)
		// the bridge passage names the second hop; its line that best matches the question says what
		// was asked about it ("Sullivan County is a county ..." then "Its county seat is Newport.")
		if f, ok := bestOfSource(b.src, picked, cands); ok && len(picked) <= x.MaxSentences {
			picked = append(picked, f)
		}
	}
	return picked
}

// render writes the offline answer: the notice, then the picked sentences in source order, then
// document order, so quotes from one passage stay together.
func render(notice string, picked []unit) string {
	slices.SortFunc(picked, func(a, b unit) int {
		if a.src != b.src {
			return a.src - b.src
		}
		return a.pos - b.pos
	})
	var b strings.Builder
	b.WriteString(notice)
	b.WriteString("\n")
	for _, u := range picked {
		if u.show != "" {
			fmt.Fprintf(&b, "\n- %s [%d]", u.show, u.src+1)
		}
	}
	return b.String()
}

// pick takes the best line, then others only when they add something: a question term the picked
// lines lack, or the asked-for kind of value they lack. Another source is read only for that; a
// second line of the same source also when it scores nearly as well (the answer often spans two
// sentences). Lines far below the best are noise next to it.
func (x Extractive) pick(cands []unit, asked lang.Asked) []unit {
	best := cands[0]
	picked := []unit{best}
	covered := maps(best.matched)
	held := best.holds
	perSource := map[int]int{best.src: 1}
	seen := map[string]bool{strings.ToLower(best.show): true}
	for _, c := range cands[1:] {
		if seen[strings.ToLower(c.show)] {
			continue
		}
		tied := best.row != nil && c.row != nil && tiedRows(best, c)
		if len(picked) >= x.MaxSentences && !(tied && best.row.column) {
			continue
		}
		if tied {
			// the question names no key that tells these rows apart ("the total revenue in 2026-Q2"
			// matches every region's row): each is listed, up to MaxSentences rather than PerSource,
			// and none passes for the answer alone
			picked = append(picked, c)
			perSource[c.src]++
			seen[strings.ToLower(c.show)] = true
			continue
		}
		if c.score < best.score/2 || perSource[c.src] >= x.PerSource {
			continue
		}
		if best.fit == lang.FitMatch && c.fit == lang.FitConflict {
			// the best line's range holds the question's number; a line of another range is another
			// case's rule ("Leave of up to 30 days ..." beside "... more than 30 days ..."), not more of it
			continue
		}
		if best.row != nil {
			// The row the question names is the answer: other rows are not (tied ones were listed
			// above), nor prose around the table. "服务月可用性不低于 99.9%。" was quoted beside the
			// "低于 95.0%: 50%" row it introduces, and read first, for "低于95%时返还多少".
			continue
		}
		adds := false
		for t := range c.matched {
			// another passage is quoted for a word of what is asked about, not for the question's
			// verb: "Known limits: ... OCR, which is not included" was added to the Business plan's row
			if !covered[t] && (c.src == best.src || contentTerm(t)) {
				adds = true
			}
		}
		addsKind := asked != lang.AskedNone && !held && c.holds
		// after a table answer only what adds coverage: the row is the answer, its neighbours are not
		sameSource := c.src == best.src && c.score >= 0.5*best.score && best.row == nil
		if !adds && !addsKind && !sameSource {
			continue
		}
		picked = append(picked, c)
		perSource[c.src]++
		seen[strings.ToLower(c.show)] = true
		held = held || c.holds
		for t := range c.matched {
			covered[t] = true
		}
	}
	return picked
}

// genericTerms are verbs (analyzed forms) that ask how a thing relates to another, not what it is:
// a line of another passage that shares only such a word with the question adds nothing to the answer.
var genericTerms = map[string]bool{"includ": true, "contain": true, "provid": true, "offer": true, "cover": true,
	"mean": true, "happen": true, "describ": true, "allow": true, "need": true, "involv": true, "consist": true}

// cjkFunctionRunes are Chinese particles: a bigram holding one ("议的", "天的") spans a word boundary
// and names nothing. Copulas and prepositions (是, 由, 在) were tried too and cost a right answer on
// CMRC ("是由" brought the line that named who): particles alone dropped another passage's line from
// 24 answers and changed no answer's correctness.
const cjkFunctionRunes = "的了吗呢吧啊"

// contentTerm reports whether a question term names something, so that another passage holding it
// may add to the answer: not a relation verb, not a CJK bigram across a particle.
func contentTerm(t string) bool {
	return !genericTerms[t] && !(isCJKTerm(t) && strings.ContainsAny(t, cjkFunctionRunes))
}

// tiedRows reports whether row c of best's table matches the question exactly as best does: the same
// question terms, as closely (a row the question names outranks its neighbours, they do not tie).
func tiedRows(best, c unit) bool {
	b, r := best.row, c.row
	if c.src != best.src || b.col != r.col || b.keyCover != r.keyCover || b.fit != r.fit || !slices.Equal(b.header, r.header) || len(c.matched) != len(best.matched) {
		return false
	}
	for t := range best.matched {
		if !c.matched[t] {
			return false
		}
	}
	return c.holds == best.holds || b.column && r.column // a row without the value is listed too
}

// bestOfSource is the best-scoring candidate of source src that is not picked yet.
func bestOfSource(src int, picked, cands []unit) (unit, bool) {
	for _, c := range cands { // cands are sorted by score
		if c.src != src || pickedAlready(picked, c) {
			continue
		}
		taken := false
		for _, p := range picked {
			taken = taken || p.src == c.src && p.pos == c.pos
		}
		if !taken {
			return c, true
		}
	}
	return unit{}, false
}

// pickedAlready reports whether the same text is picked already (two passages can hold one sentence).
func pickedAlready(picked []unit, u unit) bool {
	for _, p := range picked {
		if strings.EqualFold(p.show, u.show) {
			return true
		}
	}
	return false
}

// next is the line right after the best one in its passage, when the best line does not hold the
// asked-for kind (or nothing specific is asked) and the next one is not a question or picked already:
// a matched sentence often names the subject, and the one after it says what was asked ("因此..." follows
// its reason; "1992年4月，任..." follows the name).
func next(picked, units []unit, asked lang.Asked) (unit, bool) {
	best := picked[0]
	if best.row != nil || asked != lang.AskedNone && best.holds {
		return unit{}, false
	}
	for _, u := range picked {
		if u.src == best.src && u.pos == best.pos+1 {
			return unit{}, false
		}
	}
	for _, u := range units {
		if u.src == best.src && u.pos == best.pos+1 && u.row == nil && u.section == best.section {
			if best.fit == lang.FitMatch && u.fit == lang.FitConflict {
				return unit{}, false // the next case's rule, not the rest of this one (pick)
			}
			show := strings.TrimSpace(u.show)
			if strings.HasSuffix(show, "?") || strings.HasSuffix(show, "？") {
				return unit{}, false
			}
			return u, true
		}
	}
	return unit{}, false
}

var reWhy = regexp.MustCompile(`(?i)\bwhy\b|\bfor what reason\b|为什么|为何|原因|何故|怎么会`)

// previous is the line before the best one for a "why" question: the best line states the fact
// ("因此它有时也被称为笨蛋水果"), the reason comes before it.
func previous(picked, units []unit, q string) (unit, bool) {
	best := picked[0]
	if best.row != nil || best.pos == 0 || !reWhy.MatchString(q) {
		return unit{}, false
	}
	for _, u := range units {
		if u.src == best.src && u.pos == best.pos-1 && u.row == nil && u.section == best.section {
			return u, true
		}
	}
	return unit{}, false
}

// bridge finds the second hop of a question whose answer is about something the best line names
// ("the woman who portrayed Corliss Archer" is Shirley Temple; her position is in another passage): a
// line of another source that mentions a name the best line adds to the question, preferring one that
// holds the asked-for kind of value or more of the question's terms.
func bridge(picked, units []unit, qterms []string, asked lang.Asked, q string) (unit, bool) {
	best := picked[0]
	if best.row != nil {
		return unit{}, false
	}
	names := map[string]bool{}
	for _, p := range picked {
		if p.src != best.src {
			continue // names of the best passage: the first hop
		}
		for _, n := range lang.NewNames(p.show, q) {
			if lang.UnitOrCurrency(n) {
				continue
			}
			if t := text.Analyze(n); len(t) == 1 && utf8.RuneCountInString(t[0]) > 2 {
				names[t[0]] = true
			}
		}
	}
	if len(names) == 0 {
		return unit{}, false
	}
	srcs := map[int]bool{}
	for _, u := range picked {
		if u.src == best.src {
			srcs[u.src] = true
		}
	}
	taken := map[[2]int]bool{}
	for _, u := range picked {
		taken[[2]int{u.src, u.pos}] = true
	}
	var found unit
	bestVal := 0.0
	for _, u := range units {
		if srcs[u.src] || taken[[2]int{u.src, u.pos}] || restates(u, qterms, asked) {
			continue
		}
		hits := 0
		seen := map[string]bool{}
		for _, t := range u.terms {
			if names[t] && !seen[t] {
				seen[t] = true
				hits++
			}
		}
		if hits == 0 {
			continue
		}
		// A shared name alone is not enough: the line must also share a content term of the question or
		// hold what it asks for, or any line naming the first hop's subject would be quoted.
		held := asked != lang.AskedNone && holdsAsked(u.show, asked, q)
		if !held && !lineSharesTerm(u, qterms) {
			continue
		}
		v := float64(hits) + 2*u.score
		if held {
			v += 0.5
		}
		v -= 0.1 * float64(u.pos) // a passage introduces its subject first
		if v > bestVal {
			bestVal, found = v, u
		}
	}
	return found, bestVal > 0
}

func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// units splits one source into quotable lines: table rows (those with a cell matching the question)
// and the sentences and clauses of the prose; with code asked about (CodeQuestion), the lines of fenced
// code blocks too, each one line marked code.
func (x Extractive) units(src int, body string, qterms []string, codeAsked bool, cond *lang.Condition) []unit {
	var out []unit
	lines := joinWrapped(strings.Split(body, "\n"))
	inCode := opensInCode(lines)
	section, firstOfSection := 0, len(out)
	var faq []string
	first := firstProse(lines)
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(line, "```"):
			inCode = !inCode
			continue
		case strings.HasPrefix(line, "#") && !inCode:
			section, firstOfSection, faq = section+1, len(out), nil
			if h := strings.TrimSpace(strings.TrimLeft(line, "#")); strings.HasSuffix(h, "?") || strings.HasSuffix(h, "？") {
				faq = text.Analyze(h)
			}
			continue
		case inCode && codeAsked && line != "" && !strings.HasPrefix(line, "//") && !strings.HasPrefix(line, "#"):
			out = append(out, unit{src: src, pos: len(out), show: lang.Truncate(line, 2*x.MaxSentRunes), terms: text.Analyze(line),
				section: section, code: true})
			continue
		case inCode, line == "":
			continue
		case headingLine(line):
			// a heading extracted as plain text (PDF, DOCX: "第三条 服务等级") names a section, it answers
			// nothing, and the lines under it are another topic than the lines above
			section, firstOfSection, faq = section+1, len(out), nil
			if strings.HasSuffix(line, "?") || strings.HasSuffix(line, "？") {
				faq = text.Analyze(line)
			}
			continue
		case strings.HasPrefix(line, "|"):
			j := i
			for j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "|") {
				j++
			}
			for _, u := range tableUnits(src, len(out), lines[i:j], qterms, cond) {
				u.section = section
				out = append(out, u)
			}
			i = j - 1
			continue
		}
		if faq == nil && titleLine(line, i == first) {
			continue // a title or a table's header row as plain text ("月可用性 返还比例"): nothing to quote
		}
		pieces := splitClauses(line, x.MaxSentRunes)
		lineCode := CodeLine(line)
		if len(out) == 0 && i == first && startsMidSentence(line) && len(pieces) > 0 && !lineCode {
			pieces = pieces[1:] // a window cut into the passage: its first fragment is half a sentence
		}
		for _, s := range pieces {
			s = CleanSentence(s)
			if n := utf8.RuneCountInString(s); n < 6 && !(faq != nil && n >= 2) {
				continue // too short to say anything, but for an item of an FAQ's answer list ("理赔申请书")
			}
			u := unit{src: src, pos: len(out), show: lang.Truncate(s, 2*x.MaxSentRunes), terms: text.Analyze(s), section: section,
				code: lineCode || CodeLine(s)}
			if len(out)-firstOfSection < faqLines {
				u.faq = faq
			}
			out = append(out, u)
		}
	}
	return out
}

// reArticle is a numbered heading of a contract or a statute: "第三条 服务等级", "第一章 总则",
// "Article 4 Termination", "Section 2: Data".
var reArticle = regexp.MustCompile(`^(第[0-9一二三四五六七八九十百零〇两]+[条章节篇部款]|(?i:article|section|chapter|part|clause)\s+[0-9IVXivx]+[.:]?)(\s|$)`)

// headingLine reports whether a plain-text line is only a heading: a numbered article or chapter
// title, short and without a sentence's punctuation ("第三条 服务等级" was quoted as an answer on the
// demo's service agreement, once after the line it ends the section of).
func headingLine(line string) bool {
	line = strings.TrimSpace(line)
	if r, _ := utf8.DecodeRuneInString(line); r != '第' && !strings.ContainsRune("AaSsCcPp", r) {
		return false // most lines: no regular expression run
	}
	m := reArticle.FindStringIndex(line)
	if m == nil {
		return false
	}
	rest := strings.TrimSpace(line[m[1]:])
	return utf8.RuneCountInString(rest) <= 24 && !strings.ContainsAny(rest, "。！？；，,;.!")
}

// titleLine reports whether a plain-text line reads as a title rather than a statement: no
// punctuation, no digit, not a list item, and short: at most 3 words in Latin script; in Chinese at most
// 12 characters and either the passage's first line or words set apart by spaces, as a table's header
// row extracted as text is. A PDF's title ("docmind 服务协议") and such a header ("月可用性 返还比例")
// were quoted as answers. It is skipped but starts no section: a short line may still be an item of
// the list above it, which is also why a Chinese line without those marks is kept ("支持更多文档格式").
func titleLine(line string, first bool) bool {
	if len(line) > 1 && strings.ContainsRune("-*+>", rune(line[0])) {
		return false
	}
	words, runes := 0, 0
	inWord := false
	for _, r := range line {
		runes++
		switch {
		case unicode.IsDigit(r) || unicode.IsPunct(r) && r != '-' && r != '&' || unicode.IsSymbol(r):
			return false
		case unicode.IsSpace(r):
			inWord = false
		case !inWord:
			inWord, words = true, words+1
		}
	}
	if lang.HasCJK(line) {
		return runes <= 12 && (first || words > 1)
	}
	r, _ := utf8.DecodeRuneInString(line)
	return words <= 3 && unicode.IsUpper(r)
}

// firstProse is the index of the first non-blank line.
func firstProse(lines []string) int {
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			return i
		}
	}
	return -1
}

// startsMidSentence reports whether a line opens with a lower-case Latin letter (", which ..." or
// "one, docmind uses ...": the compression window began inside a sentence).
func startsMidSentence(l string) bool {
	r, _ := utf8.DecodeRuneInString(strings.TrimSpace(l))
	return r >= 'a' && r <= 'z' || r == ',' || r == ';'
}

// joinWrapped joins hard-wrapped prose lines back into paragraphs (markdown wraps a paragraph over
// several lines; a sentence cut at a line break would be quoted in halves). A line joins the previous
// one when neither is blank, a heading, a table row, a fence or a list item, and the previous one does
// not end a sentence.
func joinWrapped(lines []string) []string {
	structural := func(l string) bool {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "|") || strings.HasPrefix(l, "```") || strings.HasPrefix(l, ">") {
			return true
		}
		if len(l) > 1 && strings.ContainsRune("-*+", rune(l[0])) && l[1] == ' ' {
			return true
		}
		i := 0
		for i < len(l) && l[i] >= '0' && l[i] <= '9' {
			i++
		}
		return i > 0 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && l[i+1] == ' '
	}
	var out []string
	inCode := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") {
			inCode = !inCode
		}
		if n := len(out); n > 0 && !inCode && !structural(l) && !strings.HasPrefix(t, "```") {
			prev := strings.TrimSpace(out[n-1])
			// a line of code is a line: joined, it would be quoted as half a sentence or carry prose
			if prev != "" && !strings.HasPrefix(prev, "#") && !strings.HasPrefix(prev, "|") && !strings.HasPrefix(prev, "```") && !endsSentence(prev) &&
				!CodeLine(prev) && !CodeLine(t) {
				sep := " "
				if r, _ := utf8.DecodeLastRuneInString(prev); text.IsCJK(r) {
					sep = ""
				}
				out[n-1] = prev + sep + t
				continue
			}
		}
		out = append(out, l)
	}
	return out
}

func endsSentence(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return strings.ContainsRune(".!?。！？；:：", r)
}

// tableUnits turns a markdown table into one unit per data row whose cells share a term with the
// question, or one of whose cells states a range that meets its numeric condition (rowFit). The row is scored with its header (a question naming a column matches it), and shown as
// "header: value" pairs, or as the one cell the question names.
func tableUnits(src, pos int, lines []string, qterms []string, cond *lang.Condition) []unit {
	var rows [][]string
	for _, l := range lines {
		cells := splitRow(l)
		if isSeparator(cells) {
			continue
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 {
		return nil
	}
	q := map[string]bool{}
	for _, t := range qterms {
		q[t] = true
	}
	header := rows[0]
	// a question term that names a column ("days per year") is not a row key
	colTerm := map[string]bool{}
	for _, h := range header {
		for _, t := range text.Analyze(h) {
			colTerm[t] = true
		}
	}
	var out []unit
	labelsFor := map[int][]int{} // the row labels for each asked column
	for _, cells := range rows[1:] {
		tr := &tableRow{header: header, cells: cells, col: -1}
		var terms []string
		for c, cell := range cells {
			ct := text.Analyze(cell)
			terms = append(terms, ct...)
			for _, t := range ct {
				if q[t] && !colTerm[t] {
					tr.keyCols = append(tr.keyCols, c)
					tr.keyCover = max(tr.keyCover, cellCover(ct, q))
					break
				}
			}
		}
		var key int
		if tr.fit, key = rowFit(cond, header, cells); key >= 0 && !slices.Contains(tr.keyCols, key) {
			// the cell whose range meets the question's number names the row: "< 95%" for "93%"
			tr.keyCols = append(tr.keyCols, key)
			slices.Sort(tr.keyCols)
			tr.keyCover = 1
		}
		if len(tr.keyCols) == 0 {
			continue
		}
		bestHits := 0
		for c, h := range header {
			if c >= len(cells) || slices.Contains(tr.keyCols, c) || strings.TrimSpace(cells[c]) == "" {
				continue
			}
			hits := 0
			for _, t := range text.Analyze(h) {
				if q[t] {
					hits++
				}
			}
			if hits > bestHits {
				bestHits, tr.col = hits, c
			}
		}
		if tr.col >= 0 {
			if _, ok := labelsFor[tr.col]; !ok {
				labelsFor[tr.col] = rowLabels(header, rows[1:], tr.col)
			}
			tr.labels = labelsFor[tr.col]
		}
		for _, h := range header {
			terms = append(terms, text.Analyze(h)...)
		}
		out = append(out, unit{src: src, pos: pos + len(out), show: tr.String(), terms: terms, row: tr})
	}
	if len(out) == 0 && src == 0 {
		out = columnUnits(src, pos, header, rows[1:], q)
	}
	return out
}

// maxColumnRows is the longest table whose column is quoted for every row.
const maxColumnRows = 12

// columnUnits answer a question that names a column of the top source's table but none of its rows
// ("Which region had the most new customers?"): one line per row, the column's value after the cells
// that label the row, all of them listed (pick lets them past MaxSentences), so that no row passes
// for the answer alone and none is left out. Without them the question's words were matched in other
// documents' prose ("a new or changed file is ingested").
func columnUnits(src, pos int, header []string, rows [][]string, q map[string]bool) []unit {
	if len(rows) > maxColumnRows {
		return nil
	}
	col, best := -1, 0
	for c, h := range header {
		ht := text.Analyze(reParens.ReplaceAllString(h, ""))
		named := len(ht) > 0
		for _, t := range ht {
			named = named && q[t]
		}
		if named && len(ht) > best {
			col, best = c, len(ht)
		}
	}
	if col < 0 {
		return nil
	}
	labels := rowLabels(header, rows, col)
	if len(labels) == 0 {
		return nil
	}
	terms := text.Analyze(header[col])
	for _, c := range labels {
		terms = append(terms, text.Analyze(header[c])...)
	}
	var out []unit
	for _, cells := range rows {
		if col >= len(cells) || strings.TrimSpace(cells[col]) == "" {
			continue
		}
		tr := &tableRow{header: header, cells: cells, labels: labels, col: col, column: true}
		out = append(out, unit{src: src, pos: pos + len(out), show: tr.String(), terms: terms, row: tr})
	}
	return out
}

// rowLabels are the columns that tell the rows apart, other than col: the first column of words
// ("plan"), then the next ones until no two rows share their labels ("region", then "quarter").
func rowLabels(header []string, rows [][]string, col int) []int {
	var labels []int
	for c := range header {
		if c == col || !wordColumn(rows, c) {
			continue
		}
		labels = append(labels, c)
		seen, unique := map[string]bool{}, true
		for _, cells := range rows {
			var k []string
			for _, l := range labels {
				if l < len(cells) {
					k = append(k, strings.TrimSpace(cells[l]))
				}
			}
			key := strings.Join(k, "\x00")
			unique = unique && !seen[key]
			seen[key] = true
		}
		if unique {
			return labels
		}
	}
	return labels
}

var reParens = regexp.MustCompile(`\([^)]*\)`)

// wordColumn reports whether column c of rows holds a letter in every non-empty cell ("North",
// "2026-Q1"), as a row's labels do and amounts do not.
func wordColumn(rows [][]string, c int) bool {
	any := false
	for _, cells := range rows {
		if c >= len(cells) || strings.TrimSpace(cells[c]) == "" {
			continue
		}
		if !strings.ContainsFunc(cells[c], unicode.IsLetter) {
			return false
		}
		any = true
	}
	return any
}

// cellCover is the share of a cell's distinct terms that the question holds.
func cellCover(cellTerms []string, q map[string]bool) float64 {
	seen := map[string]bool{}
	in := 0
	for _, t := range cellTerms {
		if !seen[t] {
			seen[t] = true
			if q[t] {
				in++
			}
		}
	}
	return float64(in) / float64(max(1, len(seen)))
}

// String renders the row: the named cell ("revenue (kUSD) for North, 2026-Q2: 515"), or every
// "header: value" pair.
func (tr *tableRow) String() string {
	cell := func(i int) string { return strings.TrimSpace(tr.cells[i]) }
	if tr.col >= 0 {
		var keys []string
		for _, k := range tr.rowKeys() {
			keys = append(keys, cell(k))
		}
		return fmt.Sprintf("%s for %s: %s", strings.TrimSpace(tr.header[tr.col]), strings.Join(keys, ", "), cell(tr.col))
	}
	var pairs []string
	for i := range tr.cells {
		h := ""
		if i < len(tr.header) {
			h = strings.TrimSpace(tr.header[i])
		}
		if v := cell(i); v != "" {
			if h != "" {
				v = h + ": " + v
			}
			pairs = append(pairs, v)
		}
	}
	return strings.Join(pairs, "; ")
}

// rowKeys are the columns that name the row in a one-cell answer, in column order: the row's labels
// (the columns that tell the table's rows apart, else the first) and every cell the question matched,
// less the column asked for. The labels are there even when the question did not name them:
// "revenue (kUSD) for 2026-Q2: 515" answered "What was the total revenue in 2026-Q2?" with North's
// figure, the region dropped.
func (tr *tableRow) rowKeys() []int {
	labels := tr.labels
	if len(labels) == 0 {
		labels = []int{0}
	}
	var keys []int
	for c := range tr.cells {
		if c != tr.col && strings.TrimSpace(tr.cells[c]) != "" && (slices.Contains(labels, c) || slices.Contains(tr.keyCols, c)) {
			keys = append(keys, c)
		}
	}
	return keys
}

func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	l = strings.TrimSuffix(l, "|")
	parts := strings.Split(l, "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(strings.NewReplacer("**", "", "`", "").Replace(parts[i]))
	}
	return parts
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":- ") != "" {
			return false
		}
	}
	return len(cells) > 0
}

// questionWords are interrogatives and auxiliaries (analyzed forms): in a question they say what kind
// of answer is wanted, not what it is about, so a sentence is not credited for holding them.
var questionWords = map[string]bool{"what": true, "which": true, "who": true, "whom": true, "whose": true, "when": true,
	"where": true, "why": true, "how": true, "mani": true, "much": true, "do": true, "doe": true, "did": true, "i": true,
	"can": true, "could": true, "should": true, "would": true, "ha": true, "have": true, "had": true, "were": true, "am": true,
	"you": true, "we": true, "my": true, "get": true}

// cjkQuestionRunes make a bigram interrogative (什么, 哪个, 多少, 是否...).
const cjkQuestionRunes = "什么哪吗呢谁怎几"

// QuestionTerms are the question's distinct analyzed terms less the interrogatives.
func QuestionTerms(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range text.Analyze(q) {
		if seen[t] || questionWords[t] || t == "多少" || t == "是否" || strings.ContainsAny(t, cjkQuestionRunes) && isCJKTerm(t) {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	if len(out) == 0 { // a question made only of question words still has something to match
		for _, t := range text.Analyze(q) {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

func isCJKTerm(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	return text.IsCJK(r)
}

// idf is each question term's inverse document frequency over the candidate lines (each line a
// document). The passages' own statistics decide within them: a name every sentence of the top passage
// holds is its subject, not the answer. Blending in the knowledge base's statistics (BM25 index
// document frequencies, square-root damped) measured worse on the train splits: answer recall CMRC
// 0.766 vs 0.780, HotpotQA 0.456 vs 0.488.
func (x Extractive) idf(qterms []string, units []unit) map[string]float64 {
	out := make(map[string]float64, len(qterms))
	// only the question's terms need a document frequency: counting every term of every line cost an
	// eighth of the answer stage
	at := make(map[string]int, len(qterms))
	for i, t := range qterms {
		at[t] = i
	}
	df, lastUnit := make([]int, len(qterms)), make([]int, len(qterms))
	for ui, u := range units {
		for _, t := range u.terms {
			if i, ok := at[t]; ok && lastUnit[i] != ui+1 {
				lastUnit[i] = ui + 1
				df[i]++
			}
		}
	}
	n := float64(len(units))
	content := slices.ContainsFunc(qterms, func(t string) bool { return !genericTerms[t] })
	for i, t := range qterms {
		out[t] = math.Log(1 + (n-float64(df[i])+0.5)/(float64(df[i])+0.5))
		if genericTerms[t] && content {
			// the question's verb is rarer than its subject in a passage about that subject: at full
			// weight "which is not included" outranked the Business plan's row for "What does the
			// Business plan include?"
			out[t] /= 2
		}
	}
	return out
}

// BM25 parameters at sentence level: short documents, so length matters less than in chunk search.
const (
	sentK1 = 1.2
	sentB  = 0.5
)

// scoreUnits scores each line: BM25 of the question's terms (normalised by their total idf, so 1 is
// roughly "holds every term once"), times 1.3 when it holds the asked-for kind, less a little for
// each rank below the first source (the reranker's order is evidence too).
func scoreUnits(units []unit, qterms []string, idf map[string]float64, total float64, asked lang.Asked, q string) {
	if total == 0 || len(units) == 0 {
		return
	}
	var avg float64
	for _, u := range units {
		avg += float64(len(u.terms))
	}
	avg = math.Max(1, avg/float64(len(units)))
	qset := map[string]bool{}
	for _, t := range qterms {
		qset[t] = true
	}
	for i := range units {
		u := &units[i]
		tf := map[string]float64{}
		for _, t := range u.terms {
			if qset[t] {
				tf[t]++
			}
		}
		faqScore := faqCredit(u.faq, qterms, idf, total)
		if len(tf) == 0 && faqScore == 0 {
			continue
		}
		u.matched = map[string]bool{}
		norm := 1 - sentB + sentB*float64(len(u.terms))/avg
		var s float64
		for _, t := range qterms { // in the question's order: a map's order would make ties flip between runs
			f, ok := tf[t]
			if !ok {
				continue
			}
			u.matched[t] = true
			s += idf[t] * f * (sentK1 + 1) / (f + sentK1*norm)
		}
		s /= total * (sentK1 + 1)
		s = math.Max(s, faqScore)
		if asked != lang.AskedNone {
			u.holds = lang.Holds(u.show, asked, q)
			if u.row != nil && u.row.col >= 0 && asked != lang.AskedName && asked != lang.AskedDate {
				// the named column's header carries the unit ("Days per year"): a number in the cell is
				// the asked-for amount
				u.holds = u.holds || len(lang.ExtractNumbers(u.row.cells[u.row.col])) > 0
			}
			if u.holds {
				s *= 1.3
			}
		}
		if u.row != nil && u.row.col >= 0 {
			s *= 1.1 // a question naming a column and a row: the cell is the answer
		}
		if u.row != nil {
			// the row the question names outranks a row one of whose long cells shares a word with it
			s *= 0.7 + 0.3*u.row.keyCover
		}
		u.score = s * (1 - 0.06*float64(min(u.src, 5)))
	}
}

// faqLines is how many lines under an FAQ heading answer its question.
const faqLines = 6

// faqCredit scores a line under an FAQ heading by how much of the question that heading asks (0 when it
// asks less than most of it): 0.9 of a line holding the terms itself, so a line that does outranks one
// that only sits under the heading. The lines keep their order, so the answer reads as the page does.
func faqCredit(heading, qterms []string, idf map[string]float64, total float64) float64 {
	if len(heading) == 0 || total == 0 {
		return 0
	}
	h := map[string]bool{}
	for _, t := range heading {
		h[t] = true
	}
	var got float64
	for _, t := range qterms {
		if h[t] {
			got += idf[t]
		}
	}
	if got/total < 0.6 {
		return 0
	}
	return 0.9 * got / total / (sentK1 + 1) // scoreUnits' scale: a line holding every term once, at average length
}

// restates reports whether a line only repeats the question: a question itself (an FAQ heading in the
// text), or a line every term of which the question has, that holds nothing asked for.
func restates(u unit, qterms []string, asked lang.Asked) bool {
	show := strings.TrimSpace(u.show)
	if u.row == nil && (strings.HasSuffix(show, "?") || strings.HasSuffix(show, "？")) {
		return true
	}
	if u.row != nil || u.holds {
		return false
	}
	q := map[string]bool{}
	for _, t := range qterms {
		q[t] = true
	}
	for _, t := range u.terms {
		if !q[t] && !questionWords[t] {
			return false
		}
	}
	return true
}

// sharesTerm reports whether any passage (text, child text, chapter or file name) holds a question term.
func sharesTerm(qterms []string, ev []rank.Evidence) bool {
	q := map[string]bool{}
	for _, t := range qterms {
		q[t] = true
	}
	for _, e := range ev {
		for _, t := range text.Analyze(e.Text + "\n" + e.ChildText + "\n" + e.Chapter + "\n" + e.FileName) {
			if q[t] {
				return true
			}
		}
	}
	return false
}

// splitClauses splits one line into sentences, then before list markers ("（1）", "①", "一、",
// " 2) "), then any piece longer than max runes at clause ends (，、：,;: ) into pieces of about max
// runes: a 500-character run-on Chinese line is several answers, and quoting it whole buries the one
// that was asked for.
func splitClauses(line string, max int) []string {
	var out []string
	for _, s := range lang.SplitSentences(line) {
		for _, p := range lang.SplitListMarkers(s) {
			limit := max
			if !lang.HasCJK(p) {
				limit = 2 * max // Latin sentences are longer per idea; cut them only when very long
			}
			if utf8.RuneCountInString(p) <= limit {
				out = append(out, p)
				continue
			}
			out = append(out, splitLong(p, limit)...)
		}
	}
	return out
}

// splitLong cuts a long piece at clause ends into pieces of at most about max runes.
func splitLong(s string, max int) []string {
	r := []rune(s)
	var out []string
	start, lastCut := 0, -1
	for i := 0; i < len(r); i++ {
		if strings.ContainsRune("，、：,;:", r[i]) && (r[i] != ',' && r[i] != ':' && r[i] != ';' || i+1 == len(r) || unicode.IsSpace(r[i+1])) {
			lastCut = i + 1
		}
		if i-start+1 >= max && lastCut > start {
			out = append(out, string(r[start:lastCut]))
			start = lastCut
		}
	}
	if start < len(r) {
		out = append(out, string(r[start:]))
	}
	return out
}

// CleanSentence drops markdown structure: headings, bullets, table rows, emphasis and existing [n]s.
func CleanSentence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "#") || strings.HasPrefix(s, "|") || strings.HasPrefix(s, "```") {
		return ""
	}
	s = strings.TrimLeft(s, "-*+> ")
	s = strings.NewReplacer("**", "", "__", "", "`", "").Replace(s)
	s = lang.CiteRe.ReplaceAllString(s, "")
	return strings.TrimSpace(lang.OneLine(s))
}

// holdsAsked is holds, with a currency code or unit not counted as the name a question asks for.
func holdsAsked(s string, asked lang.Asked, q string) bool {
	if asked != lang.AskedName {
		return lang.Holds(s, asked, q)
	}
	for _, n := range lang.NewNames(s, q) {
		if !lang.UnitOrCurrency(n) {
			return true
		}
	}
	return lang.ReAlias.MatchString(s)
}

// lineSharesTerm reports whether line u holds one of the question's content terms.
func lineSharesTerm(u unit, qterms []string) bool {
	for _, t := range u.terms {
		if slices.Contains(qterms, t) {
			return true
		}
	}
	return false
}
