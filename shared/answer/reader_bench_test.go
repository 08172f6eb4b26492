package answer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/inject"
	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/answer/reader"
	"github.com/docmind/docmind/shared/text"

	"github.com/docmind/docmind/shared/rank"
)

// benchEvidence is eight passages of about 800 characters, the size the compression stage leaves.
func benchEvidence() []rank.Evidence {
	var ev []rank.Evidence
	for i := range 8 {
		var b strings.Builder
		for b.Len() < 800 {
			b.WriteString("Georges-Henri Bousquet (21 June 1900, Meudon – 23 January 1978) was a French jurist and Islamologist. ")
			b.WriteString("He is known for his translation of Ibn Khaldun, a Tunisian historian of North African Arab heritage. ")
		}
		ev = append(ev, rank.Evidence{ChunkID: string(rune('a' + i)), Text: b.String(), ChildText: b.String()[:200], Score: 1 / float64(i+1)})
	}
	return ev
}

const benchQ = "Georges-Henri Bousquet translated the work of a historian who is of what heritage?"

// BenchmarkAnswerStage measures what issue #13 added to each question, the reader with its claim
// checks and calibrated confidence against the reader and confidence before it, in the same run
// (compare the two ns/op; a question's whole pipeline is 3 to 5 ms p50 in docs/eval/answers.md).
func BenchmarkAnswerStage(b *testing.B) {
	ev := benchEvidence()
	g := rank.Grade{Tier: rank.TierHigh, Coverage: 0.8}
	cal := ShippedCalibrations()
	b.Run("before", func(b *testing.B) {
		for b.Loop() {
			Score(legacyCompose(benchQ, ev), len(ev), g, false)
		}
	})
	b.Run("after", func(b *testing.B) {
		for b.Loop() {
			Assess(benchQ, Extractive{}.Compose(benchQ, ev), "extractive", ev, g, false, cal)
		}
	})
}

type legacyCandidate struct {
	src, pos int
	text     string
	score    float64
	cover    float64
}

// legacyCompose is the extractive answerer before issue #13 (commit 795f717), kept as the reference
// the benchmark measures the new reader against in the same run.
func legacyCompose(query string, ev []rank.Evidence) string {
	x := struct{ MaxSentences, PerSource, MaxSentRunes, SourcesToRead int }{4, 2, 400, 5}
	if len(ev) == 0 {
		return reader.NoEvidenceAnswer
	}
	q := map[string]float64{}
	for _, t := range text.Analyze(query) {
		q[t] = math.Max(1, float64(utf8.RuneCountInString(t))/4) // longer terms (names, jargon) weigh more
	}
	var total float64
	for _, w := range q {
		total += w
	}
	var cands []legacyCandidate
	for i, e := range ev[:min(len(ev), x.SourcesToRead)] {
		body := e.Text
		if strings.TrimSpace(body) == "" {
			body = e.ChildText
		}
		for j, s := range lang.SplitSentences(body) {
			s = reader.CleanSentence(s)
			if utf8.RuneCountInString(s) < 12 {
				continue
			}
			seen := map[string]bool{}
			var hit float64
			terms := text.Analyze(s)
			for _, t := range terms {
				if w, ok := q[t]; ok && !seen[t] {
					seen[t] = true
					hit += w
				}
			}
			if hit == 0 || total == 0 {
				continue
			}
			// Coverage of the question, lightly favouring short sentences and better-ranked sources.
			score := hit/total - 0.02*math.Log1p(float64(len(terms))) + 0.05/float64(i+1)
			cands = append(cands, legacyCandidate{src: i, pos: j, text: lang.Truncate(s, x.MaxSentRunes), score: score, cover: hit / total})
		}
	}
	if len(cands) == 0 {
		return reader.NoMatchAnswer
	}
	slices.SortStableFunc(cands, func(a, b legacyCandidate) int { return cmp.Compare(b.score, a.score) })
	// Keep only sentences that cover at least half as much of the question as the best one: a sentence
	// that shares one common word with the question is noise next to one that answers it.
	floor := cands[0].cover / 2
	var picked []legacyCandidate
	perSource := map[int]int{}
	seenText := map[string]bool{}
	for _, c := range cands {
		if len(picked) == x.MaxSentences {
			break
		}
		key := strings.ToLower(c.text)
		if c.cover < floor || perSource[c.src] == x.PerSource || seenText[key] {
			continue
		}
		perSource[c.src]++
		seenText[key] = true
		picked = append(picked, c)
	}
	// Read in source order, then document order, so quotes from one passage stay together.
	slices.SortFunc(picked, func(a, b legacyCandidate) int {
		if a.src != b.src {
			return a.src - b.src
		}
		return a.pos - b.pos
	})
	if len(picked) == 0 {
		return reader.NoEvidenceAnswer
	}
	var b strings.Builder
	b.WriteString(reader.OfflineNotice)
	b.WriteString("\n")
	for _, c := range picked {
		fmt.Fprintf(&b, "\n- %s [%d]", c.text, c.src+1)
	}
	return b.String()
}

