package main

// eval_sweep.go tunes the keyword leg (`docmind eval --sweep SPEC`): every setting of a grid over the
// BM25 parameters, field weights and RM3 feedback is measured on the datasets given (the development
// splits), and the setting chosen is the one with the best mean nDCG@10 among those no worse than the
// configured setting on any dataset and no slower than twice its p50 latency.

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/eval"
	"github.com/docmind/docmind/shared/rag"
)

// sweepKeys are the parameters a sweep spec may name, in the order settings are printed.
var sweepKeys = []string{"k1", "b", "delta", "title", "context", "fb_docs", "fb_terms", "orig_weight", "max_df"}

// sweepMaxSettings bounds a grid: each setting is one pass over every query of every dataset.
const sweepMaxSettings = 400

// sweepSetting is one point of the grid, by key.
type sweepSetting map[string]float64

// parseSweep reads "k1=0.9,1.2 b=0.4 fb_docs=0,10" (keys separated by spaces or semicolons, values by
// commas) into the grid's settings; keys not named keep base's value.
func parseSweep(spec string, base sweepSetting) ([]sweepSetting, error) {
	grid := []sweepSetting{{}}
	for k, v := range base {
		grid[0][k] = v
	}
	seen := map[string]bool{}
	for _, part := range strings.FieldsFunc(spec, func(r rune) bool { return r == ' ' || r == ';' }) {
		key, vals, ok := strings.Cut(part, "=")
		if !ok || !slices.Contains(sweepKeys, key) {
			return nil, fmt.Errorf("--sweep: %q is not key=v1,v2 with a key among %s", part, strings.Join(sweepKeys, ", "))
		}
		if seen[key] {
			return nil, fmt.Errorf("--sweep: %s named twice", key)
		}
		seen[key] = true
		var next []sweepSetting
		for _, s := range strings.Split(vals, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("--sweep: %s=%q is not a non-negative number", key, s)
			}
			for _, g := range grid {
				c := sweepSetting{}
				for k, x := range g {
					c[k] = x
				}
				c[key] = v
				next = append(next, c)
			}
		}
		grid = next
		if len(grid) > sweepMaxSettings {
			return nil, fmt.Errorf("--sweep: more than %d settings; sweep fewer values at a time", sweepMaxSettings)
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("--sweep: no parameter named (keys: %s)", strings.Join(sweepKeys, ", "))
	}
	return grid, nil
}

// sweepBase is the configured keyword leg as a setting; cjk selects the RM3 setting for CJK queries.
func sweepBase(r config.Retrieval, cjk bool) sweepSetting {
	fb := r.BM25Params().RM3
	if cjk {
		fb = r.BM25Params().RM3CJK
	}
	return sweepSetting{"k1": r.BM25K1, "b": r.BM25B, "delta": r.BM25Params().Delta, "title": r.BM25TitleWeight, "context": r.BM25ContextWeight,
		"fb_docs": float64(fb.Docs), "fb_terms": float64(fb.Terms), "orig_weight": fb.OrigWeight, "max_df": fb.MaxDF}
}

// params is the setting as BM25 parameters, with its RM3 for queries of either language (a sweep's
// datasets share one language).
func (s sweepSetting) params() bm25.Params {
	fb := bm25.RM3{Docs: int(s["fb_docs"]), Terms: int(s["fb_terms"]), OrigWeight: s["orig_weight"], MaxDF: s["max_df"]}
	return bm25.Params{K1: s["k1"], B: s["b"], Delta: s["delta"], TitleWeight: s["title"], ContextWeight: s["context"], RM3: fb, RM3CJK: fb}
}

func (s sweepSetting) String() string {
	var parts []string
	for _, k := range sweepKeys {
		parts = append(parts, fmt.Sprintf("%s=%g", k, s[k]))
	}
	return strings.Join(parts, " ")
}

// sweepRow is one setting's results, one per dataset.
type sweepRow struct {
	Setting string        `json:"setting"`
	Results []eval.Result `json:"results"`
	Mean    float64       `json:"mean_ndcg@10"`
	Chosen  bool          `json:"chosen,omitempty"`
}

