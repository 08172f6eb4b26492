package eval

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestMetrics(t *testing.T) {
	rel := map[string]int{"a": 1, "b": 2, "z": 0}
	ranked := []string{"x", "b", "y", "a"}
	// DCG = 3/log2(3) + 1/log2(5); IDCG = 3/log2(2) + 1/log2(3)
	want := (3/math.Log2(3) + 1/math.Log2(5)) / (3 + 1/math.Log2(3))
	if got := NDCG(ranked, rel, 10); math.Abs(got-want) > 1e-12 {
		t.Fatalf("NDCG = %v, want %v", got, want)
	}
	if got := NDCG(ranked, rel, 1); got != 0 {
		t.Fatalf("NDCG@1 = %v", got)
	}
	if got := Recall(ranked, rel, 2); got != 0.5 {
		t.Fatalf("Recall@2 = %v", got)
	}
	if got := MRR(ranked, rel, 10); got != 0.5 {
		t.Fatalf("MRR = %v", got)
	}
	if NDCG(nil, map[string]int{}, 10) != 0 || Recall(nil, map[string]int{}, 10) != 0 {
		t.Fatal("empty judgments must give 0")
	}
}

func TestLoadAndRun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(`{"_id":"d1","title":"Aspirin","text":"Aspirin prevents heart attacks."}
{"_id":"d2","title":"Statins","text":"Statins lower cholesterol."}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(`{"_id":"q1","text":"heart attack prevention"}
{"_id":"q2","text":"cholesterol"}
{"_id":"q3","text":"not judged"}
`), 0o644)
	os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
	os.WriteFile(filepath.Join(dir, "qrels", "train.tsv"), []byte("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n"), 0o644)
	ds, err := Load(dir, "train")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Corpus) != 2 || len(ds.Queries) != 2 || ds.CorpusHash == "" {
		t.Fatalf("loaded %+v", ds)
	}
	perfect := func(ctx context.Context, q string, k int) ([]string, error) {
		if q == "cholesterol" {
			return []string{"d2", "d1"}, nil
		}
		return []string{"d1", "d2"}, nil
	}
	r := Run(context.Background(), ds, "perfect", perfect, 10)
	if r.NDCG10 != 1 || r.Recall100 != 1 || r.MRR10 != 1 || r.Queries != 2 {
		t.Fatalf("perfect retriever: %+v", r)
	}
	if md := Markdown([]Result{r}); len(md) < 100 {
		t.Fatalf("report %q", md)
	}
	if _, err := Load(dir, "test"); err == nil {
		t.Fatal("missing split accepted")
	}
	os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(`{"_id":"d1"}`+"\n"+`{"_id":"d1"}`+"\n"), 0o644)
	if _, err := Load(dir, "train"); err == nil {
		t.Fatal("duplicate ids accepted")
	}
}
