package retrieve

import "github.com/docmind/docmind/shared/rank"

// Cut is the reader's cut: the first k candidates of the ranked list whose parents differ. Parent
// expansion gives the reader each parent once, so a second child of a parent already kept used to take
// one of the k slots and then vanish at expansion, and the reader got fewer passages than k. Measured on
// the development splits (docs/eval/retrieval.md): SciFact's 8 chunks covered too few documents. A
// candidate without a parent counts as its own.
func Cut(ranked []rank.Evidence, k int) []rank.Evidence {
	seen := make(map[string]bool, k)
	out := make([]rank.Evidence, 0, min(k, len(ranked)))
	for _, e := range ranked {
		if len(out) == k {
			break
		}
		key := e.ParentID
		if key == "" {
			key = "\x00" + e.ChunkID
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}