// BenchmarkAnswerStageQuestions measures the same two answer stages on every question of the train
// splits of ../shared/datasets that has gold answers (CMRC 2018 and HotpotQA), each question over its
// own passages: the documents judged relevant, then the next documents of the corpus as distractors,
// cut to eight passages of at most 800 characters (what compression leaves). Each stage runs three
// times per question, interleaved, and the fastest run counts, so a spike of the shared machine does
// not read as a slow question. It reports, per dataset, the added milliseconds per question at p50,
// p95 and the maximum (the ten slowest re-timed; the one-pass maximum beside it): issue #13 allows no
// question more than 2 ms over today's p95. Run with -benchtime 1x; skipped without the datasets.
func BenchmarkAnswerStageQuestions(b *testing.B) {
	for _, name := range []string{"cmrc2018", "hotpotqa"} {
		qs, err := loadBenchQuestions(filepath.Join("..", "..", "..", "shared", "datasets", name))
		if err != nil {
			b.Skipf("datasets not here: %v", err)
		}
		b.Run(name, func(b *testing.B) {
			added := make([]float64, len(qs))
			for b.Loop() {
				for i, q := range qs {
					added[i] = q.addedMS(3)
				}
			}
			// The ten slowest are timed again, twenty times each: on a shared machine the slowest
			// question of one pass is seldom that of the next, so the maximum is the worst of these.
			order := make([]int, len(qs))
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(x, y int) int { return cmp.Compare(added[y], added[x]) })
			worst, worstMS := "", 0.0
			for _, i := range order[:min(10, len(order))] {
				if ms := qs[i].addedMS(20); ms > worstMS {
					worst, worstMS = qs[i].text, ms
				}
			}
			b.Logf("slowest question, re-timed (%.2f ms added): %s", worstMS, worst)
			sorted := slices.Clone(added)
			slices.Sort(sorted)
			at := func(p float64) float64 { return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))] }
			b.ReportMetric(float64(len(qs)), "questions")
			b.ReportMetric(at(0.5), "added-p50-ms")
			b.ReportMetric(at(0.95), "added-p95-ms")
			b.ReportMetric(sorted[len(sorted)-1], "added-max-1pass-ms")
			b.ReportMetric(worstMS, "added-max-ms")
		})
	}
}

// addedMS is how many milliseconds the answer stage after issue #13 takes over the one before it on
// this question: each runs reps times, interleaved, and the fastest run of each counts.
func (q benchQuestion) addedMS(reps int) float64 {
	g := rank.Grade{Tier: rank.TierHigh, Coverage: 0.8}
	cal := shippedOnce()
	old, cur := math.Inf(1), math.Inf(1)
	for range reps {
		t0 := time.Now()
		Score(legacyCompose(q.text, q.ev), len(q.ev), g, false)
		t1 := time.Now()
		Assess(q.text, Extractive{}.Compose(q.text, q.ev), "extractive", q.ev, g, false, cal)
		t2 := time.Now()
		old, cur = math.Min(old, t1.Sub(t0).Seconds()), math.Min(cur, t2.Sub(t1).Seconds())
	}
	return 1000 * (cur - old)
}

