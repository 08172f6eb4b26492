package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/answer/reader"
	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/eval"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/wire"
)

// evalVariants are the retrieval variants `docmind eval` runs today.
// bm25 is the configured keyword leg (with its RM3 feedback), bm25-plain the same without feedback.
var evalVariants = []string{"bm25", "bm25-plain", "vector", "hybrid", "ranked", "rerank", "full"}

// evalStages are the chain's stages in order (--variant stages): what each one does to the ranking.
var evalStages = []string{"fused", "ranked", "rerank", "filtered", "diverse", "full"}

func cmdEval(e env, args []string) int {
	var c common
	fs := newFlags("eval", e, &c)
	dataset := fs.String("dataset", "", "BEIR folder (corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv); with --calibrate, several separated by commas")
	// rerank and full run the retrieval chain; without a rerank API configured its reranker is lexical
	split := fs.String("split", "train", "qrels split")
	variant := fs.String("variant", "all", "bm25 (the configured keyword leg), bm25-plain (without RM3 feedback), vector, hybrid, ranked (the chain's ranking before the reader's cut), rerank, full (the 8 chunks the reader gets), all (those), stages (the chain stage by stage: fused, ranked, rerank, filtered, diverse, full) or answer (the whole pipeline against answers.jsonl)")
	k := fs.Int("k", 10, "cut-off reported first (Recall@100 is always computed)")
	out := fs.String("out", "", "answer variant: write one JSON line per question (id, answer, band, confidence, correct, claims_supported) to this file")
	calibrate := fs.Bool("calibrate", false, "answer variant: fit the confidence calibration per answerer on these datasets and write it to --calibration")
	unanswerable := fs.Bool("unanswerable", false, "answer variant: also ask every question without its judged-relevant documents, and tune the abstain rule on ten folds (held-out abstain and false-abstain rates); several datasets separated by commas")
	sample := fs.Int("sample", 0, "answer variant: ask at most this many questions per dataset, evenly spaced (0: all)")
	sweep := fs.String("sweep", "", "tune the keyword leg: measure the bm25 variant for every setting of a grid such as \"k1=0.9,1.2 b=0.4 title=1,2 context=0.3 fb_docs=0,10 fb_terms=10 orig_weight=0.5 max_df=0.1\" on the datasets given (separated by commas, one language) and choose the best mean nDCG@10 no worse than the configured setting on any of them")
	calFile := fs.String("calibration", filepath.Join("shared", "answer", "calibrate", "calibration.json"), "where --calibrate writes the calibration (embedded in the next build)")
	if _, err := parseInterspersed(fs, args); err != nil {
		return exitConfig
	}
	if *dataset == "" {
		fmt.Fprintln(e.stderr, "usage: docmind eval --dataset DIR [--split train] [--variant bm25|bm25-plain|vector|hybrid|ranked|rerank|full|all|stages|answer] [--sweep SPEC] [--json] [--out FILE] [--calibrate [--calibration FILE]] [--unanswerable] [--sample N]")
		return exitConfig
	}
	variants := evalVariants
	if *variant == "answer" {
		variants = []string{"answer"}
	} else if *variant == "stages" {
		variants = evalStages
	} else if *variant != "all" {
		ok := false
		for _, v := range evalVariants {
			ok = ok || v == *variant
		}
		if !ok {
			fmt.Fprintf(e.stderr, "docmind: --variant %q is not one of %s, all, stages, answer\n", *variant, strings.Join(evalVariants, ", "))
			return exitConfig
		}
		variants = []string{*variant}
	}
	if *sweep != "" {
		if *variant != "all" && *variant != "bm25" {
			fmt.Fprintln(e.stderr, "docmind: --sweep measures the bm25 variant")
			return exitConfig
		}
		cfg, ok := c.load(e, nil)
		if !ok {
			return exitConfig
		}
		return evalSweep(e, c, cfg, strings.Split(*dataset, ","), *split, *sweep, *k)
	}
	if (*calibrate || *unanswerable || *out != "" || *sample != 0) && variants[0] != "answer" {
		fmt.Fprintln(e.stderr, "docmind: --calibrate, --unanswerable, --sample and --out need --variant answer")
		return exitConfig
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	dirs := []string{*dataset}
	if *calibrate || *unanswerable {
		dirs = strings.Split(*dataset, ",")
	} else if strings.Contains(*dataset, ",") {
		fmt.Fprintln(e.stderr, "docmind: several datasets only with --calibrate or --unanswerable")
		return exitConfig
	}
	if *unanswerable {
		if *calibrate {
			fmt.Fprintln(e.stderr, "docmind: --unanswerable and --calibrate are separate runs (calibrate first, rebuild, then measure abstaining)")
			return exitConfig
		}
		return evalUnanswerable(e, c, cfg, dirs, *split, *out, *sample)
	}
	if variants[0] == "answer" {
		return evalAnswers(e, c, cfg, dirs, *split, *out, *calibrate, *calFile, *sample)
	}
	ds, r, closeStores, err := openEval(e, c, cfg, *dataset, *split)
	if err != nil {
		return fail(e, err)
	}
	defer closeStores()
	var results []eval.Result
	if *variant == "stages" { // one chain run per query, read by every stage (their latencies are the first's)
		r.chainRuns = map[string]*retrieve.Result{}
	}
	for _, v := range variants {
		results = append(results, eval.Run(e.ctx, ds, v, r.retriever(v), *k))
	}
	if c.json {
		if len(results) == 1 {
			printJSON(e.stdout, results[0])
		} else {
			printJSON(e.stdout, results)
		}
	} else {
		fmt.Fprint(e.stdout, eval.Markdown(results))
	}
	return exitOK
}

// openEval loads a dataset and its ingested corpus (ingesting it on first use) with the retrieval
// chain over it; the returned function closes the stores.
func openEval(e env, c common, cfg config.Config, dir, split string) (*eval.Dataset, *evalRetriever, func(), error) {
	ds, err := eval.Load(dir, split)
	if err != nil {
		return nil, nil, nil, rag.E("eval", rag.KindInvalid, err)
	}
	// the corpus is ingested once into its own embedded stores, keyed by everything that shapes the
	// index: the corpus file, the chunk sizes and the embedding model
	ecfg := cfg
	key := sha256.Sum256([]byte(fmt.Sprintf("%s|%+v|%s|%s|%d", ds.CorpusHash, cfg.Chunking, cfg.Embeddings.Provider, cfg.Embeddings.Model, cfg.Vector.Dim)))
	ecfg.DataDir = filepath.Join(cfg.DataDir, "eval", hex.EncodeToString(key[:8]))
	ecfg.SQL.Driver, ecfg.SQL.DSN, ecfg.Vector.Driver, ecfg.KV.Driver, ecfg.Blob.Driver, ecfg.Blob.Dir = "sqlite", "", "memvec", "memory", "fs", ""
	s, err := OpenStores(e.ctx, ecfg)
	if err != nil {
		return nil, nil, nil, err
	}
	closeStores := func() { s.Close() }
	svc, err := ingestService(ecfg, s, nil)
	if err != nil {
		closeStores()
		return nil, nil, nil, err
	}
	kb, err := ensureEvalCorpus(e, svc, ecfg.Tenant, ds, !c.json && isTerminal(e.stderr))
	if err != nil {
		closeStores()
		return nil, nil, nil, err
	}
	r, err := newEvalRetriever(e.ctx, ecfg.Tenant, kb, s, cfg.Retrieval.BM25Params())
	if err != nil {
		closeStores()
		return nil, nil, nil, err
	}
	emb, err := wire.Embedder(ecfg)
	if err != nil {
		closeStores()
		return nil, nil, nil, err
	}
	r.embed, r.semantic = emb, cfg.Embeddings.Provider != "offline"
	if r.chain, err = retriever(ecfg, s); err != nil {
		closeStores()
		return nil, nil, nil, err
	}
	r.cfg, r.stores = ecfg, s
	return ds, r, closeStores, nil
}

// evalAnswers runs the answer variant on each dataset. With calibrate, the answers are scored
// uncalibrated, a calibration is fitted per answerer over all of them and written to calFile, and
// each dataset is reported with cross-fitted confidences (ten folds by question order: each answer's
// confidence comes from a calibration fitted on the other nine, so the figures are not measured on
// the data that fitted them).
func evalAnswers(e env, c common, cfg config.Config, dirs []string, split, outFile string, calibrate bool, calFile string, sample int) int {
	var results []eval.AnswerResult
	for _, dir := range dirs {
		ds, r, closeStores, err := openEval(e, c, cfg, dir, split)
		if err != nil {
			return fail(e, err)
		}
		if len(ds.Answers) == 0 {
			closeStores()
			return fail(e, rag.Errorf("eval", rag.KindInvalid, "%s has no answers.jsonl: the answer variant needs gold answers", dir))
		}
		var cal answer.Calibrations
		if calibrate {
			cal = answer.Calibrations{} // uncalibrated: the features are what is fitted
		}
		results = append(results, eval.RunAnswers(e.ctx, ds, r.answerer(cal), eval.AnswerOptions{Sample: sample}))
		closeStores()
	}
	if calibrate {
		if code, ok := calibrateAnswers(e, cfg, results, dirs, calFile); !ok {
			return code
		}
	}
	if outFile != "" {
		if err := writeAnswerLines(outFile, results); err != nil {
			return fail(e, rag.E("eval", rag.KindInternal, err))
		}
	}
	for _, res := range results {
		if c.json {
			printJSON(e.stdout, res)
		} else {
			fmt.Fprint(e.stdout, eval.AnswerMarkdown(res))
		}
	}
	return exitOK
}

// calibrateAnswers fits the maps of the answerer this run calibrates, writes them with the file's other
// maps to calFile, and cross-fits the results' confidences for the report.
func calibrateAnswers(e env, cfg config.Config, results []eval.AnswerResult, dirs []string, calFile string) (int, bool) {
	who := calibratedAnswerer(cfg)
	fitted, err := fitCalibrations(results, dirs, who)
	if err != nil {
		return fail(e, rag.E("eval", rag.KindInvalid, err)), false
	}
	if len(fitted) == 0 {
		return fail(e, rag.Errorf("eval", rag.KindInvalid, "the %s answerer gave fewer than %d answers in each language: nothing to calibrate", who, minCalibrationAnswers)), false
	}
	for key, n := range otherAnswers(results, who) {
		fmt.Fprintf(e.stderr, "docmind: %d answers by %s not fitted (only the %s maps are fitted in this run; the %s map is fitted by a run %s) and kept as in %s\n",
			n, key, who, key, otherRun(who), calFile)
	}
	n := len(fitted) // keepOthers adds the file's other maps to fitted itself
	merged := keepOthers(calFile, fitted)
	b, _ := json.MarshalIndent(merged, "", "  ")
	if err := os.WriteFile(calFile, append(b, '\n'), 0o644); err != nil {
		return fail(e, rag.E("eval", rag.KindInternal, err)), false
	}
	fmt.Fprintf(e.stderr, "docmind: calibration for %d %s answerer key(s) written to %s (%d key(s) kept from it); rebuild to ship it\n",
		n, who, calFile, len(merged)-n)
	if err := crossFit(results, who, merged); err != nil {
		return fail(e, rag.E("eval", rag.KindInvalid, err)), false
	}
	return exitOK, true
}

// calibratedAnswerer is the answerer whose maps --calibrate fits: "llm" with a model configured,
// "extractive" without. A run with a model also holds the extractive reader's answers where the model
// failed; fitting extractive maps on those alone would replace the shipped ones (fitted on every
// question of a run without a model) with maps of a few, unrepresentative failures.
func calibratedAnswerer(cfg config.Config) string {
	if cfg.Chat.Provider == "openai" {
		return "llm"
	}
	return "extractive"
}

// otherRun names the run that fits the maps a run calibrating who leaves alone.
func otherRun(who string) string {
	if who == "llm" {
		return "without a model"
	}
	return "with a model configured"
}

// otherAnswers counts the answered questions per calibration key of answerers other than who.
func otherAnswers(results []eval.AnswerResult, who string) map[string]int {
	out := map[string]int{}
	for key, samples := range samplesByAnswerer(results, func(int) bool { return true }) {
		if !strings.HasPrefix(key, who+"/") {
			out[key] = len(samples)
		}
	}
	return out
}

// samplesByAnswerer gathers the answered questions' features and outcomes per calibration key
// (answerer, language and, for English, kind of question); keep selects questions by their position.
// Within a language, each dataset's answers together weigh the same (a weight per answer of the
// language's answers over the datasets' count times the dataset's answers): fitted by count, SQuAD's
// 4,961 lookups set the English maps and HotpotQA's 250 multi-hop answers took their estimates (held
// out, 106 HIGH answers right 48% of the time). The weights sum to the number of answers, so a
// dataset alone is fitted exactly as before.
func samplesByAnswerer(results []eval.AnswerResult, keep func(i int) bool) map[string][]answer.Sample {
	type group struct {
		lang    string
		dataset int
	}
	count := map[group]float64{}
	datasets := map[string]map[int]bool{}
	total := map[string]float64{}
	answered := func(q eval.AnswerQuery, i int) bool {
		return q.Error == "" && !q.Abstained && len(q.Features) > 0 && keep(i)
	}
	for ri, res := range results {
		for i, q := range res.All {
			if !answered(q, i) {
				continue
			}
			l := answer.CalibrationLanguage(answer.CalibrationKey(q.Answerer, q.Features))
			count[group{l, ri}]++
			if datasets[l] == nil {
				datasets[l] = map[int]bool{}
			}
			datasets[l][ri] = true
			total[l]++
		}
	}
	out := map[string][]answer.Sample{}
	for ri, res := range results {
		for i, q := range res.All {
			if !answered(q, i) {
				continue
			}
			key := answer.CalibrationKey(q.Answerer, q.Features)
			l := answer.CalibrationLanguage(key)
			w := total[l] / (float64(len(datasets[l])) * count[group{l, ri}])
			out[key] = append(out[key], answer.Sample{X: q.Features, Correct: q.Correct, Weight: w})
		}
	}
	return out
}

// fitCalibrations fits one calibration per answerer and language over every answered question; each
// names the datasets whose answers it was fitted on ("hotpotqa (train, 250 answers)": the English map
// has seen none of CMRC's Chinese answers, and the badge's reason says so).
// Only the keys of answerer who are fitted (see calibratedAnswerer).
func fitCalibrations(results []eval.AnswerResult, dirs []string, who string) (answer.Calibrations, error) {
	out := answer.Calibrations{}
	for name, samples := range samplesByAnswerer(results, func(int) bool { return true }) {
		if !strings.HasPrefix(name, who+"/") {
			continue
		}
		if len(samples) < minCalibrationAnswers {
			continue // e.g. the few questions the extractive reader answered when the model failed
		}
		c, err := answer.Fit(name, samples)
		if err != nil {
			return nil, fmt.Errorf("answerer %s: %w", name, err)
		}
		c.FittedOn = fittedOn(results, dirs, name)
		out[name] = c
	}
	return out, nil
}

// minCalibrationAnswers is the fewest answers a calibration key is fitted on (answer.Fit's minimum). A
// run with a model configured also holds the few answers the extractive reader wrote when the model
// failed: they are too few for a map of their own, and must not fail the llm maps' fit.
const minCalibrationAnswers = 20

// keepOthers adds to fitted the maps of path that this run did not fit: calibrating with a model
// configured fits llm/zh and llm/en and must not drop the shipped extractive maps (nor the reverse).
func keepOthers(path string, fitted answer.Calibrations) answer.Calibrations {
	old := answer.Calibrations{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &old) // an unreadable file has nothing worth keeping
	}
	for k, c := range old {
		if _, ok := fitted[k]; !ok && c != nil {
			fitted[k] = c
		}
	}
	return fitted
}

