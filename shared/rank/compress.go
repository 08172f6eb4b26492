package rank

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/text"
)

// compareBuf is one text's bigrams and folded form as Compress and MMR compare them. The chain
// compresses every question's evidence: pooled, these arrays stopped being a fifth of its allocations
// at 100k chunks (docs/bench/million.md).
type compareBuf struct {
	grams gramSet
	text  folded
}

var comparePool = sync.Pool{New: func() any { return new(compareBuf) }}

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
	var bufs []*compareBuf // each kept text's bigrams and folded text, made once, not once per comparison
	defer func() {
		for _, b := range bufs {
			comparePool.Put(b)
		}
	}()
	var next *compareBuf
	for _, e := range ev {
		if next == nil {
			next = comparePool.Get().(*compareBuf)
		}
		next.grams = appendBigrams(next.grams, e.Text)
		next.text = appendFold(next.text.b, e.Text)
		dup := false
		for _, b := range bufs {
			if containsFolded(b.text, next.text) || jaccardSets(b.grams, next.grams) >= o.NearDup {
				dup = true
				break
			}
		}
		if !dup {
			kept = append(kept, e)
			bufs = append(bufs, next)
			next = nil
		}
	}
	if next != nil {
		comparePool.Put(next)
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
	n := utf8.RuneCountInString(s)
	if n <= size {
		return s
	}
	// positions are counted in characters and walked in bytes: a parent's []rune was a third of the
	// chain's allocations at 100k chunks (docs/bench/million.md)
	center := 0
	if focus != "" {
		body := focus
		if i := strings.LastIndex(focus, "\n\n"); i >= 0 && strings.HasPrefix(strings.TrimSpace(focus), "#") {
			body = focus[i+2:] // the child's body: its heading lines are also in the parent's head
		}
		probe := body[:runeOffset(body, 60)]
		if !utf8.ValidString(probe) {
			probe = string([]rune(probe))
		}
		if at := strings.Index(s, probe); at >= 0 {
			center = utf8.RuneCountInString(s[:at]) + min(utf8.RuneCountInString(body), size)/2
		}
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // an invalid byte becomes U+FFFD, one character as it was counted
	}
	start := max(0, center-size/2)
	end := min(n, start+size)
	start = max(0, end-size)
	bs, be := runeOffset(s, start), runeOffset(s, end)
	// snap outwards to sentence ends (but never more than a fifth of the window)
	for k := 0; start > 0 && k < size/5; k++ {
		r, w := utf8.DecodeLastRuneInString(s[:bs])
		if sentenceEnd(r) {
			break
		}
		start, bs = start-1, bs-w
	}
	for k := 0; end < n && k < size/5; k++ {
		if r, _ := utf8.DecodeLastRuneInString(s[:be]); sentenceEnd(r) {
			break
		}
		_, w := utf8.DecodeRuneInString(s[be:])
		end, be = end+1, be+w
	}
	return strings.TrimSpace(s[bs:be])
}

// runeOffset is the byte offset of s's i-th character (len(s) when it has fewer).
func runeOffset(s string, i int) int {
	for b := range s {
		if i == 0 {
			return b
		}
		i--
	}
	return len(s)
}

func sentenceEnd(r rune) bool {
	return strings.ContainsRune("。！？；\n", r) || r == '.' || r == '!' || r == '?' || unicode.Is(unicode.Zl, r)
}