// evalSweep measures every setting of spec on every dataset with the bm25 variant.
func evalSweep(e env, c common, cfg config.Config, dirs []string, split, spec string, k int) int {
	var cjk []bool
	var sets []*evalRetriever
	var names []string
	for _, dir := range dirs {
		ds, r, closeStores, err := openEval(e, c, cfg, dir, split)
		if err != nil {
			return fail(e, err)
		}
		defer closeStores()
		r.ds = ds
		sets = append(sets, r)
		names = append(names, ds.Name)
		n := 0
		for _, q := range ds.Queries {
			if bm25.IsCJKQuery(q.Text) {
				n++
			}
		}
		cjk = append(cjk, 2*n > len(ds.Queries))
	}
	for _, x := range cjk[1:] {
		if x != cjk[0] {
			return fail(e, rag.Errorf("eval", rag.KindInvalid, "--sweep: the datasets mix CJK and other queries; sweep each language on its own (its parameters are separate)"))
		}
	}
	base := sweepBase(cfg.Retrieval, cjk[0])
	grid, err := parseSweep(spec, base)
	if err != nil {
		return fail(e, rag.E("eval", rag.KindInvalid, err))
	}
	grid = append([]sweepSetting{base}, grid...) // the configured setting first: every other is judged against it
	var rows []sweepRow
	for i, s := range grid {
		if i > 0 && s.String() == base.String() {
			continue
		}
		row := sweepRow{Setting: s.String()}
		for _, r := range sets {
			r.reindex(s.params())
			res := eval.Run(e.ctx, r.ds, "bm25", r.retriever("bm25"), k)
			row.Results = append(row.Results, res)
			row.Mean += res.NDCG10 / float64(len(sets))
		}
		rows = append(rows, row)
		if !c.json {
			fmt.Fprintf(e.stderr, "\r\033[Ksweep: %d/%d settings", len(rows), len(grid))
		}
	}
	if !c.json {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	chooseSweep(rows)
	if c.json {
		printJSON(e.stdout, rows)
		return exitOK
	}
	writeSweep(e.stdout, rows, names, cjk[0])
	return exitOK
}

// chooseSweep marks the chosen row: the best mean nDCG@10 among the rows no worse than the first (the
// configured setting) on any dataset, and at most twice its p50 latency on each; the first row when no
// other qualifies.
func chooseSweep(rows []sweepRow) {
	best := 0
	for i, row := range rows {
		ok := true
		for j, res := range row.Results {
			ref := rows[0].Results[j]
			ok = ok && res.NDCG10 >= ref.NDCG10 && res.Errors == 0 && res.P50ms <= 2*ref.P50ms
		}
		if ok && row.Mean > rows[best].Mean {
			best = i
		}
	}
	rows[best].Chosen = true
}

func writeSweep(w io.Writer, rows []sweepRow, names []string, cjk bool) {
	fmt.Fprint(w, "| setting |")
	for _, n := range names {
		fmt.Fprintf(w, " %s nDCG@10 | p50 ms | p95 ms |", n)
	}
	fmt.Fprint(w, " mean |\n|---|")
	fmt.Fprint(w, strings.Repeat("---|---|---|", len(names)))
	fmt.Fprint(w, "---|\n")
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order[1:], func(a, b int) int { // the configured row first, then best first
		switch {
		case rows[a].Mean > rows[b].Mean:
			return -1
		case rows[a].Mean < rows[b].Mean:
			return 1
		}
		return 0
	})
	var chosen sweepRow
	for i, at := range order {
		row := rows[at]
		label := row.Setting
		if i == 0 {
			label += " (configured)"
		}
		if row.Chosen {
			label, chosen = "**"+label+"**", row
		}
		fmt.Fprintf(w, "| %s |", label)
		for _, res := range row.Results {
			fmt.Fprintf(w, " %.4f | %.2f | %.2f |", res.NDCG10, res.P50ms, res.P95ms)
		}
		fmt.Fprintf(w, " %.4f |\n", row.Mean)
	}
	lang := "queries not in CJK"
	if cjk {
		lang = "CJK queries"
	}
	fmt.Fprintf(w, "\nchosen (%s; the best mean nDCG@10 no worse than the configured setting on any dataset, p50 at most 2x): %s\n", lang, chosen.Setting)
}

// reindex gives the evaluation's BM25 index the parameters p, rebuilding it when its field weights
// (set at indexing) change.
func (r *evalRetriever) reindex(p bm25.Params) {
	r.plain = nil
	if r.bm.Tune(p) == nil { // query-time parameters only
		r.params = p
		return
	}
	r.bm, r.params = bm25.New(p), p
	r.bm.Add(r.bmDocs...)
}
