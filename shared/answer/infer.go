package answer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
)

// MetaCatalog is what filter inference reads of the knowledge bases' metadata (sqldb.DB): the
// tenant's knowledge bases (a question that names none may read them all), each key's values (over
// the knowledge bases, or over only some documents: those a caller with documents denied may read),
// and the documents a filter lets through.
type MetaCatalog interface {
	ListKBs(ctx context.Context, tenant string) ([]rag.KnowledgeBase, error)
	MetadataFacets(ctx context.Context, tenant string, kbIDs []string, top int) ([]rag.MetaFacet, error)
	MetadataFacetsOf(ctx context.Context, tenant string, kbIDs []string, top int, only []string) ([]rag.MetaFacet, error)
	MatchDocuments(ctx context.Context, tenant string, kbIDs []string, f *rag.MetaFilter) ([]string, error)
}

// InferredFilter is a metadata filter the understanding step read from the question (issue #23):
// applied as a user's filter is, announced as its own event (EventInferredFilter), and carried in
// done as inferred_filter.
type InferredFilter struct {
	// Filter is the filter applied, in rag.MetaFilter's JSON form.
	Filter json.RawMessage `json:"filter"`
	// Matched is why: the words of the question and the value each names.
	Matched []InferredMatch `json:"matched"`
	// Documents counts the documents that pass it within the question's scope.
	Documents int `json:"documents"`
	// Fallback says the filtered retrieval found nothing relevant, so the question was searched
	// without the inferred filter (a user's filter still holds).
	Fallback bool `json:"fallback,omitempty"`
	// Detail says it in words, for the timeline.
	Detail string `json:"detail"`
}

// InferredMatch is one value the question names: the words as found (normalised) and the key and
// value matched, by the rules, or by the model (By "model", no words: it read the value under another
// name, and the value was checked against the documents' values).
type InferredMatch struct {
	Words string `json:"words,omitempty"`
	Key   string `json:"key"`
	Value any    `json:"value"`
	By    string `json:"by"` // rules | model
	// Gte and Lt bound a date range the question names ("in 2025": 2025-01-01 to before 2026-01-01,
	// "since March 2024": from 2024-03-01, "before 2023": before 2023-01-01); Value then says the
	// range in words ("[2025-01-01, 2026-01-01)") and the filter is a range on Key.
	Gte string `json:"gte,omitempty"`
	Lt  string `json:"lt,omitempty"`
}

// Limits of inference. A key is a candidate only while it has few distinct values (a category, such
// as a department or a year, not an identifier such as a title or a URL), so every value is known.
const (
	inferMaxDistinct = 32
	inferMaxKeys     = 3
)

// inferSkipKeys are keys whose values identify or describe one document, or are derived by docmind
// itself: matching their values against a question's words ("upload a file", "in English") would
// restrict questions that never meant to.
var inferSkipKeys = map[string]bool{
	"source": true, "file_type": true, "language": true, "created": true, "modified": true, "title": true,
	"description": true, "url": true, "content_type": true, "page_id": true, "parent_id": true,
	"author_id": true, "modified_by": true, "connector": true, "keywords": true, "date": true,
	"effective_date": true,
}

// inferSkipValues are values too generic to be named on purpose (sidecar booleans, placeholders).
var inferSkipValues = map[string]bool{"true": true, "false": true, "yes": true, "no": true, "none": true,
	"other": true, "all": true, "n/a": true, "na": true, "unknown": true, "default": true}

