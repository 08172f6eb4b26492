package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// vocabulary is a seeded Zipf-distributed word source for synthetic documents.
type vocabulary struct {
	words []string
	zipf  *rand.Zipf
}

func newVocabulary(seed uint64) *vocabulary {
	r := rand.New(rand.NewPCG(seed, seed+1))
	v := &vocabulary{words: make([]string, 20000)}
	for i := range v.words {
		var w strings.Builder
		for range 4 + r.IntN(6) {
			w.WriteByte(byte('a' + r.IntN(26)))
		}
		v.words[i] = w.String()
	}
	v.zipf = rand.NewZipf(r, 1.1, 2, uint64(len(v.words)-1))
	return v
}

func (v *vocabulary) sentence(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = v.words[v.zipf.Uint64()]
	}
	return strings.Join(ws, " ") + "."
}

// document returns a markdown document whose body gives about `children` child chunks of the default size.
func (v *vocabulary) document(i, children int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Document %d\n\n", i)
	for c := range children {
		fmt.Fprintf(&b, "## Part %d\n\n%s %s %s\n\n", c, v.sentence(18), v.sentence(18), v.sentence(14))
	}
	return []byte(b.String())
}

// newService builds ingestion over the embedded stores as `docmind ingest` opens them, in files under a
// new temporary folder (the SQLite database in WAL mode, the vector index with its log and fsync), so
// the commits and syncs a real run pays are paid here too. Sources stay in memory: the file blob store
// costs about ten file-system calls per source (two directories, two temporary files, two renames),
// which on this machine's overlay file system outweighed everything else and is the same per document
// whatever ingestion does (docs/bench/ingest.md measures it with `docmind ingest`). done closes and
// removes them.
func newService(emb ingest.Embedder, dim int) (svc *ingest.Service, done func(), err error) {
	dir, err := osTempDir()
	if err != nil {
		return nil, nil, err
	}
	db, err := sqlite.Open(filepath.Join(dir, "docmind.db"), nil)
	if err != nil {
		removeAll(dir)
		return nil, nil, err
	}
	vec, err := memvec.Open(filepath.Join(dir, "vectors.bin"), dim)
	if err != nil {
		db.Close()
		removeAll(dir)
		return nil, nil, err
	}
	done = func() { vec.Close(); db.Close(); removeAll(dir) }
	if _, err := db.Migrate(context.Background()); err != nil {
		done()
		return nil, nil, err
	}
	st := &ingest.Stages{Records: db, Vectors: vec, Blobs: memblob.New(), Staging: memblob.New(), Embedder: emb, Keyword: bm25.New(bm25.DefaultParams()), Chunking: chunk.DefaultOptions()}
	return &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}}, done, nil
}