// fittedOn names the datasets that gave calibration key its answers, with how many each gave.
func fittedOn(results []eval.AnswerResult, dirs []string, key string) string {
	var names []string
	for i, res := range results {
		n := len(samplesByAnswerer(results[i:i+1], func(int) bool { return true })[key])
		if n > 0 {
			names = append(names, fmt.Sprintf("%s (%s, %d answers)", filepath.Base(dirs[i]), res.Split, n))
		}
	}
	return strings.Join(names, ", ")
}

// crossFolds is how many folds crossFit uses: with two, 125-question halves of HotpotQA differed in
// accuracy by 0.09 by chance, and that alone was the held-out error; with ten, each fit sees 90%.
const crossFolds = 10

// crossFit replaces each answer's confidence and band by the estimate of a calibration fitted on the
// other folds (positions modulo crossFolds), then recomputes the reports' band statistics. Only who's
// keys are cross-fitted; the other answerers' answers get their key's map in written, as they would
// when served.
func crossFit(results []eval.AnswerResult, who string, written answer.Calibrations) error {
	var folds [crossFolds]answer.Calibrations
	for f := range crossFolds {
		folds[f] = answer.Calibrations{}
		for name, samples := range samplesByAnswerer(results, func(i int) bool { return i%crossFolds != f }) {
			if !strings.HasPrefix(name, who+"/") {
				folds[f][name] = written[name]
				continue
			}
			if len(samples) < minCalibrationAnswers {
				continue // too few to fit: those answers keep their uncalibrated confidence
			}
			c, err := answer.Fit(name, samples)
			if err != nil {
				return fmt.Errorf("fold %d, answerer %s: %w", f, name, err)
			}
			folds[f][name] = c
		}
	}
	for ri := range results {
		res := &results[ri]
		for i := range res.All {
			q := &res.All[i]
			if q.Error != "" || q.Abstained || len(q.Features) == 0 {
				continue
			}
			c := answer.CalibrationFor(folds[i%crossFolds], q.Answerer, q.Features)
			if c == nil {
				continue
			}
			q.Confidence = answer.Recalibrate(c, q.Features, q.ClaimsSupported)
			q.Band = answer.Band(q.Confidence)
		}
		res.Summarise()
	}
	return nil
}