// infer is the filter inference step: when the question names a value that some document of its
// knowledge bases holds, under a key most of them have with few distinct values, that the user's own
// filter does not name (candidateFacets), the documents holding it become the question's restriction
// (an and with the user's). A value named under two keys is ambiguous and not used; several values of
// one key are an in. Not for selected documents (the user chose what to read). It runs before the
// cache lookup; the model's turn comes after understanding (inferByModel). Inference failing is
// recorded in degraded ("infer_filter") and the question goes on unfiltered.
func (p *Pipeline) infer(ctx context.Context, st *State) {
	if p.Infer == nil || st.selected() {
		return
	}
	t := time.Now()
	defer st.timed("infer_filter", t)
	req := st.Request
	kbs := req.KBIDs
	if len(kbs) == 0 {
		all, err := p.Infer.ListKBs(ctx, req.Tenant)
		if err != nil {
			st.degrade("infer_filter")
			return
		}
		for _, kb := range all {
			kbs = append(kbs, kb.ID)
		}
		if len(kbs) == 0 {
			return
		}
	}
	facets, err := p.candidateSource(ctx, req, kbs)
	if err != nil {
		st.degrade("infer_filter")
		return
	}
	st.candidates, st.inferKBs = candidateFacets(facets, req.FilterKeys), kbs
	// a date range is a candidate only while some document's value falls in it, under its key
	var held []InferredMatch
	readable := idSet(req.Restrict)
	for _, d := range MatchDates(st.Question, facets, req.FilterKeys, time.Now()) {
		_, f := inferredFilter([]InferredMatch{d})
		ids, err := p.Infer.MatchDocuments(ctx, req.Tenant, kbs, f)
		if err != nil {
			st.degrade("infer_filter")
			return
		}
		if !req.AccessRestricted || slices.ContainsFunc(ids, func(id string) bool { return readable[id] }) {
			held = append(held, d) // by a document the caller may read
		}
	}
	if matches := combineMatches(MatchValues(st.Question, facets, req.FilterKeys), held); len(matches) > 0 {
		p.applyInferred(ctx, st, matches)
	}
}

// candidateSource describes the metadata inference may match: the knowledge bases' (kept by the
// catalog, shared by every question), or, for a caller with documents denied (AccessRestricted),
// only the documents the question may read (Restrict: the readable ones passing the user's filter),
// so a value held only by a document the caller may not read is no candidate, counts toward no key's
// share, makes no other key's value ambiguous and is never shown to the model.
func (p *Pipeline) candidateSource(ctx context.Context, req Request, kbs []string) ([]rag.MetaFacet, error) {
	if req.AccessRestricted {
		return p.Infer.MetadataFacetsOf(ctx, req.Tenant, kbs, inferMaxDistinct, req.Restrict)
	}
	return p.Infer.MetadataFacets(ctx, req.Tenant, kbs, inferMaxDistinct)
}

// combineMatches joins the values and the date ranges a question names, dropping words claimed by
// more than one key: a date phrase matched under two date keys that both hold documents in it, or a
// value whose words lie within a date phrase's ("2025" as year = 2025 and as a date in 2025). At most
// inferMaxKeys keys.
func combineMatches(values, dates []InferredMatch) []InferredMatch {
	both := append(slices.Clone(values), dates...)
	claimed := func(m InferredMatch) bool {
		for _, d := range dates {
			if d.Key != m.Key && shareWord(d.Words, m.Words) {
				return true
			}
		}
		if m.Gte == "" && m.Lt == "" {
			return false
		}
		for _, v := range values { // a date phrase holding a value's words
			if v.Key != m.Key && shareWord(m.Words, v.Words) {
				return true
			}
		}
		return false
	}
	var all []InferredMatch
	for _, m := range both {
		if !claimed(m) {
			all = append(all, m)
		}
	}
	var out []InferredMatch
	var keys []string
	for _, m := range all {
		if !slices.Contains(keys, m.Key) {
			if len(keys) == inferMaxKeys {
				continue
			}
			keys = append(keys, m.Key)
		}
		out = append(out, m)
	}
	return out
}

// applyInferred restricts the question to the documents holding every match's value (and passing the
// user's filter); nothing changes when none does or the look-up fails (then "infer_filter" is degraded).
func (p *Pipeline) applyInferred(ctx context.Context, st *State, matches []InferredMatch) bool {
	req := st.Request
	raw, f := inferredFilter(matches)
	ids, err := p.Infer.MatchDocuments(ctx, req.Tenant, st.inferKBs, f)
	if err != nil {
		st.degrade("infer_filter")
		return false
	}
	if len(req.Restrict) > 0 { // the user's filter and the access lists hold too
		// on a copy: MatchDocuments' answer is shared by every query of the same filter until a write
		restrict := idSet(req.Restrict)
		ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !restrict[id] })
	}
	if len(ids) == 0 {
		return false // the values exist, but not together among what the question may read
	}
	st.Inferred = &InferredFilter{Filter: raw, Matched: matches, Documents: len(ids), Detail: inferredDetail(matches, len(ids))}
	st.InferredRestrict = ids
	return true
}