var shippedOnce = sync.OnceValue(ShippedCalibrations)

type benchQuestion struct {
	text string
	ev   []rank.Evidence
}

// loadBenchQuestions reads a BEIR folder's questions that have gold answers, each with its passages.
func loadBenchQuestions(dir string) ([]benchQuestion, error) {
	type doc struct {
		ID    string `json:"_id"`
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	var docs []doc
	pos := map[string]int{}
	texts := map[string]string{}
	answered := map[string]bool{}
	err := eachJSONLine(filepath.Join(dir, "corpus.jsonl"), func(line []byte) error {
		var d doc
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		pos[d.ID] = len(docs)
		docs = append(docs, d)
		return nil
	})
	if err == nil {
		err = eachJSONLine(filepath.Join(dir, "answers.jsonl"), func(line []byte) error {
			var a struct {
				ID string `json:"_id"`
			}
			err := json.Unmarshal(line, &a)
			answered[a.ID] = true
			return err
		})
	}
	if err == nil {
		err = eachJSONLine(filepath.Join(dir, "queries.jsonl"), func(line []byte) error {
			var q struct {
				ID   string `json:"_id"`
				Text string `json:"text"`
			}
			err := json.Unmarshal(line, &q)
			texts[q.ID] = q.Text
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	rel, err := os.ReadFile(filepath.Join(dir, "qrels", "train.tsv"))
	if err != nil {
		return nil, err
	}
	relevant := map[string][]int{}
	var order []string
	for _, l := range strings.Split(string(rel), "\n")[1:] {
		f := strings.Split(l, "\t")
		if len(f) < 2 || !answered[f[0]] {
			continue
		}
		if _, ok := pos[f[1]]; !ok {
			continue
		}
		if relevant[f[0]] == nil {
			order = append(order, f[0])
		}
		relevant[f[0]] = append(relevant[f[0]], pos[f[1]])
	}
	var out []benchQuestion
	for _, id := range order {
		var ev []rank.Evidence
		add := func(d doc) {
			for _, p := range cutRunes(d.Text, 800) {
				if len(ev) < 8 {
					ev = append(ev, rank.Evidence{ChunkID: fmt.Sprint(d.ID, len(ev)), FileName: d.Title, Text: p, ChildText: p, Score: 1 / float64(len(ev)+1)})
				}
			}
		}
		for _, i := range relevant[id] {
			add(docs[i])
		}
		for k := 1; len(ev) < 8 && k <= 8; k++ {
			add(docs[(relevant[id][0]+k)%len(docs)])
		}
		out = append(out, benchQuestion{text: texts[id], ev: ev})
	}
	return out, nil
}

func eachJSONLine(path string, fn func([]byte) error) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

// cutRunes cuts s into pieces of at most n runes.
func cutRunes(s string, n int) []string {
	r := []rune(s)
	var out []string
	for len(r) > n {
		out, r = append(out, string(r[:n])), r[n:]
	}
	return append(out, string(r))
}

// BenchmarkInjectionChecks measures what the injection checks add to a question (issue #20): the
// passages flagged and the answer cleaned, as the reader and the pipeline each do, against the reader
// itself in the same run.
func BenchmarkInjectionChecks(b *testing.B) {
	ev := benchEvidence()
	answer := Extractive{}.Compose(benchQ, ev)
	b.Run("reader", func(b *testing.B) {
		for b.Loop() {
			Extractive{}.Read(benchQ, ev)
		}
	})
	b.Run("checks", func(b *testing.B) {
		for b.Loop() {
			inject.Passages(ev)                              // the pipeline's flags
			inject.Sanitise(answer, ev, inject.Passages(ev)) // the reader's
		}
	})
}
