package bm25

import (
	"cmp"
	"slices"
	"sort"
	"unicode"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/text"
)

// RM3 is pseudo-relevance feedback (Lavrenko and Croft's relevance model, interpolated with the query
// as in Anserini): the query's first Docs chunks (inside the search's filter) are taken as relevant,
// every term of theirs is weighted by P(term | chunk) times the chunk's score, the Terms heaviest form
// the feedback model, and the second search scores OrigWeight times the query's terms plus
// (1 - OrigWeight) times the feedback model's. Docs 0 is off.
type RM3 struct {
	Docs       int     // feedback chunks (Anserini's default 10)
	Terms      int     // expansion terms (Anserini's default 10)
	OrigWeight float64 // weight of the original query, (0, 1] (Anserini's default 0.5)
	// MaxDF drops candidate expansion terms found in more than this share of the chunks (0: keep all):
	// such terms say little about the topic, and their long posting lists are most of the second
	// search's cost.
	MaxDF float64
}

// On reports whether feedback runs.
func (r RM3) On() bool { return r.Docs > 0 && r.Terms > 0 && r.OrigWeight > 0 && r.OrigWeight < 1 }

// qterm is one query term with its weight.
type qterm struct {
	id int32
	w  float64
}

// feedback is the RM3 setting for a query: RM3CJK for a query written mostly in CJK (its terms are
// character bigrams, whose statistics differ from English words'), RM3 otherwise.
func (p Params) feedback(query string) RM3 {
	if IsCJKQuery(query) {
		return p.RM3CJK
	}
	return p.RM3
}

// IsCJKQuery reports whether a query is written mostly in CJK: a CJK character counts as much as a
// Latin word (four letters), so "安心保 A 款" is Chinese and "what does 安心 mean" is not.
func IsCJKQuery(q string) bool {
	cjk, letters := 0, 0
	for _, r := range q {
		switch {
		case text.IsCJK(r):
			cjk++
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			letters++
		}
	}
	return cjk > 0 && 4*cjk >= letters
}

// tf is an entry's weighted frequency of term id: postings are in entry order (Add appends, compact
// keeps the order), so a binary search finds it without a forward index. Caller holds a lock.
func (ix *Index) tf(id, at int32) float32 {
	ps := ix.postings[id]
	i := sort.Search(len(ps), func(i int) bool { return ps[i].doc >= at })
	if i < len(ps) && ps[i].doc == at {
		return ps[i].tf
	}
	return 0
}

// expand returns the RM3 query for q given its first-pass results top (best first). Caller holds a lock.
func (ix *Index) expand(q []qterm, top []scored, r RM3) []qterm {
	if len(top) == 0 {
		return q
	}
	n := float64(ix.live)
	rel := map[int32]float64{}
	for _, c := range top {
		e := &ix.entries[c.at]
		if e.length <= 0 {
			continue
		}
		e.terms.each(func(id int32) {
			if r.MaxDF > 0 && float64(ix.df[id]) > r.MaxDF*n {
				return
			}
			rel[id] += float64(c.score) * float64(ix.tf(id, c.at)) / float64(e.length)
		})
	}
	fb := make([]qterm, 0, len(rel))
	for id, w := range rel {
		fb = append(fb, qterm{id, w})
	}
	// heaviest first, ties by term id, so that the expansion does not depend on map order
	slices.SortFunc(fb, func(a, b qterm) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	fb = fb[:min(len(fb), r.Terms)]
	var fbSum float64
	for _, t := range fb {
		fbSum += t.w
	}
	out := map[int32]float64{}
	for _, t := range q {
		out[t.id] += r.OrigWeight * t.w / float64(len(q))
	}
	if fbSum > 0 {
		for _, t := range fb {
			out[t.id] += (1 - r.OrigWeight) * t.w / fbSum
		}
	}
	expanded := make([]qterm, 0, len(out))
	for id, w := range out {
		expanded = append(expanded, qterm{id, w})
	}
	slices.SortFunc(expanded, func(a, b qterm) int { return cmp.Compare(a.id, b.id) }) // a fixed summing order
	return expanded
}

// Tune replaces the query-time parameters (K1, B, Delta and the RM3 settings) of a built index: they are
// applied at search, so changing them needs no re-indexing (`docmind eval --sweep` measures a grid
// this way). The field weights are baked into the postings: a p with other weights is invalid.
func (ix *Index) Tune(p Params) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if p.TitleWeight != ix.p.TitleWeight || p.ContextWeight != ix.p.ContextWeight {
		return rag.Errorf("bm25.Tune", rag.KindInvalid, "field weights are set at indexing (title %v, context %v), not %v and %v",
			ix.p.TitleWeight, ix.p.ContextWeight, p.TitleWeight, p.ContextWeight)
	}
	if p.K1 <= 0 || p.B < 0 || p.B > 1 {
		return rag.Errorf("bm25.Tune", rag.KindInvalid, "k1 %v must be positive and b %v within [0, 1]", p.K1, p.B)
	}
	ix.p = p
	return nil
}