// ingestAll ingests docs in batches of batch sources (IngestBatch; a batch of 1 is Ingest, one document
// at a time), one batch at a time from each of workers callers.
func ingestAll(ctx context.Context, svc *ingest.Service, docs [][]byte, workers, batch int) (chunks int, err error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := 0
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				lo := next
				next = min(next+batch, len(docs))
				hi := next
				mu.Unlock()
				if lo >= len(docs) || ctx.Err() != nil {
					return
				}
				srcs := make([]ingest.Source, 0, hi-lo)
				for i := lo; i < hi; i++ {
					srcs = append(srcs, ingest.Source{KBName: "bench", URI: fmt.Sprint(i), Name: "d.md", Data: docs[i]})
				}
				reps := svc.IngestBatch(ctx, "t", srcs)
				mu.Lock()
				for _, rep := range reps {
					if rep.Error != "" && err == nil {
						err = fmt.Errorf("%s: %s", rep.File, rep.Error)
					}
					chunks += rep.Chunks
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return chunks, err
}

// Ingest measures end-to-end ingestion: CPU-only with the offline embedder, and bound by a fake
// embeddings API (10 texts per request, 300 ms per request, 8 in flight), against its ideal 10*C/L.
func Ingest(ctx context.Context, o Options) ([]Row, error) {
	v := newVocabulary(3)
	n := map[bool]int{true: 200, false: 1000}[o.Quick]
	docs := make([][]byte, n)
	for i := range docs {
		docs[i] = v.document(i, 10)
	}
	// Batches as `docmind ingest` makes them, and one document at a time (the path before batching, and
	// still the path of updates) as the reference, interleaved round by round on fresh stores.
	var rows []Row
	var rates, perDoc []time.Duration
	var chunksPerRun int
	run := func(batch int) (time.Duration, int, error) {
		svc, done, err := newService(embed.NewOffline(512), 512)
		if err != nil {
			return 0, 0, err
		}
		defer done()
		start := time.Now()
		c, err := ingestAll(ctx, svc, docs, 2, batch)
		return time.Since(start), c, err
	}
	for range 3 {
		d, c, err := run(ingest.DefaultBatch)
		if err != nil {
			return rows, err
		}
		rates, chunksPerRun = append(rates, d), c
		if d, _, err = run(1); err != nil {
			return rows, err
		}
		perDoc = append(perDoc, d)
	}
	cps := float64(chunksPerRun) / Median(rates).Seconds()
	ref := float64(chunksPerRun) / Median(perDoc).Seconds()
	rows = append(rows, Row{Suite: "ingest", What: fmt.Sprintf("CPU only, offline embedder, SQLite and vector log on disk (%d documents, %d chunks, batches of %d)", n, chunksPerRun, ingest.DefaultBatch),
		Ours: cps, Reference: ref, RefName: "one document at a time", Ratio: cps / ref, Unit: "chunks/s", Target: ">= 5,000 chunks/s", Pass: pass(cps >= 5000)})

	// API-bound
	const latency, batch, conc = 300 * time.Millisecond, 10, 8
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return rows, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		time.Sleep(latency)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := make([]item, len(req.Input))
		for i, s := range req.Input {
			vec := make([]float32, 64)
			vec[len(s)%64] = 1
			out[i] = item{i, vec}
		}
		json.NewEncoder(w).Encode(map[string]any{"data": out})
	})}
	go srv.Serve(ln)
	defer srv.Close()
	emb, err := embed.NewOpenAI(embed.OpenAIOptions{BaseURL: "http://" + ln.Addr().String(), Model: "fake", Dim: 64, BatchSize: batch, Concurrency: conc})
	if err != nil {
		return rows, err
	}
	apiDocs := docs[:map[bool]int{true: 80, false: 240}[o.Quick]]
	svc, done, err := newService(emb, 64)
	if err != nil {
		return rows, err
	}
	defer done()
	start := time.Now()
	c, err := ingestAll(ctx, svc, apiDocs, 3, ingest.DefaultBatch) // three batches overlap; the embedder keeps at most conc requests in flight across them
	if err != nil {
		return rows, err
	}
	got := float64(c) / time.Since(start).Seconds()
	ideal := float64(batch*conc) / latency.Seconds()
	rows = append(rows, Row{Suite: "ingest", What: fmt.Sprintf("API-bound (batch %d, %v per request, %d in flight)", batch, latency, conc), Ours: got, Reference: ideal,
		RefName: "ideal 10*C/L", Unit: "chunks/s", Ratio: got / ideal, Target: ">= 90% of ideal", Pass: pass(got >= 0.9*ideal)})
	return rows, nil
}

// fakeReranker scores by position: the retrieval benchmark measures orchestration, not a network call.
type fakeReranker struct{}

func (fakeReranker) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	out := make([]float64, len(docs))
	for i := range docs {
		out[i] = 0.95 - 0.02*float64(i)
	}
	return out, nil
}

