package access

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// BenchmarkDenied measures what enforcement adds to one request of a member: Denied over a knowledge
// base of n connector documents (a tenth restricted to group:hr) in SQLite, against the reference in
// the same run of reading the knowledge base's document list alone (what the document list costs
// anyway). go test -run '^$' -bench Denied ./shared/access/
func BenchmarkDenied(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		ctx := context.Background()
		db, err := sqlite.Open(filepath.Join(b.TempDir(), "b.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
		if err := db.CreateKB(ctx, &kb); err != nil {
			b.Fatal(err)
		}
		if err := db.CreateConnector(ctx, &rag.Connector{Tenant: "t1", Name: "drive", KBID: kb.ID, Type: "gdrive", Config: `{}`}); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			uri := SourcePrefix("drive") + fmt.Sprint(i)
			d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: uri, FileName: fmt.Sprintf("f%d.md", i), Status: rag.StatusReady}
			if err := db.CreateDocument(ctx, &d); err != nil {
				b.Fatal(err)
			}
			rec := `{"url":"u","permissions":["domain:acme.example","user:owner@acme.example"]}`
			if i%10 == 0 {
				rec = `{"url":"u","permissions":["group:hr","user:owner@acme.example"]}`
			}
			if err := db.PutConnectorItem(ctx, "t1", "drive", rag.ConnectorItem{ID: fmt.Sprint(i), SourceURI: uri, Version: "1", Metadata: rec}); err != nil {
				b.Fatal(err)
			}
		}
		p := rag.Principal{Tenant: "t1", Email: "bob@acme.example", Role: rag.RoleMember}
		b.Run(fmt.Sprintf("list-documents-%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := db.ListDocuments(ctx, "t1", kb.ID, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("denied-%d", n), func(b *testing.B) {
			for b.Loop() {
				d, err := Guard{Store: db}.Denied(ctx, p, []string{kb.ID})
				if err != nil || len(d) != n/10 {
					b.Fatalf("denied %d, %v; want %d", len(d), err, n/10)
				}
			}
		})
		db.Close()
	}
}
