package mysql

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
)

// The MySQL adapter and the embedded index rank a fixture corpus (the demo knowledge base's text files)
// the same for English, Chinese and identifier queries.
func TestKeywordParityWithEmbedded(t *testing.T) {
	ctx := context.Background()
	opts := Options{}
	if !mysqltest.Real() {
		opts.MaxOpenConns = 1
	}
	db, err := Open(ctx, mysqltest.Database(t), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "demo"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	mem := bm25.New(bm25.DefaultParams())
	dir := "../../demo/corpus"
	entries, _ := os.ReadDir(dir)
	docs := 0
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".md", ".txt", ".csv", ".html":
		default:
			continue
		}
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		res, err := extract.Extract(ctx, e.Name(), data, extract.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		doc := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: e.Name(), Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &doc); err != nil {
			t.Fatal(err)
		}
		split := chunk.Split(res.Markdown, chunk.DefaultOptions())
		var rows []rag.Chunk
		for i, p := range split.Parents {
			rows = append(rows, rag.Chunk{ID: fmt.Sprintf("%s-p%d", doc.ID, i), Tenant: "t1", KBID: kb.ID, DocumentID: doc.ID, Level: rag.LevelParent,
				Index: i, Content: p.Text, ContentHash: p.Hash, ContentType: p.ContentType})
		}
		for i, c := range split.Children {
			rows = append(rows, rag.Chunk{ID: fmt.Sprintf("%s-c%02d", doc.ID, i), Tenant: "t1", KBID: kb.ID, DocumentID: doc.ID, ParentID: fmt.Sprintf("%s-p%d", doc.ID, c.Parent),
				Level: rag.LevelChild, Index: i, Content: c.Text, ContentHash: c.Hash, ContentType: c.ContentType})
		}
		if err := db.ApplyChunks(ctx, "t1", doc.ID, rows, nil); err != nil {
			t.Fatal(err)
		}
		mem.IndexDocument("t1", doc.ID, rows)
		docs++
	}
	kw := &Keyword{DB: db, Params: bm25.DefaultParams()}
	var total, withTerms, ft int
	db.SQL().QueryRowContext(ctx, "SELECT COUNT(*), COUNT(search_terms) FROM chunks WHERE level = 'child'").Scan(&total, &withTerms)
	db.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM chunks WHERE MATCH(search_terms) AGAINST('healthz')").Scan(&ft)
	t.Logf("children %d, with terms %d, FULLTEXT healthz %d", total, withTerms, ft)
	queries := []string{
		"安心保 A 款的投保年龄", "康宁保 等待期", "how do I change my beneficiary", "DOCMIND_CHUNK_CHILD_CHARS default",
		"release notes version 1.0.0", "理赔需要哪些材料", "make run curl healthz", "Enterprise plan support", "v1.2.3", "退保 手续费 10%",
	}
	f := rag.Filter{Tenant: "t1", KBIDs: []string{kb.ID}}
	agree := 0
	if testing.Short() {
		queries = queries[:3]
	}
	for _, q := range queries {
		a, err := mem.Search(ctx, q, 10, f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := kw.Search(ctx, q, 10, f)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if !sameRanking(a, b) {
			t.Errorf("%q: embedded %v\nmysql    %v", q, show(a), show(b))
			continue
		}
		agree++
	}
	t.Logf("parity: %d of %d queries ranked identically (%d documents)", agree, len(queries), docs)
	if agree != len(queries) {
		t.Fatalf("%d queries ranked differently", len(queries)-agree)
	}
	if h, err := kw.Search(ctx, "安心保", 5, rag.Filter{Tenant: "other"}); err != nil || len(h) != 0 {
		t.Fatalf("another tenant: %v %v", h, err)
	}
	if _, err := kw.Search(ctx, "x", 5, rag.Filter{Tenant: `" or 1=1`}); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("hostile tenant: %v", err)
	}
}

// sameRanking compares two rankings: the same ids in the same order with scores equal within float32
// summation noise (1e-5 relative), where neighbours whose scores tie within that noise may swap.
func sameRanking(a, b []rag.Hit) bool {
	if len(a) != len(b) {
		return false
	}
	close := func(x, y float32) bool { return math.Abs(float64(x-y)) <= 1e-5*math.Max(1, math.Abs(float64(x))) }
	for i := range a {
		if a[i].ID == b[i].ID {
			if !close(a[i].Score, b[i].Score) {
				return false
			}
			continue
		}
		if i+1 < len(a) && a[i].ID == b[i+1].ID && a[i+1].ID == b[i].ID && close(a[i].Score, a[i+1].Score) {
			continue
		}
		if i > 0 && a[i].ID == b[i-1].ID && a[i-1].ID == b[i].ID {
			continue
		}
		return false
	}
	return true
}

func show(h []rag.Hit) []string {
	out := make([]string, len(h))
	for i, x := range h {
		out[i] = fmt.Sprintf("%s:%.4f", x.ID[len(x.ID)-4:], x.Score)
	}
	return out
}
