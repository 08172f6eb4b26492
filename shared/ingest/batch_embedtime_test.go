package ingest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// A document's embedding time is its share of each call that carried its texts: a group is cut across
// documents, and the share is in proportion to how many of the call's texts were the document's.
func TestEmbedShareSplitsEachCallByTexts(t *testing.T) {
	calls := []embedCall{{lo: 0, n: 64, took: 640 * time.Millisecond}, {lo: 64, n: 10, took: 100 * time.Millisecond}}
	for _, c := range []struct {
		lo, n int
		want  int64
	}{
		{0, 60, 600},  // 60 of the first call's 64 texts
		{60, 14, 140}, // 4 of the first call's, all 10 of the second's
		{74, 0, 0},    // no texts: no embedding time
		{0, 74, 740},  // one document alone: the calls' whole time
	} {
		if got := embedShare(c.lo, c.n, calls); got != c.want {
			t.Errorf("texts [%d, %d): %d ms, want %d", c.lo, c.lo+c.n, got, c.want)
		}
	}
}

// slowEmbedder takes a fixed time per text, so a call's time is in proportion to the texts it carries.
type slowEmbedder struct {
	*countingEmbedder
	perText time.Duration
}

func (s slowEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	time.Sleep(time.Duration(len(texts)) * s.perText)
	return s.countingEmbedder.Embed(ctx, texts)
}

// In a batch, each document's stage_ms "embed" is its own share (the demo showed the whole batch's
// embedding time on every document): a document with one text gets about 1/N of what one with N-1
// gets, and together they add up to no more than the batch's calls took. The comparison is of shares of
// the same measured calls, so a loaded machine changes the times, not the proportion.
func TestIngestBatchRecordsEachDocumentsOwnEmbeddingTime(t *testing.T) {
	ctx := context.Background()
	e, _, _ := batchEnv(t)
	e.svc.Runner.Stages.Embedder = slowEmbedder{e.emb, 4 * time.Millisecond}
	var big strings.Builder
	big.WriteString("# Long\n\n")
	for i := range 30 {
		big.WriteString("## Section " + string(rune('A'+i%26)) + "\n\nThis section explains one rule of the handbook at length, with its reasons and an example of its use.\n\n")
	}
	reps := e.svc.IngestBatch(ctx, tenant, []Source{
		{KBName: "kb", URI: "small.md", Name: "small.md", Data: []byte("One line about leave.\n")},
		{KBName: "kb", URI: "big.md", Name: "big.md", Data: []byte(big.String())},
	})
	embedMS := map[string]int64{}
	texts := map[string]int{}
	for _, rep := range reps {
		if rep.Status != rag.StatusReady {
			t.Fatalf("%s: %+v", rep.File, rep)
		}
		doc, err := e.db.GetDocument(ctx, tenant, rep.DocumentID)
		if err != nil {
			t.Fatal(err)
		}
		var ms map[string]int64
		if err := json.Unmarshal([]byte(doc.StageMillis), &ms); err != nil {
			t.Fatalf("%s: stage_ms %q: %v", rep.File, doc.StageMillis, err)
		}
		embedMS[rep.File], texts[rep.File] = ms["embed"], rep.Embedded
	}
	if texts["small.md"] != 1 || texts["big.md"] < 20 {
		t.Fatalf("texts embedded = %v; the test needs one and many", texts)
	}
	total := embedMS["small.md"] + embedMS["big.md"]
	if total < int64(texts["small.md"]+texts["big.md"])*4 {
		t.Fatalf("embed times %v add up to less than the embedder slept", embedMS)
	}
	// the small document's share, to the millisecond either way for rounding
	want := float64(total) * float64(texts["small.md"]) / float64(texts["small.md"]+texts["big.md"])
	if got := float64(embedMS["small.md"]); got < want-1.5 || got > want+1.5 {
		t.Errorf("embed ms %v for texts %v: small.md has %v, want its share %.1f", embedMS, texts, got, want)
	}
}