// writeAnswerLines writes one JSON object per question.
func writeAnswerLines(path string, results []eval.AnswerResult) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, res := range results {
		for _, q := range res.All {
			line := struct {
				Dataset         string          `json:"dataset"`
				ID              string          `json:"id"`
				Answer          string          `json:"answer"`
				Band            string          `json:"band"`
				Confidence      float64         `json:"confidence"`
				Correct         bool            `json:"correct"`
				ClaimsSupported float64         `json:"claims_supported"`
				Unanswerable    bool            `json:"unanswerable,omitempty"`
				Abstained       bool            `json:"abstained,omitempty"`
				Withheld        bool            `json:"withheld_right,omitempty"` // abstained, but the answer written anyway held the gold answer
				Signals         *reader.Signals `json:"abstain_signals,omitempty"`
				Features        []float64       `json:"features,omitempty"`
				Error           string          `json:"error,omitempty"`
			}{res.Dataset, q.ID, q.Answer, q.Band, q.Confidence, q.Correct, q.ClaimsSupported, res.Unanswerable, q.Abstained, q.Abstained && q.ComposedRight, q.Signals, q.Features, q.Error}
			if err := enc.Encode(line); err != nil {
				f.Close()
				return err
			}
		}
	}
	return f.Close()
}

// ensureEvalCorpus ingests every corpus document (unchanged ones are skipped, so a second run costs a
// scan of the SQL rows) and returns the knowledge base.
func ensureEvalCorpus(e env, svc *ingest.Service, tenant string, ds *eval.Dataset, progress bool) (rag.KnowledgeBase, error) {
	const kbName = "eval"
	kb, err := svc.KB(e.ctx, tenant, kbName, true)
	if err != nil {
		return kb, err
	}
	docs, err := svc.Runner.Stages.Records.ListDocuments(e.ctx, tenant, kb.ID, rag.StatusReady)
	if err != nil {
		return kb, err
	}
	if len(docs) == len(ds.Corpus) {
		return kb, nil
	}
	failed := 0
	for i, d := range ds.Corpus {
		if e.ctx.Err() != nil {
			return kb, e.ctx.Err()
		}
		if progress && i%100 == 0 {
			fmt.Fprintf(e.stderr, "\r\033[Kingesting the corpus: %d/%d", i, len(ds.Corpus))
		}
		md := d.Text
		if t := strings.TrimSpace(d.Title); t != "" {
			md = "# " + strings.Join(strings.Fields(t), " ") + "\n\n" + d.Text
		}
		if _, err := svc.Ingest(e.ctx, tenant, ingest.Source{KBName: kbName, URI: "beir:" + d.ID, Name: "doc.md", Data: []byte(md)}); err != nil {
			failed++
		}
	}
	if progress {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if failed > 0 {
		fmt.Fprintf(e.stderr, "docmind: %d corpus documents failed to ingest (empty or unreadable); they count as never retrieved\n", failed)
	}
	return kb, nil
}

type evalRetriever struct {
	tenant string
	kb     rag.KnowledgeBase
	s      *Stores
	bm     *bm25.Index
	plain  *bm25.Index // bm without RM3 feedback (the bm25-plain variant); built on first use
	bmDocs []bm25.Doc  // what bm indexes, to rebuild it with other parameters (--sweep)
	ds     *eval.Dataset
	beirID map[string]string   // document id -> corpus id
	docIDs map[string][]string // corpus id -> document ids (the unanswerable mode leaves them out)
	all    []string            // every document id, sorted
	embed  interface {
		Embed(ctx context.Context, texts []string) ([][]float32, error)
	}
	semantic  bool        // the embedder captures meaning (false for the offline, lexical one)
	params    bm25.Params // bm's
	chain     *retrieve.Retriever
	chainRuns map[string]*retrieve.Result // by query text, with --variant stages: its variants share one chain run; nil runs the chain per variant (honest latencies)
	cfg       config.Config
	stores    *Stores
}

func newEvalRetriever(ctx context.Context, tenant string, kb rag.KnowledgeBase, s *Stores, p bm25.Params) (*evalRetriever, error) {
	r := &evalRetriever{tenant: tenant, kb: kb, s: s, bm: bm25.New(p), params: p, beirID: map[string]string{}, docIDs: map[string][]string{}}
	docs, err := s.SQL.ListDocuments(ctx, tenant, kb.ID, rag.StatusReady)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		r.beirID[d.ID] = strings.TrimPrefix(d.SourceURI, "beir:")
		r.docIDs[r.beirID[d.ID]] = append(r.docIDs[r.beirID[d.ID]], d.ID)
		r.all = append(r.all, d.ID)
		chunks, err := s.SQL.ListChunks(ctx, tenant, d.ID)
		if err != nil {
			return nil, err
		}
		parents := map[string]string{}
		for _, c := range chunks {
			if c.Level == rag.LevelParent {
				parents[c.ID] = c.Content
			}
		}
		var add []bm25.Doc
		for _, c := range chunks {
			if c.Level == rag.LevelChild {
				add = append(add, bm25.Doc{ID: c.ID, Tenant: tenant, KBID: kb.ID, DocumentID: d.ID, Content: c.Content, Context: parents[c.ParentID]})
			}
		}
		r.bm.Add(add...)
		r.bmDocs = append(r.bmDocs, add...)
	}
	slices.Sort(r.all)
	return r, nil
}

