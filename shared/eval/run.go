package eval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Retriever ranks corpus document ids for a query (best first, no duplicates).
type Retriever func(ctx context.Context, query string, k int) ([]string, error)

// QueryResult is one query's outcome.
type QueryResult struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	NDCG10   float64  `json:"ndcg@10"`
	Recall10 float64  `json:"recall@10"`
	Millis   float64  `json:"ms"`
	Top      []string `json:"top,omitempty"`
	Relevant []string `json:"relevant,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// Result is one variant's report.
type Result struct {
	Dataset   string        `json:"dataset"`
	Split     string        `json:"split"`
	Variant   string        `json:"variant"`
	Queries   int           `json:"queries"`
	NDCG10    float64       `json:"ndcg@10"`
	Recall10  float64       `json:"recall@10"`
	Recall100 float64       `json:"recall@100"`
	MRR10     float64       `json:"mrr@10"`
	P50ms     float64       `json:"p50_ms"`
	P95ms     float64       `json:"p95_ms"`
	Errors    int           `json:"errors"`
	Worst     []QueryResult `json:"worst"` // the lowest nDCG@10 queries, for reading failures
}

// Run evaluates r on every query of ds, asking for the top k (at least 100, for Recall@100).
func Run(ctx context.Context, ds *Dataset, variant string, r Retriever, k int) Result {
	res := Result{Dataset: ds.Name, Split: ds.Split, Variant: variant, Queries: len(ds.Queries)}
	k = max(k, 100)
	var lat []float64
	var all []QueryResult
	for _, q := range ds.Queries {
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		ranked, err := r(ctx, q.Text, k)
		ms := float64(time.Since(start).Microseconds()) / 1000
		lat = append(lat, ms)
		rel := ds.Qrels[q.ID]
		qr := QueryResult{ID: q.ID, Text: q.Text, Millis: ms}
		if err != nil {
			res.Errors++
			qr.Error = err.Error()
		} else {
			qr.NDCG10, qr.Recall10 = NDCG(ranked, rel, 10), Recall(ranked, rel, 10)
			res.NDCG10 += qr.NDCG10
			res.Recall10 += qr.Recall10
			res.Recall100 += Recall(ranked, rel, 100)
			res.MRR10 += MRR(ranked, rel, 10)
			qr.Top = ranked[:min(3, len(ranked))]
		}
		for id, g := range rel {
			if g > 0 {
				qr.Relevant = append(qr.Relevant, id)
			}
		}
		slices.Sort(qr.Relevant)
		all = append(all, qr)
	}
	if n := float64(len(ds.Queries)); n > 0 {
		res.NDCG10 /= n
		res.Recall10 /= n
		res.Recall100 /= n
		res.MRR10 /= n
	}
	slices.Sort(lat)
	res.P50ms, res.P95ms = percentile(lat, 0.50), percentile(lat, 0.95)
	slices.SortStableFunc(all, func(a, b QueryResult) int {
		switch {
		case a.NDCG10 < b.NDCG10:
			return -1
		case a.NDCG10 > b.NDCG10:
			return 1
		}
		return 0
	})
	res.Worst = all[:min(10, len(all))]
	return res
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted)-1) + 0.5)
	return sorted[i]
}

// Markdown renders results as a report: one row per variant, then each variant's worst queries.
func Markdown(rs []Result) string {
	var b strings.Builder
	if len(rs) == 0 {
		return ""
	}
	fmt.Fprintf(&b, "# Retrieval evaluation: %s (%s split, %d queries)\n\n", rs[0].Dataset, rs[0].Split, rs[0].Queries)
	b.WriteString("| variant | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | p50 ms | p95 ms | errors |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.4f | %.4f | %.4f | %.4f | %.2f | %.2f | %d |\n", r.Variant, r.NDCG10, r.Recall10, r.Recall100, r.MRR10, r.P50ms, r.P95ms, r.Errors)
	}
	for _, r := range rs {
		fmt.Fprintf(&b, "\n## Worst queries: %s\n\n| query | nDCG@10 | top 3 | relevant |\n|---|---|---|---|\n", r.Variant)
		for _, q := range r.Worst {
			text := q.Text
			if len([]rune(text)) > 80 {
				text = string([]rune(text)[:80]) + "..."
			}
			text = strings.ReplaceAll(text, "|", "\\|")
			fmt.Fprintf(&b, "| %s: %s | %.3f | %s | %s |\n", q.ID, text, q.NDCG10, strings.Join(q.Top, " "), strings.Join(q.Relevant, " "))
		}
	}
	return b.String()
}
