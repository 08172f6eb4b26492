package retrieve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// batchChunks is a store with the two-query look-up (chunks, then their documents in one batch).
type batchChunks interface {
	Chunks
	documentBatch
}

// twoQueries hides the store's joined look-up (GetReadyChunks), so the chain reads its candidates as it
// did before it: the chunk rows, then their documents.
type twoQueries struct{ batchChunks }

// TestJoinedLoadMatchesTwoQueries: the chain over the store's joined look-up returns exactly what it
// returned over the chunk and document look-ups (and over one document at a time), stage by stage, on
// random queries, while some documents are not ready and some chunks are gone from SQL but still in
// the indexes (a lagging index).
func TestJoinedLoadMatchesTwoQueries(t *testing.T) {
	rt, db, f, queries := benchCorpus(t, 60)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	docs, err := db.ListDocuments(ctx, "t", f.KBIDs[0], "")
	if err != nil || len(docs) != 60 {
		t.Fatalf("%d documents (%v)", len(docs), err)
	}
	for i, d := range docs {
		switch {
		case i%7 == 3: // no longer ready
			d.Status = []string{rag.StatusFailed, rag.StatusProcessing, rag.StatusDeleted}[i%3]
			if err := db.UpdateDocument(ctx, &d); err != nil {
				t.Fatal(err)
			}
		case i%5 == 1: // some chunks gone from SQL, still indexed
			rows, err := db.ListChunks(ctx, "t", d.ID)
			if err != nil {
				t.Fatal(err)
			}
			var gone []string
			for _, c := range rows {
				if r.IntN(3) == 0 {
					gone = append(gone, c.ID)
				}
			}
			if err := db.ApplyChunks(ctx, "t", d.ID, nil, gone); err != nil {
				t.Fatal(err)
			}
		}
	}
	words := strings.Fields(strings.Join(queries, " "))
	for range 100 { // and queries of random corpus words, which spread over many documents
		q := make([]string, 2+r.IntN(5))
		for i := range q {
			q[i] = words[r.IntN(len(words))]
		}
		queries = append(queries, strings.Join(q, " "))
	}
	old, single := *rt, *rt
	old.Chunks = twoQueries{db}
	single.Chunks = oneAtATime{db}
	if _, ok := rt.Chunks.(readyChunks); !ok {
		t.Fatal("the SQL store has no joined look-up: the test compares nothing")
	}
	compared, gone := 0, 0
	for _, q := range queries {
		want, err := old.Retrieve(ctx, Query{Text: q, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		for name, r := range map[string]*Retriever{"joined": rt, "one at a time": &single} {
			got, err := r.Retrieve(ctx, Query{Text: q, Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			if d := diffResults(want, got); d != "" {
				t.Fatalf("%s, query %q: %s", name, q, d)
			}
		}
		compared++
		gone += len(want.Keyword) + len(want.Vector) - len(want.Fused)
	}
	if compared < 250 || gone == 0 {
		t.Fatalf("%d queries compared, %d candidates dropped: the fixture does not exercise the drops", compared, gone)
	}
}

// diffResults says how two results differ in what the chain returns (every stage but the timings).
func diffResults(a, b *Result) string {
	for _, s := range []struct {
		name string
		x, y any
	}{
		{"keyword", a.Keyword, b.Keyword}, {"vector", a.Vector, b.Vector}, {"fused", a.Fused, b.Fused},
		{"ranked", a.Ranked, b.Ranked}, {"reranked", a.Reranked, b.Reranked}, {"filtered", a.Filtered, b.Filtered},
		{"diverse", a.Diverse, b.Diverse}, {"expanded", a.Expanded, b.Expanded}, {"evidence", a.Evidence, b.Evidence},
		{"grade", a.Grade, b.Grade}, {"degraded", a.Degraded, b.Degraded},
	} {
		if !reflect.DeepEqual(s.x, s.y) {
			return fmt.Sprintf("%s differ:\n%+v\n%+v", s.name, s.x, s.y)
		}
	}
	return ""
}