// Retrieve measures the retrieval stage (BM25 + vector + fusion + fake rerank + filter + MMR + parents +
// compression + grade) over synthetic chunks on the embedded adapters.
func Retrieve(ctx context.Context, o Options) ([]Row, error) {
	docs := map[bool]int{true: 400, false: 2000}[o.Quick]
	const perDoc, dim = 50, 512
	v := newVocabulary(11)
	dir, err := osTempDir()
	if err != nil {
		return nil, err
	}
	defer removeAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "docmind.db"), nil)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.Migrate(ctx)
	kb := rag.KnowledgeBase{Tenant: "t", Name: "bench"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		return nil, err
	}
	vec, _ := memvec.NewWith(dim, memvec.Options{Quant: "int8"}) // the scan the offline embedder gets: the default (binary) fails its recall check on these vectors and falls back to int8
	kw := bm25.New(bm25.DefaultParams())
	emb := embed.NewOffline(dim)
	var queries []string
	r := rand.New(rand.NewPCG(5, 5))
	for d := range docs {
		doc := rag.Document{Tenant: "t", KBID: kb.ID, SourceURI: fmt.Sprint(d), Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &doc); err != nil {
			return nil, err
		}
		var rows []rag.Chunk
		var texts []string
		var childIdx []int
		for p := range perDoc / 5 {
			parentID := fmt.Sprintf("p%d_%d", d, p)
			var body []string
			for c := range 5 {
				t := fmt.Sprintf("# Doc %d\n## Section %d\n\n%s %s", d, p, v.sentence(25), v.sentence(30))
				body = append(body, t)
				id := fmt.Sprintf("c%d_%d_%d", d, p, c)
				childIdx = append(childIdx, len(rows))
				rows = append(rows, rag.Chunk{ID: id, Tenant: "t", KBID: kb.ID, DocumentID: doc.ID, ParentID: parentID, Level: rag.LevelChild,
					Index: p*5 + c, Content: t, ContentHash: strings.Repeat("0", 64), VectorID: "v" + id, ContentType: rag.ContentGeneral})
				texts = append(texts, t)
				if len(queries) < 300 && r.IntN(docs*perDoc/400+1) == 0 {
					queries = append(queries, strings.Join(strings.Fields(t)[6:12], " "))
				}
			}
			rows = append(rows, rag.Chunk{ID: parentID, Tenant: "t", KBID: kb.ID, DocumentID: doc.ID, Level: rag.LevelParent, Index: p,
				Content: strings.Join(body, "\n\n"), ContentHash: strings.Repeat("1", 64), ContentType: rag.ContentGeneral})
		}
		if err := db.ApplyChunks(ctx, "t", doc.ID, rows, nil); err != nil {
			return nil, err
		}
		vs, _ := emb.Embed(ctx, texts)
		recs := make([]rag.VectorRecord, len(texts))
		for i, at := range childIdx {
			c := rows[at]
			recs[i] = rag.VectorRecord{ID: c.VectorID, Tenant: "t", KBID: kb.ID, DocumentID: doc.ID, ChunkID: c.ID, Vector: vs[i]}
		}
		vec.Upsert(ctx, recs)
		kw.IndexDocument("t", doc.ID, rows)
	}
	rt := &retrieve.Retriever{Keyword: kw, Vectors: vec, Embedder: emb, Chunks: db, Reranker: fakeReranker{}, Options: retrieve.DefaultOptions()}
	f := rag.Filter{Tenant: "t", KBIDs: []string{kb.ID}}
	for _, q := range queries[:min(20, len(queries))] {
		rt.Retrieve(ctx, retrieve.Query{Text: q, Filter: f})
	}
	direct := func(ctx context.Context, q string) ([]string, []float32, error) {
		res, err := rt.Retrieve(ctx, retrieve.Query{Text: q, Filter: f})
		if err != nil {
			return nil, nil, err
		}
		texts, scores := make([]string, len(res.Evidence)), make([]float32, len(res.Evidence))
		for i, e := range res.Evidence {
			texts[i], scores[i] = e.Text, float32(e.Score)
		}
		return texts, scores, nil
	}
	peer, peerName := peerRetriever(direct)
	count := map[bool]int{true: 100, false: 300}[o.Quick]
	var lat, peerLat []time.Duration
	for i := range count {
		q := queries[i%len(queries)]
		start := time.Now()
		if _, _, err := direct(ctx, q); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(start))
		if peer != nil { // interleaved: the same query through the LangChainGo interface
			start = time.Now()
			peer(ctx, q)
			peerLat = append(peerLat, time.Since(start))
		}
	}
	p50, p99 := Percentile(lat, 0.5), Percentile(lat, 0.99)
	what := fmt.Sprintf("retrieval stage at %dk chunks", kw.Len()/1000)
	rows := []Row{
		{Suite: "retrieve", What: what + ": p50", Ours: ms(p50), Unit: "ms"},
		{Suite: "retrieve", What: what + ": p99", Ours: ms(p99), Unit: "ms", Target: "<= 20 ms", Pass: pass(ms(p99) <= 20)},
	}
	if peer != nil {
		over := ms(Median(peerLat)) - ms(p50)
		rows = append(rows, Row{Suite: "retrieve", What: what + ": orchestration overhead through " + peerName + " (median difference)", Ours: over, Unit: "ms",
			Reference: ms(Median(peerLat)), RefName: peerName + " median", Target: "<= 1 ms", Pass: pass(over <= 1)})
	} else {
		rows = append(rows, Row{Suite: "retrieve", What: what + ": overhead through LangChainGo's retriever interface", Unit: "ms", Target: "<= 1 ms",
			Note: "peer not run: build with -tags bench_compare"})
	}
	return rows, nil
}
