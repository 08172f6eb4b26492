package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// BenchmarkMetadataFacets is what filter inference reads per question (answer.Pipeline.infer):
// MetadataFacets over 10,000 documents of connector-sized metadata (a unique title and URL, dates, a
// department of 8 values, a year of 5, an author of 200, tags from 20), beside MatchDocuments of one
// condition on the same index as the reference: the ratio of their ns/op is what inference adds to
// resolving a user's filter. except-kept, except-fresh and of-kept are a caller with 1,000 documents
// denied by access lists (GET /api/kbs/{kb}/metadata, MetadataFacetsExcept; inference,
// MetadataFacetsOf over the 9,000 others): the description kept for that set, and computed anew (100
// sets in turn, more than the 64 kept).
//
//	go test ./shared/store/sqlite -run '^$' -bench MetadataFacets
func BenchmarkMetadataFacets(b *testing.B) {
	ctx := context.Background()
	db, err := Open(filepath.Join(b.TempDir(), "docmind.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	var ids []string
	for i := range 10_000 {
		d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: fmt.Sprintf("connector/w/%d", i), FileName: "d", Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &d); err != nil {
			b.Fatal(err)
		}
		m := rag.Metadata{"title": fmt.Sprintf("Page %d", i), "url": fmt.Sprintf("https://wiki.example.com/p/%d", i),
			"modified": fmt.Sprintf("2025-%02d-%02d", 1+r.IntN(12), 1+r.IntN(28)), "created": fmt.Sprintf("2024-%02d-01", 1+r.IntN(12)),
			"department": fmt.Sprintf("dept%d", r.IntN(8)), "year": 2021 + r.IntN(5), "author": fmt.Sprintf("user%d", r.IntN(200)),
			"tags": []string{fmt.Sprintf("tag%d", r.IntN(20)), fmt.Sprintf("tag%d", r.IntN(20))}, "source": "confluence"}
		if err := db.SetDocumentMetadata(ctx, "t1", kb.ID, d.ID, m); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	f, _ := rag.ParseMetaFilter([]byte(`{"key":"department","eq":"dept3"}`))
	kbs := []string{kb.ID}
	if _, err := db.MatchDocuments(ctx, "t1", kbs, f); err != nil { // builds the index
		b.Fatal(err)
	}
	b.Run("facets", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.MetadataFacets(ctx, "t1", kbs, 32); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("match", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.MatchDocuments(ctx, "t1", kbs, f); err != nil {
				b.Fatal(err)
			}
		}
	})
	// a restriction comes in id order (MatchDocuments' answer, less the denied)
	denied, readable := ids[:1000], slices.Sorted(slices.Values(ids[1000:]))
	b.Run("except-kept", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.MetadataFacetsExcept(ctx, "t1", kbs, 32, denied); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("of-kept", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.MetadataFacetsOf(ctx, "t1", kbs, 32, readable); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("except-fresh", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			if _, err := db.MetadataFacetsExcept(ctx, "t1", kbs, 32, ids[n%100*90:n%100*90+1000]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
