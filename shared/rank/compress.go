package rank

import (
	"strings"
	"unicode"

	"github.com/docmind/docmind/shared/text"
)

// CompressOptions bound the evidence that reaches the prompt.
type CompressOptions struct {
	Window      int     // characters kept around the matched child in an over-long text (default 800)
	TokenBudget int     // total estimated tokens (default 3,000)
	NearDup     float64 // bigram Jaccard at which two texts count as the same (default 0.85)
}

// Compress removes near-duplicates (one text contained in another, or bigram Jaccard >= NearDup), cuts
// texts longer than Window to a window centred on the matched child text and snapped to sentence ends,
// and fits the total into TokenBudget: an item that does not fit is skipped and the next ones are still
// tried; at least one item is always kept (cut to the budget if it alone is too long).
func Compress(ev []Evidence, o CompressOptions) []Evidence {
	if o.Window <= 0 {
		o.Window = 800
	}
	if o.TokenBudget <= 0 {
		o.TokenBudget = 3000
	}
	if o.NearDup <= 0 {
		o.NearDup = 0.85
	}
	var kept []Evidence
	var grams []gramSet
	var texts []folded // each kept text folded once, not once per comparison
	for _, e := range ev {
		g, t := bigrams(e.Text), fold(e.Text)
		dup := false
		for i := range kept {
			if containsFolded(texts[i], t) || jaccardSets(grams[i], g) >= o.NearDup {
				dup = true
				break
			}
		}
		if !dup {
			kept = append(kept, e)
			grams = append(grams, g)
			texts = append(texts, t)
		}
	}
	var out []Evidence
	used := 0
	for _, e := range kept {
		e.Text = Window(e.Text, e.ChildText, o.Window)
		n := text.EstimateTokens(e.Text)
		if used+n > o.TokenBudget {
			continue // skip it, a shorter one later may fit
		}
		used += n
		out = append(out, e)
	}
	if len(out) == 0 && len(kept) > 0 {
		e := kept[0]
		e.Text = cutToTokens(Window(e.Text, e.ChildText, o.Window), o.TokenBudget)
		out = append(out, e)
	}
	return out
}

func cutToTokens(s string, budget int) string {
	rs := []rune(s)
	lo, hi := 0, len(rs)
	for lo < hi { // the longest prefix within the budget
		mid := (lo + hi + 1) / 2
		if text.EstimateTokens(string(rs[:mid])) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(rs[:lo])
}

// Window returns s when it has at most size characters; otherwise about size characters centred on
// the first occurrence of focus (or its start), widened to the nearest sentence ends inside the text.
func Window(s, focus string, size int) string {
	rs := []rune(s)
	if len(rs) <= size {
		return s
	}
	center := 0
	if focus != "" {
		body := focus
		if i := strings.LastIndex(focus, "\n\n"); i >= 0 && strings.HasPrefix(strings.TrimSpace(focus), "#") {
			body = focus[i+2:] // the child's body: its heading lines are also in the parent's head
		}
		probe := []rune(body)
		if len(probe) > 60 {
			probe = probe[:60]
		}
		if at := strings.Index(s, string(probe)); at >= 0 {
			center = len([]rune(s[:at])) + min(len([]rune(body)), size)/2
		}
	}
	start := max(0, center-size/2)
	end := min(len(rs), start+size)
	start = max(0, end-size)
	// snap outwards to sentence ends (but never more than a fifth of the window)
	for k := 0; start > 0 && k < size/5 && !sentenceEnd(rs[start-1]); k++ {
		start--
	}
	for k := 0; end < len(rs) && k < size/5 && !sentenceEnd(rs[end-1]); k++ {
		end++
	}
	return strings.TrimSpace(string(rs[start:end]))
}

func sentenceEnd(r rune) bool {
	return strings.ContainsRune("。！？；\n", r) || r == '.' || r == '!' || r == '?' || unicode.Is(unicode.Zl, r)
}
