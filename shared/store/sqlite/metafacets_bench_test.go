package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// BenchmarkMetadataFacets is what filter inference reads per question (answer.Pipeline.infer):
// MetadataFacets over 10,000 documents of connector-sized metadata (a unique title and URL, dates, a
// department of 8 values, a year of 5, an author of 200, tags from 20), beside MatchDocuments of one
// condition on the same index as the reference: the ratio of their ns/op is what inference adds to
// resolving a user's filter.
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
}
