package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/store/fsblob"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// BenchmarkIngestDocuments ingests small English documents (about 5 children each) end to end on the
// embedded stores with the offline embedder, persisted to a temporary data directory as `docmind
// ingest` does. Reported: chunks/s.
func BenchmarkIngestDocuments(b *testing.B) {
	dir := b.TempDir()
	db, err := sqlite.Open(filepath.Join(dir, "docmind.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.Migrate(context.Background())
	vec, err := memvec.Open(filepath.Join(dir, "vectors.bin"), 512)
	if err != nil {
		b.Fatal(err)
	}
	blobs, _ := fsblob.New(filepath.Join(dir, "blobs"))
	svc := &Service{Runner: &Runner{Stages: &Stages{Records: db, Vectors: vec, Blobs: blobs, Staging: memblob.New(), Embedder: embed.NewOffline(512), Chunking: chunk.DefaultOptions()}, Policy: DefaultPolicy()}}
	body := strings.Repeat("Aspirin reduces the risk of myocardial infarction in adults with prior events. ", 20)
	chunks := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		rep, err := svc.Ingest(context.Background(), "t", Source{KBName: "bench", URI: fmt.Sprint(i), Name: "d.md", Data: []byte(fmt.Sprintf("# Doc %d\n\n%s", i, body))})
		if err != nil {
			b.Fatal(err)
		}
		chunks += rep.Chunks
	}
	b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunks/s")
}
