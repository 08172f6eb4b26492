package retrieve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

type env struct {
	r   *Retriever
	db  *sqldb.DB
	svc *ingest.Service
	vec *memvec.Index
}

// setup ingests the demo corpus (markdown, text, csv and html files) into embedded stores.
func setup(t *testing.T) *env {
	t.Helper()
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.Migrate(context.Background())
	vec := memvec.New(256)
	kw := bm25.New(bm25.DefaultParams())
	emb := embed.NewOffline(256)
	blobs := memblob.New()
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: db, Vectors: vec, Blobs: blobs, Embedder: emb, Keyword: kw, Chunking: chunk.DefaultOptions()}, Policy: ingest.DefaultPolicy()}}
	dir := "../demo/corpus"
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".md", ".txt", ".csv", ".html":
		default:
			continue
		}
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if _, err := svc.Ingest(context.Background(), "t1", ingest.Source{KBName: "demo", URI: e.Name(), Name: e.Name(), Data: data}); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
	}
	return &env{r: &Retriever{Keyword: kw, Vectors: vec, Embedder: emb, Chunks: db, Options: DefaultOptions()}, db: db, svc: svc, vec: vec}
}

func TestRetrieveDemo(t *testing.T) {
	e := setup(t)
	cases := []struct {
		q, want string
	}{
		{"安心保 A 款的投保年龄", "投保年龄为 18 周岁至 60 周岁"},
		{"康宁保 B 款 等待期", "本产品等待期为 180 天"},
		{"how do I change my beneficiary", "Change beneficiary"},
		{"DOCMIND_CHUNK_CHILD_CHARS default", "DOCMIND_CHUNK_CHILD_CHARS"},
	}
	for _, c := range cases {
		res, err := e.r.Retrieve(context.Background(), Query{Text: c.q, Filter: rag.Filter{Tenant: "t1"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Evidence) == 0 || !strings.Contains(res.Evidence[0].Text, c.want) {
			t.Errorf("%q: top evidence %+v", c.q, res.Evidence)
			continue
		}
		if res.Evidence[0].FileName == "" || len(res.Keyword) == 0 || len(res.Fused) == 0 || res.Grade.Tier == "" {
			t.Errorf("%q: incomplete result %+v", c.q, res)
		}
	}
	// seed #37: a question about product B never gets product A's age limit as top evidence
	res, _ := e.r.Retrieve(context.Background(), Query{Text: "康宁保 B 款 投保年龄", Filter: rag.Filter{Tenant: "t1"}})
	if !strings.Contains(res.Evidence[0].Text, "出生满 30 天至 55 周岁") || strings.Contains(res.Evidence[0].Text, "18 周岁至 60 周岁") {
		t.Fatalf("product B query: %q", res.Evidence[0].Text)
	}
}

func TestTenantAndDeletedNeverReturned(t *testing.T) {
	e := setup(t)
	res, err := e.r.Retrieve(context.Background(), Query{Text: "投保年龄", Filter: rag.Filter{Tenant: "other"}})
	if err != nil || len(res.Evidence) != 0 || len(res.Keyword) != 0 || len(res.Vector) != 0 {
		t.Fatalf("another tenant sees %d items (%v)", len(res.Evidence), err)
	}
	kb, _ := e.db.GetKBByName(context.Background(), "t1", "demo")
	docs, _ := e.db.ListDocuments(context.Background(), "t1", kb.ID, "")
	for _, d := range docs {
		if strings.HasSuffix(d.FileName, "条款.md") {
			if err := e.svc.Delete(context.Background(), "t1", d.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, _ = e.r.Retrieve(context.Background(), Query{Text: "安心保 投保年龄", Filter: rag.Filter{Tenant: "t1"}})
	for _, ev := range res.Evidence {
		if strings.Contains(ev.Text, "安心保") {
			t.Fatalf("a deleted document reached the evidence: %q", ev.Text)
		}
	}
}

type failingVectors struct{}

func (failingVectors) Search(context.Context, []float32, int, rag.Filter) ([]rag.Hit, error) {
	return nil, rag.E("fake", rag.KindUnavailable, errors.New("milvus down"))
}

type brokenReranker struct{}

func (brokenReranker) Rerank(context.Context, string, []string) ([]float64, error) {
	return nil, errors.New("rerank API down")
}

func TestDegradedLegsAndRerank(t *testing.T) {
	e := setup(t)
	e.r.Vectors = failingVectors{}
	e.r.Reranker = brokenReranker{}
	res, err := e.r.Retrieve(context.Background(), Query{Text: "安心保 A 款 等待期", Filter: rag.Filter{Tenant: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Degraded, ",") != "vector,rerank" || len(res.Evidence) == 0 || !strings.Contains(res.Evidence[0].Text, "90 天") {
		t.Fatalf("degraded %v evidence %+v", res.Degraded, res.Evidence)
	}
	e.r.Keyword = failingKeyword{}
	if _, err := e.r.Retrieve(context.Background(), Query{Text: "x", Filter: rag.Filter{Tenant: "t1"}}); err == nil {
		t.Fatal("both legs failing must be an error")
	}
	if _, err := e.r.Retrieve(context.Background(), Query{Text: "x", Filter: rag.Filter{Tenant: `"`}}); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("bad filter: %v", err)
	}
	_ = rank.TierHigh
}

// A query that brings its embedding does not embed again, and ranks as if it had.
func TestQueryVectorSkipsEmbedding(t *testing.T) {
	e := setup(t)
	q := Query{Text: "安心保 A 款 等待期", Filter: rag.Filter{Tenant: "t1"}}
	want, err := e.r.Retrieve(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.r.Embedder.Embed(context.Background(), []string{q.Text})
	if err != nil {
		t.Fatal(err)
	}
	e.r.Embedder = failingEmbedder{}
	q.Vector = v[0]
	got, err := e.r.Retrieve(context.Background(), q)
	if err != nil || len(got.Degraded) != 0 || len(got.Vector) != len(want.Vector) || got.Evidence[0].ChunkID != want.Evidence[0].ChunkID {
		t.Fatalf("with a given vector: degraded %v, %d vector hits (want %d), err %v", got.Degraded, len(got.Vector), len(want.Vector), err)
	}
}

type failingEmbedder struct{}

func (failingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("embedder called")
}

type failingKeyword struct{}

func (failingKeyword) Search(context.Context, string, int, rag.Filter) ([]rag.Hit, error) {
	return nil, errors.New("down")
}

// KeywordOnly runs the BM25 leg alone: no embedding, no vector hits, not reported as degraded.
func TestKeywordOnly(t *testing.T) {
	e := setup(t)
	e.r.Embedder = failingEmbedder{}
	got, err := e.r.Retrieve(context.Background(), Query{Text: "安心保 A 款 等待期", Filter: rag.Filter{Tenant: "t1"}, KeywordOnly: true})
	if err != nil || len(got.Vector) != 0 || len(got.Keyword) == 0 || len(got.Degraded) != 0 || len(got.Evidence) == 0 {
		t.Fatalf("keyword only: %d vector, %d keyword, degraded %v, err %v", len(got.Vector), len(got.Keyword), got.Degraded, err)
	}
}

// Ranked is the chain's whole ranking before the reader's cut: every loaded fused candidate; the
// reranked list is its cut, one child per parent.
func TestRankedIsTheListBeforeTheCut(t *testing.T) {
	e := setup(t)
	e.r.Options.RerankK = 3 // the demo corpus has few parents: the cut must leave some of them out
	res, err := e.r.Retrieve(context.Background(), Query{Text: "how do I change my beneficiary", Filter: rag.Filter{Tenant: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ranked) <= e.r.Options.RerankK || len(res.Reranked) == 0 || len(res.Reranked) > e.r.Options.RerankK || len(res.Ranked) > len(res.Fused) {
		t.Fatalf("ranked %d, reranked %d, fused %d", len(res.Ranked), len(res.Reranked), len(res.Fused))
	}
	cut := Cut(res.Ranked, e.r.Options.RerankK)
	parents := map[string]bool{}
	for i, ev := range res.Reranked {
		if cut[i].ChunkID != ev.ChunkID || parents[ev.ParentID] {
			t.Fatalf("position %d: reranked %s (parent %s) is not the reader's cut of the ranked list", i, ev.ChunkID, ev.ParentID)
		}
		parents[ev.ParentID] = true
	}
}

func TestCutKeepsOneChildPerParent(t *testing.T) {
	ev := []rank.Evidence{{ChunkID: "a1", ParentID: "A"}, {ChunkID: "a2", ParentID: "A"}, {ChunkID: "x"}, {ChunkID: "b1", ParentID: "B"},
		{ChunkID: "y"}, {ChunkID: "c1", ParentID: "C"}}
	var got []string
	for _, e := range Cut(ev, 4) {
		got = append(got, e.ChunkID)
	}
	if strings.Join(got, " ") != "a1 x b1 y" {
		t.Fatalf("cut %v", got)
	}
	if len(Cut(ev, 10)) != 5 || len(Cut(nil, 3)) != 0 {
		t.Fatal("short lists")
	}
}

// The fusion cut keeps FusedK candidates of distinct parents: a later child of a parent already kept
// is dropped, so the rerank's places go to passages the reader can be given (cutting at FusedK chunks
// left SciFact's candidates covering fewer than 10 documents).
func TestFusedCandidatesHaveDistinctParents(t *testing.T) {
	e := setup(t)
	e.r.Options.FusedK = 4
	q := Query{Text: "安心保 A 款 等待期 投保年龄 保险责任", Filter: rag.Filter{Tenant: "t1"}}
	res, ev, err := e.r.Candidates(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	parentOf := func(id string) string {
		rows, err := e.db.GetChunks(context.Background(), "t1", []string{id})
		if err != nil || len(rows) != 1 {
			t.Fatalf("chunk %s: %v", id, err)
		}
		return rows[0].ParentID
	}
	// the precondition that makes this test able to fail: the fused list's first FusedK chunks repeat a parent
	p := res.Profile
	all := rank.RRF(p.K, rank.Leg{Hits: res.Keyword, Weight: p.BM25Weight}, rank.Leg{Hits: res.Vector, Weight: p.VectorWeight})
	first := map[string]bool{}
	for _, h := range all[:4] {
		first[parentOf(h.ChunkID)] = true
	}
	if len(first) == 4 {
		t.Fatalf("the query's first 4 fused chunks have 4 parents already; pick a query whose chunks share parents")
	}
	if len(res.Fused) != 4 || len(ev) != 4 {
		t.Fatalf("fused %d, evidence %d, want 4 each", len(res.Fused), len(ev))
	}
	parents := map[string]bool{}
	at := 0
	for i, h := range res.Fused {
		if ev[i].ChunkID != h.ChunkID || parents[ev[i].ParentID] || ev[i].ParentID != parentOf(h.ChunkID) {
			t.Fatalf("position %d: %s (parent %s) repeats a parent or is not its evidence", i, h.ChunkID, ev[i].ParentID)
		}
		parents[ev[i].ParentID] = true
		for at < len(all) && all[at].ChunkID != h.ChunkID { // fused order kept: each kept hit comes later in the full list
			at++
		}
		if at == len(all) {
			t.Fatalf("position %d: %s is out of the fused order", i, h.ChunkID)
		}
	}
}

type countingKeyword struct {
	Keyword
	k int
}

func (c *countingKeyword) Search(ctx context.Context, q string, k int, f rag.Filter) ([]rag.Hit, error) {
	c.k = k
	return c.Keyword.Search(ctx, q, k, f)
}

type countingVectors struct {
	Vectors
	k int
}

func (c *countingVectors) Search(ctx context.Context, v []float32, k int, f rag.Filter) ([]rag.Hit, error) {
	c.k = k
	return c.Vectors.Search(ctx, v, k, f)
}

// The keyword leg is asked for KeywordK candidates (LegK when 0), the vector leg for LegK.
func TestKeywordLegSize(t *testing.T) {
	e := setup(t)
	kw, vec := &countingKeyword{Keyword: e.r.Keyword}, &countingVectors{Vectors: e.r.Vectors}
	e.r.Keyword, e.r.Vectors = kw, vec
	q := Query{Text: "安心保 A 款 等待期", Filter: rag.Filter{Tenant: "t1"}}
	if _, err := e.r.Retrieve(context.Background(), q); err != nil || kw.k != 100 || vec.k != 50 {
		t.Fatalf("defaults: keyword asked %d, vector %d (%v)", kw.k, vec.k, err)
	}
	e.r.Options.KeywordK = 0
	if _, err := e.r.Retrieve(context.Background(), q); err != nil || kw.k != 50 {
		t.Fatalf("KeywordK 0: keyword asked %d (%v)", kw.k, err)
	}
}

// fakeChunks serves children of the given parents (chunk id -> parent id) and counts row reads.
type fakeChunks struct {
	parent map[string]string
	read   int
}

func (f *fakeChunks) GetChunks(_ context.Context, tenant string, ids []string) ([]rag.Chunk, error) {
	var out []rag.Chunk
	for _, id := range ids {
		if p, ok := f.parent[id]; ok {
			out = append(out, rag.Chunk{ID: id, Tenant: tenant, ParentID: p, DocumentID: "d" + p, Level: rag.LevelChild, Content: id})
			f.read++
		}
	}
	return out, nil
}

func (f *fakeChunks) GetDocument(_ context.Context, tenant, id string) (rag.Document, error) {
	return rag.Document{ID: id, Tenant: tenant, FileName: id + ".md", Status: rag.StatusReady}, nil
}

// load reads rows window by window until it has k parents: the first window's siblings do not end the
// list short, and rows past the k-th parent's window are not read.
func TestLoadReadsWindowsUntilKParents(t *testing.T) {
	f := &fakeChunks{parent: map[string]string{}}
	var hits []rag.Hit
	for i := range 20 {
		id := fmt.Sprintf("c%02d", i)
		p := "A" // the first 6 are siblings
		if i >= 6 {
			p = fmt.Sprintf("P%02d", i)
		}
		if i != 7 { // a hit whose chunk is gone is skipped
			f.parent[id] = p
		}
		hits = append(hits, rag.Hit{ChunkID: id, Score: float32(20 - i)})
	}
	r := &Retriever{Chunks: f}
	kept, ev, err := r.load(context.Background(), "t", hits, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, h := range kept {
		got = append(got, h.ChunkID+"/"+ev[i].ParentID)
	}
	if want := "c00/A c06/P06 c08/P08"; strings.Join(got, " ") != want {
		t.Fatalf("kept %v, want %s", got, want)
	}
	if f.read != 11 { // two windows of 6 hits, one of them gone
		t.Fatalf("%d rows read, want 11", f.read)
	}
}