// docs maps chunk hits to corpus ids, keeping each document's best rank.
func (r *evalRetriever) docs(hits []rag.Hit, k int) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range hits {
		id := r.beirID[h.DocumentID]
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
		if len(out) == k {
			break
		}
	}
	return out
}

// chainResult runs the chain for q; with --variant stages it runs once per query text and every stage
// variant reads that run.
func (r *evalRetriever) chainResult(ctx context.Context, q string, f rag.Filter) (*retrieve.Result, error) {
	if res, ok := r.chainRuns[q]; ok {
		return res, nil
	}
	res, err := r.chain.Retrieve(ctx, retrieve.Query{Text: q, Filter: f})
	if err != nil {
		return nil, err
	}
	if r.chainRuns != nil {
		r.chainRuns[q] = res
	}
	return res, nil
}

func (r *evalRetriever) retriever(variant string) eval.Retriever {
	f := rag.Filter{Tenant: r.tenant, KBIDs: []string{r.kb.ID}}
	if variant == "bm25-plain" && r.plain == nil {
		p := r.params
		p.RM3, p.RM3CJK = bm25.RM3{}, bm25.RM3{}
		r.plain = bm25.New(p)
		r.plain.Add(r.bmDocs...)
	}
	keyword := func(ctx context.Context, q string, n int) ([]rag.Hit, error) { return r.bm.Search(ctx, q, n, f) }
	vector := func(ctx context.Context, q string, n int) ([]rag.Hit, error) {
		v, err := r.embed.Embed(ctx, []string{q})
		if err != nil {
			return nil, err
		}
		return r.s.Vectors.Search(ctx, v[0], n, f)
	}
	return func(ctx context.Context, q string, k int) ([]string, error) {
		n := 4 * k // several chunks per document
		switch variant {
		case "ranked", "rerank", "full", "fused", "filtered", "diverse":
			// the chain's own sizes (50 per leg, 30 fused, 8 reranked): documents beyond them are not
			// retrieved, so Recall@100 measures the chain's output, not the legs. ranked is the chain's
			// whole ranking before the reader's cut; rerank, filtered, diverse and full are the 8 chunks
			// the reader is given, after each stage
			res, err := r.chainResult(ctx, q, f)
			if err != nil {
				return nil, err
			}
			var hits []rag.Hit
			list := map[string][]rank.Evidence{"ranked": res.Ranked, "rerank": res.Reranked, "filtered": res.Filtered, "diverse": res.Diverse, "full": res.Evidence}[variant]
			if variant == "fused" {
				hits = res.Fused
			}
			for _, e := range list {
				hits = append(hits, rag.Hit{ChunkID: e.ChunkID, DocumentID: e.DocumentID, Score: float32(e.Score)})
			}
			return r.docs(hits, k), nil
		case "bm25":
			h, err := keyword(ctx, q, n)
			return r.docs(h, k), err
		case "bm25-plain":
			h, err := r.plain.Search(ctx, q, n, f)
			return r.docs(h, k), err
		case "vector":
			h, err := vector(ctx, q, n)
			return r.docs(h, k), err
		}
		kh, err := keyword(ctx, q, n)
		if err != nil {
			return nil, err
		}
		vh, err := vector(ctx, q, n)
		if err != nil {
			return nil, err
		}
		p := rank.ProfileQuery(q, r.semantic)
		return r.docs(rank.RRF(p.K, rank.Leg{Hits: kh, Weight: p.BM25Weight}, rank.Leg{Hits: vh, Weight: p.VectorWeight}), k), nil
	}
}