// idSet is ids as a set (nil for none).
func idSet(ids []string) map[string]bool {
	if len(ids) == 0 {
		return nil
	}
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// inferByModel adds the values the model said the question names under another name
// (Understanding.FilterValues), each only when it is exactly one of the candidates shown to it and its
// key is not inferred by the rules already; true when the restriction changed.
func (p *Pipeline) inferByModel(ctx context.Context, st *State) bool {
	u := st.Understanding
	if p.Infer == nil || u.Source != "llm" || len(u.FilterValues) == 0 || len(st.candidates) == 0 {
		return false
	}
	var matches []InferredMatch
	if st.Inferred != nil {
		matches = slices.Clone(st.Inferred.Matched)
	}
	ruled := func(key string) bool {
		return slices.ContainsFunc(matches, func(m InferredMatch) bool { return m.Key == key && m.By == "rules" })
	}
	added := 0
	for _, fv := range u.FilterValues {
		v, ok := candidateValue(st.candidates, fv)
		dup := slices.ContainsFunc(matches, func(m InferredMatch) bool { return m.Key == fv.Key && m.Value == v })
		if !ok || ruled(fv.Key) || dup {
			continue
		}
		matches = append(matches, InferredMatch{Key: fv.Key, Value: v, By: "model"})
		added++
	}
	return added > 0 && p.applyInferred(ctx, st, matches)
}

// candidateValue finds fv among the candidates: the same key and the same value (a number as a
// number, a string exactly), returning the stored value.
func candidateValue(candidates []rag.MetaFacet, fv FilterValue) (any, bool) {
	for _, f := range candidates {
		if f.Key != fv.Key {
			continue
		}
		for _, vc := range f.Values {
			if vc.Value == fv.Value {
				return vc.Value, true
			}
		}
	}
	return nil, false
}

// inferredFilter builds the filter of the matches: one condition per key (eq, or in for several
// values), and-ed.
func inferredFilter(matches []InferredMatch) (json.RawMessage, *rag.MetaFilter) {
	var keys []string
	values := map[string][]any{}
	var conds []map[string]any
	for _, m := range matches {
		if m.Gte != "" || m.Lt != "" { // a date range: its own condition
			c := map[string]any{"key": m.Key}
			if m.Gte != "" {
				c["gte"] = m.Gte
			}
			if m.Lt != "" {
				c["lt"] = m.Lt
			}
			conds = append(conds, c)
			continue
		}
		if _, ok := values[m.Key]; !ok {
			keys = append(keys, m.Key)
		}
		values[m.Key] = append(values[m.Key], m.Value)
	}
	for _, k := range keys {
		if vs := values[k]; len(vs) == 1 {
			conds = append(conds, map[string]any{"key": k, "eq": vs[0]})
		} else {
			conds = append(conds, map[string]any{"key": k, "in": vs})
		}
	}
	var v any = conds[0]
	if len(conds) > 1 {
		v = map[string]any{"and": conds}
	}
	raw, _ := json.Marshal(v)
	f, err := rag.ParseMetaFilter(raw)
	if err != nil { // keys and values came from valid metadata; a failure here is a bug
		panic(fmt.Sprintf("answer: inferred filter %s: %v", raw, err))
	}
	return raw, f
}

func inferredDetail(matches []InferredMatch, docs int) string {
	var parts []string
	for _, m := range matches {
		if m.By == "model" {
			parts = append(parts, fmt.Sprintf("%s %s, read by the model", m.Key, valueString(m.Value)))
			continue
		}
		if m.Gte != "" || m.Lt != "" {
			parts = append(parts, fmt.Sprintf("“%s” is %s %s", m.Words, m.Key, rangeWords(m.Gte, m.Lt)))
			continue
		}
		parts = append(parts, fmt.Sprintf("“%s” is %s %s", m.Words, m.Key, valueString(m.Value)))
	}
	plural := "s"
	if docs == 1 {
		plural = ""
	}
	return fmt.Sprintf("the question names a value the documents hold (%s): searching the %d document%s that have it", strings.Join(parts, ", "), docs, plural)
}

func valueString(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// MatchValues returns the values of facets that q names, in the order of the facets and their values:
// exact matches after normalisation (NFKC, lower case, runs of spaces and underscores as one space),
// as whole words (any substring for a value in a script written without spaces, such as Chinese); a
// number only as a whole number that is a year (1900-2199) or follows its key's name ("version 3"),
// never inside a date. Only the keys of candidateFacets (categories most documents have, not the
// user's, not identifiers or dates), never a generic value or one matched under two keys
// (ambiguous). At most inferMaxKeys keys.
func MatchValues(q string, facets []rag.MetaFacet, skip []string) []InferredMatch {
	nq := normaliseText(q)
	type hit struct {
		m    InferredMatch
		text string
	}
	var hits []hit
	qw := questionWords(nq)
	for _, f := range candidateFacets(facets, skip) {
		for _, vc := range f.Values {
			text, canon, ok := valueNamed(nq, qw, f.Key, vc.Value)
			if ok {
				hits = append(hits, hit{InferredMatch{Words: text, Key: f.Key, Value: vc.Value, By: "rules"}, canon})
			}
		}
	}
	var out []InferredMatch
	var keys []string
	for _, h := range hits {
		ambiguous := slices.ContainsFunc(hits, func(o hit) bool { return o.text == h.text && o.m.Key != h.m.Key })
		if ambiguous {
			continue
		}
		if !slices.Contains(keys, h.m.Key) {
			if len(keys) == inferMaxKeys {
				continue
			}
			keys = append(keys, h.m.Key)
		}
		out = append(out, h.m)
	}
	return out
}

// candidateFacets are the keys a filter may be inferred on: categories (at most inferMaxDistinct
// values, every one listed) that at least half the documents have, not dates, not identifiers or
// derived fields (inferSkipKeys), not named by the user's filter (skip); generic values are left out.
//
// Half the documents: a key most documents lack does not partition them, it describes a few (a tag
// on one guide), and restricting to the documents that have it would drop the others for missing
// metadata, not for being about something else ("Does docmind do OCR?" lost the FAQ to the guide's
// `tags: [docmind]`). The documents are counted as the most widely held key's (the derived keys are
// on every indexed document).
func candidateFacets(facets []rag.MetaFacet, skip []string) []rag.MetaFacet {
	most := 0
	for _, f := range facets {
		most = max(most, f.Documents)
	}
	var out []rag.MetaFacet
	for _, f := range facets {
		if inferSkipKeys[f.Key] || slices.Contains(skip, f.Key) || f.Distinct == 0 || f.Distinct > inferMaxDistinct ||
			f.Type == "date" || len(f.Values) < f.Distinct || 2*f.Documents < most {
			continue
		}
		f.Values = slices.DeleteFunc(slices.Clone(f.Values), func(v rag.MetaValueCount) bool {
			s, ok := v.Value.(string)
			return ok && inferSkipValues[normaliseText(s)]
		})
		if len(f.Values) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// valueNamed reports whether the normalised question nq (its words qw) names v (of key), the words
// as found, and the value's canonical form (values under two keys with the same form are ambiguous).
// A value in a script written without spaces is found anywhere in the question; any other as whole
// words (wordsNamed).
func valueNamed(nq string, qw []qword, key string, v any) (string, string, bool) {
	var s string
	switch x := v.(type) {
	case float64:
		if x != float64(int64(x)) || x < 0 {
			return "", "", false
		}
		s = strconv.FormatInt(int64(x), 10)
	case string:
		s = x
	default:
		return "", "", false
	}
	nv := normaliseText(s)
	if isDigits(nv) {
		return nv, nv, numberNamed(nq, normaliseText(key), nv)
	}
	if inferSkipValues[nv] || utf8.RuneCountInString(nv) < 2 {
		return "", "", false
	}
	if spaceless(nv) {
		return nv, nv, strings.Contains(nq, nv)
	}
	return wordsNamed(qw, nv)
}

// qword is a word of the question: as written (normalised) and its singular form.
type qword struct{ text, form string }

// questionWords splits a normalised question into words: runs of letters and digits (a hyphen, an
// apostrophe or any other mark separates words: "HR's", "platform-eng").
func questionWords(nq string) []qword {
	var out []qword
	for _, w := range strings.FieldsFunc(nq, func(r rune) bool { return !wordRune(r) }) {
		out = append(out, qword{w, singular(w)})
	}
	return out
}

// wordsNamed finds a value's words among the question's as consecutive whole words, in any order
// ("policy HR" names "HR policy"), each compared in its singular form ("policies" names "policy").
// It returns the question's words as found and the value's canonical form (its sorted forms).
func wordsNamed(qw []qword, nv string) (string, string, bool) {
	var forms []string
	for _, w := range questionWords(nv) {
		forms = append(forms, w.form)
	}
	if len(forms) == 0 {
		return "", "", false
	}
	slices.Sort(forms)
	canon := strings.Join(forms, " ")
	window := make([]string, len(forms))
	for i := 0; i+len(forms) <= len(qw); i++ {
		var text []string
		for j, w := range qw[i : i+len(forms)] {
			window[j] = w.form
			text = append(text, w.text)
		}
		slices.Sort(window)
		if slices.Equal(window, forms) {
			return strings.Join(text, " "), canon, true
		}
	}
	return "", "", false
}

// singular is an English word's singular form by the regular rules (policies: policy, handbooks:
// handbook, boxes: box, branches: branch), applied to question and value words alike; words of
// other letters, short words and words in -ss, -us, -is are left as they are.
func singular(w string) string {
	for _, r := range w {
		if r > unicode.MaxASCII || !unicode.IsLetter(r) {
			return w
		}
	}
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes")):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

// numberNamed finds the number n as a whole number in nq, not part of a date or a decimal, that is a
// year or follows the key's name.
func numberNamed(nq, key, n string) bool {
	year := len(n) == 4 && n >= "1900" && n <= "2199"
	for from := 0; ; {
		i := strings.Index(nq[from:], n)
		if i < 0 {
			return false
		}
		i += from
		from = i + 1
		before, after := nq[:i], nq[i+len(n):]
		b, a := lastRune(before), firstRune(after)
		if unicode.IsDigit(b) || unicode.IsDigit(a) {
			continue
		}
		// 2025-03-01, 3.5, 1/2025: part of another number
		if (a == '-' || a == '.' || a == '/') && unicode.IsDigit(firstRune(after[1:])) ||
			(b == '-' || b == '.' || b == '/') && unicode.IsDigit(lastRune(before[:len(before)-1])) {
			continue
		}
		if unicode.IsLetter(b) && !spaceless(string(b)) || unicode.IsLetter(a) && !spaceless(string(a)) {
			continue // part of a word: v2025, 2025th
		}
		if year || strings.HasSuffix(strings.TrimRight(before, " :="), key) {
			return true
		}
	}
}

// normaliseText is how values and questions are compared: NFKC (full-width digits and letters as
// ASCII), lower case, underscores as spaces, runs of spaces as one.
func normaliseText(s string) string {
	s = strings.ToLower(norm.NFKC.String(s))
	s = strings.ReplaceAll(s, "_", " ")
	return strings.Join(strings.Fields(s), " ")
}

// spaceless says s is written in a script without spaces between words (Han, Hiragana, Katakana,
// Thai): a value in it is found anywhere in the question.
func spaceless(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai) {
			return true
		}
	}
	return false
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	if r == utf8.RuneError {
		return 0
	}
	return r
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return 0
	}
	return r
}

// fallBack is the inferred filter's way out: when the retrieval under it found nothing relevant (no
// evidence, or evidence graded LOW), the question is searched again without it, and the timeline
// says so (the event again, fallback true).
func (p *Pipeline) fallBack(ctx context.Context, st *State, emit Emit) (bool, error) {
	in := st.Inferred
	if in == nil || in.Fallback || st.Result == nil {
		return false, nil
	}
	if g := st.Result.Grade; !g.NoEvidence && g.Tier != rank.TierLow && len(st.Result.Evidence) > 0 {
		return false, nil
	}
	in.Fallback = true
	in.Detail = "nothing relevant among the documents with " + inferredConds(in.Matched) + ": searched without the inferred filter"
	return true, emit(EventInferredFilter, in)
}

func inferredConds(matches []InferredMatch) string {
	var parts []string
	for _, m := range matches {
		if m.Gte != "" || m.Lt != "" {
			parts = append(parts, m.Key+" "+rangeWords(m.Gte, m.Lt))
			continue
		}
		parts = append(parts, m.Key+" = "+valueString(m.Value))
	}
	return strings.Join(parts, " and ")
}
