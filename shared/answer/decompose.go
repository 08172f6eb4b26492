package answer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

// PathDecomposed retrieves each sub-question separately and merges the evidence.
const PathDecomposed = "DECOMPOSED"

// decomposedParallelism bounds the sub-queries retrieved at once.
const decomposedParallelism = 4

// retrieveDecomposed runs the sub-queries in parallel (at most decomposedParallelism at a time) and
// merges them into one result of at most k items; served maps a chunk id to the sub-questions it
// serves. A failing sub-query degrades ("subquery"); all failing is an error.
func retrieveDecomposed(ctx context.Context, r Retriever, subs []string, f rag.Filter, k int) (*retrieve.Result, map[string][]string, error) {
	results := make([]*retrieve.Result, len(subs))
	errs := make([]error, len(subs))
	sem := make(chan struct{}, decomposedParallelism)
	var wg sync.WaitGroup
	for i, q := range subs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], errs[i] = r.Retrieve(ctx, retrieve.Query{Text: q, Filter: f})
			if errs[i] == nil && results[i] == nil {
				errs[i] = fmt.Errorf("sub-query %d: no result", i+1)
			}
		})
	}
	wg.Wait()
	merged := &retrieve.Result{StageMS: map[string]int64{}}
	var lists [][]rank.Evidence
	var listSubs []string
	tiers := []string{}
	failed := 0
	for i, res := range results {
		if errs[i] != nil {
			failed++
			continue
		}
		lists, listSubs = append(lists, res.Evidence), append(listSubs, subs[i])
		merged.Keyword = append(merged.Keyword, res.Keyword...)
		merged.Vector = append(merged.Vector, res.Vector...)
		merged.Fused = append(merged.Fused, res.Fused...)
		merged.Reranked = append(merged.Reranked, res.Reranked...)
		for _, d := range res.Degraded {
			if !slices.Contains(merged.Degraded, d) {
				merged.Degraded = append(merged.Degraded, d)
			}
		}
		for s, ms := range res.StageMS {
			merged.StageMS[s] = max(merged.StageMS[s], ms) // parallel: the slowest sub-query's time
		}
		merged.Grade.TopScore = max(merged.Grade.TopScore, res.Grade.TopScore)
		tiers = append(tiers, res.Grade.Tier)
		merged.Profile = res.Profile
	}
	if failed == len(subs) {
		return nil, nil, errs[0]
	}
	if failed > 0 {
		merged.Degraded = append(merged.Degraded, "subquery")
	}
	slices.SortStableFunc(merged.Reranked, func(a, b rank.Evidence) int { return cmp.Compare(b.Score, a.Score) })
	var served map[string][]string
	merged.Evidence, served = Merge(lists, listSubs, k)
	// The weakest sub-question sets the tier: one well-answered part does not make the whole answer strong.
	merged.Grade.Tier = rank.TierHigh
	for _, t := range tiers {
		if t == rank.TierLow || (t == rank.TierAmbiguous && merged.Grade.Tier == rank.TierHigh) {
			merged.Grade.Tier = t
		}
	}
	merged.Grade.NoEvidence = len(merged.Evidence) == 0
	merged.Grade.Reason = fmt.Sprintf("weakest of %d sub-questions", len(lists))
	if merged.Grade.NoEvidence {
		merged.Grade.Tier = rank.TierLow
	}
	return merged, served, nil
}

// Merge combines ranked lists, one per sub-question, into at most k items: each sub-question first
// gets up to ceil(k/N) of its best items (so none is crowded out), the remaining room goes to the best
// leftovers by score, and the output interleaves the sub-questions by rank. A chunk found by several
// sub-questions appears once and serves them all.
func Merge(lists [][]rank.Evidence, subs []string, k int) ([]rank.Evidence, map[string][]string) {
	served := map[string][]string{}
	n := len(lists)
	if n == 0 || k <= 0 {
		return []rank.Evidence{}, served
	}
	floor := (k + n - 1) / n
	for i, l := range lists {
		for _, e := range l {
			if !slices.Contains(served[e.ChunkID], subs[i]) {
				served[e.ChunkID] = append(served[e.ChunkID], subs[i])
			}
		}
	}
	picked := map[string]bool{}
	perList := make([][]rank.Evidence, n)
	total := 0
	// Floor phase, round-robin so that when N*floor exceeds k no sub-question is crowded out by the ones
	// before it.
	next := make([]int, n)
	for progress := true; progress && total < k; {
		progress = false
		for i, l := range lists {
			if total == k || len(perList[i]) == floor {
				continue
			}
			for next[i] < len(l) && picked[l[next[i]].ChunkID] {
				next[i]++
			}
			if next[i] == len(l) {
				continue
			}
			e := l[next[i]]
			picked[e.ChunkID] = true
			perList[i] = append(perList[i], e)
			total++
			progress = true
		}
	}
	type left struct {
		list int
		e    rank.Evidence
	}
	var rest []left
	for i, l := range lists {
		for _, e := range l {
			if !picked[e.ChunkID] {
				rest = append(rest, left{i, e})
			}
		}
	}
	slices.SortStableFunc(rest, func(a, b left) int { return cmp.Compare(b.e.Score, a.e.Score) })
	for _, r := range rest {
		if total == k {
			break
		}
		if picked[r.e.ChunkID] {
			continue
		}
		picked[r.e.ChunkID] = true
		perList[r.list] = append(perList[r.list], r.e)
		total++
	}
	out := make([]rank.Evidence, 0, total)
	for depth := 0; len(out) < total; depth++ {
		for i := range perList {
			if depth < len(perList[i]) {
				out = append(out, perList[i][depth])
			}
		}
	}
	for id := range served {
		if !picked[id] {
			delete(served, id)
		}
	}
	return out, served
}

// decomposedQuestion tells the model the parts it must answer.
func decomposedQuestion(q string, subs []string) string {
	var b strings.Builder
	b.WriteString(q)
	b.WriteString("\n\nThe question has parts; answer each one, citing the passages for it:")
	for i, s := range subs {
		fmt.Fprintf(&b, "\n%d. %s", i+1, s)
	}
	return b.String()
}
