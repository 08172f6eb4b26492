package rank

import "github.com/docmind/docmind/shared/rag"

// ExpandParents replaces each child by its parent's text (Parent Document Retrieval: small chunks are
// precise to find, their parents give the model the surrounding context), keeping only the best child
// per parent and remembering its text for the focus window. Children without a known parent stay as
// they are. Order (best first) is kept.
func ExpandParents(ev []Evidence, parents map[string]rag.ChunkText) []Evidence {
	seen := map[string]bool{}
	out := make([]Evidence, 0, len(ev))
	for _, e := range ev {
		if e.ChildText == "" {
			e.ChildText = e.Text
		}
		p, ok := parents[e.ParentID]
		if !ok || e.ParentID == "" {
			out = append(out, e)
			continue
		}
		if seen[e.ParentID] {
			continue
		}
		seen[e.ParentID] = true
		e.Text = p.Content
		if p.Chapter != "" && e.Chapter == "" {
			e.Chapter = p.Chapter
		}
		out = append(out, e)
	}
	return out
}