// answerer runs the whole question pipeline (the configured model, or the offline extractive answerer)
// over the evaluation corpus, without the semantic cache or memory, and maps cited sources to corpus ids.
// cal nil is the shipped calibration. The extractive answer is written even where the abstain rule
// would decline, with the rule's signals in the outcome: the run applies the rule (eval.ApplyRule),
// so that the same answers measure any rule and what abstaining withheld. A question's Without
// documents are left out of retrieval by the same restriction a metadata filter uses.
func (r *evalRetriever) answerer(cal answer.Calibrations) eval.Answerer {
	p := wire.Chat(r.cfg, r.chain, r.stores.SQL, nil)
	p.Calibration = cal
	var signals *reader.Signals
	p.Abstains = func(q string, ev []rank.Evidence, g rank.Grade) (string, bool) {
		s := reader.AbstainSignals(q, ev, g)
		signals = &s
		return "", false
	}
	return func(ctx context.Context, q eval.Question) (eval.Outcome, error) {
		req := answer.Request{Tenant: r.tenant, KBIDs: []string{r.kb.ID}, Question: q.Text}
		if len(q.Without) > 0 {
			req.Restrict = r.without(q.Without)
		}
		signals = nil
		done, err := p.Run(ctx, req, func(string, any) error { return nil })
		if err != nil {
			return eval.Outcome{}, err
		}
		out := eval.Outcome{Text: done.Answer, Band: done.Confidence.Band, Invalid: done.Confidence.Invalid, Answerer: done.Answerer, Abstained: done.Abstained,
			Confidence: done.Confidence.Score, ClaimsSupported: done.Confidence.Supported, Signals: signals}
		if done.Confidence.Features != nil {
			out.Features = done.Confidence.Features.Vector()
		}
		for _, src := range done.Sources {
			if src.Cited {
				out.Cited = append(out.Cited, r.beirID[src.DocumentID])
			}
		}
		return out, nil
	}
}

// without is every document of the corpus but those of the corpus ids given.
func (r *evalRetriever) without(ids []string) []string {
	drop := map[string]bool{}
	for _, id := range ids {
		for _, d := range r.docIDs[id] {
			drop[d] = true
		}
	}
	out := make([]string, 0, len(r.all))
	for _, d := range r.all {
		if !drop[d] {
			out = append(out, d)
		}
	}
	return out
}
