package rank

// FilterOptions are QAnything's two filter layers (seed 001).
type FilterOptions struct {
	Floor float64 // drop scores below it, unless that empties the list (default 0.28)
	Drop  float64 // cut at the first score this far below the top, relative (default 0.5)
}

// Filter keeps evidence (sorted best first) that passes both layers: an absolute floor, then a cut at
// the first relative drop of Drop or more from the top score; the top item always survives. Then
// duplicates by content are removed (the same paragraph in two files is one piece of evidence).
func Filter(ev []Evidence, o FilterOptions) []Evidence {
	if o.Floor == 0 {
		o.Floor = 0.28
	}
	if o.Drop == 0 {
		o.Drop = 0.5
	}
	if len(ev) == 0 {
		return ev
	}
	var kept []Evidence
	for _, e := range ev {
		if e.Score >= o.Floor {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		kept = append([]Evidence(nil), ev...) // better something than nothing
	}
	top := kept[0].Score
	out := kept[:1]
	for _, e := range kept[1:] {
		if top > 0 && (top-e.Score)/top >= o.Drop {
			break // a quality cliff: everything after it is worse still
		}
		out = append(out, e)
	}
	return Dedupe(out)
}

// Dedupe removes evidence whose text (white space folded) was already seen, keeping the first (best).
func Dedupe(ev []Evidence) []Evidence {
	seen := make(map[string]bool, len(ev))
	out := ev[:0:0]
	var buf []byte // each key folded into one array; only a new key is copied out as a string
	for _, e := range ev {
		k := appendFold(buf, e.ChildText, "\x00", e.Text)
		buf = k.b
		if seen[string(k.b)] {
			continue
		}
		seen[string(k.b)] = true
		out = append(out, e)
	}
	return out
}
