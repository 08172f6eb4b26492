package claims

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/lang"
)

// The claim checks on the passages of ../shared/datasets (skipped without them), quotes not taken as
// such, so that the fact-by-fact checks are what is measured:
//   - every sentence of a passage, cited against that passage, is a right claim: it must be supported
//     (a false "unsupported" is as bad as a false "supported");
//   - the same sentence with one of its numbers replaced by a number of another sentence of the
//     passage is a wrong claim (finding 1 of the review): it must not be.
//
// The shares are logged; run with -v to read them.
func TestClaimsOnDatasets(t *testing.T) {
	for _, name := range []string{"cmrc2018", "hotpotqa"} {
		passages, err := loadCorpus(filepath.Join("..", "..", "..", "shared", "datasets", name, "corpus.jsonl"), 400)
		if err != nil {
			t.Skipf("datasets not here: %v", err)
		}
		right, rightOK, wrong, wrongCaught, named, namedCaught := 0, 0, 0, 0, 0, 0
		var missed, rejected []string
		for k, p := range passages {
			other := passages[(k+1)%len(passages)].title
			facts := []*passageFacts{newPassageFacts(ev(p.title, p.text, 1))}
			sentences := lang.SplitSentences(p.text)
			for i, s := range sentences {
				s = strings.TrimSpace(s)
				if utf8.RuneCountInString(s) < 8 {
					continue
				}
				right++
				if ok, why, _ := checkClaimQuotes(s, []int{1}, facts, false); ok {
					rightOK++
				} else if len(rejected) < 8 {
					rejected = append(rejected, fmt.Sprintf("%s (%s)", s, why))
				}
				if swapped, ok := swapName(s, other, p.text); ok {
					named++
					if ok, _, _ := checkClaimQuotes(swapped, []int{1}, facts, false); !ok {
						namedCaught++
					}
				}
				if swapped, ok := swapNumber(s, sentences, i); ok {
					wrong++
					if ok, _, _ := checkClaimQuotes(swapped, []int{1}, facts, false); !ok {
						wrongCaught++
					} else if len(missed) < 8 {
						missed = append(missed, swapped)
					}
				}
			}
		}
		rightShare, caughtShare := float64(rightOK)/float64(max(1, right)), float64(wrongCaught)/float64(max(1, wrong))
		t.Logf("%s: %d passages; right sentences supported %d/%d (%.3f); numbers swapped from another sentence caught %d/%d (%.3f); first name swapped for the next passage's title caught %d/%d (%.3f)",
			name, len(passages), rightOK, right, rightShare, wrongCaught, wrong, caughtShare, namedCaught, named, float64(namedCaught)/float64(max(1, named)))
		for _, r := range rejected {
			t.Logf("  right but unsupported: %s", r)
		}
		for _, m := range missed {
			t.Logf("  wrong but supported: %s", m)
		}
		if nameShare := float64(namedCaught) / float64(max(1, named)); rightShare < 0.99 || caughtShare < 0.85 || nameShare < 0.9 {
			t.Errorf("%s: right claims supported %.3f (want >= 0.99), swapped numbers caught %.3f (want >= 0.85), swapped names caught %.3f (want >= 0.9)",
				name, rightShare, caughtShare, nameShare)
		}
	}
}

type corpusPassage struct{ title, text string }

func loadCorpus(path string, n int) ([]corpusPassage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []corpusPassage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() && len(out) < n {
		var d struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, err
		}
		out = append(out, corpusPassage{d.Title, d.Text})
	}
	return out, sc.Err()
}

// swapNumber replaces the first number of sentence i that is not part of a date with a number that
// another sentence states and sentence i does not (false when there is none).
func swapNumber(s string, sentences []string, i int) (string, bool) {
	folded := lang.FoldLower(s)
	own := lang.ExtractNumbers(lang.MaskDates(folded, lang.ExtractDates(folded)))
	if len(own) == 0 || !strings.Contains(s, own[0].Raw) {
		return "", false
	}
	mine := lang.NumbersOf(folded)
	for j, o := range sentences {
		if j == i {
			continue
		}
		fo := lang.FoldLower(o)
		for _, n := range lang.ExtractNumbers(lang.MaskDates(fo, lang.ExtractDates(fo))) {
			if !mine.Has(n.Value) && n.Raw != "" && !strings.ContainsAny(n.Raw, "万亿千百十") {
				return strings.Replace(s, own[0].Raw, n.Raw, 1), true
			}
		}
	}
	return "", false
}

// swapName replaces the first name the sentence states (claimNames: a capitalised word, the first one
// too, or a Chinese place after 位于) with the title of another passage, in the same script, that
// this passage does not name (false when there is none).
func swapName(s, title, passage string) (string, bool) {
	names := lang.ClaimNames(s)
	if len(names) == 0 || title == "" || strings.Contains(lang.FoldLower(passage), lang.FoldLower(title)) || lang.HasCJK(names[0]) != lang.HasCJK(title) {
		return "", false
	}
	return strings.Replace(s, names[0], title, 1), true
}
