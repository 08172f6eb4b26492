package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode"
)

func TestCorpusDocumentsAndQueries(t *testing.T) {
	c := newCorpus(4000)
	var all []byte
	zh := 0
	for i := range 100 {
		d, isZh := c.document(i)
		if isZh {
			zh++
			if !strings.ContainsFunc(string(d), func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
				t.Fatalf("document %d is marked Chinese but has no Han characters", i)
			}
		}
		if !bytes.HasPrefix(d, []byte("# ")) || !bytes.Contains(d, []byte("\n## ")) {
			t.Fatalf("document %d lacks a title or sections:\n%s", i, d)
		}
		all = append(all, d...)
	}
	if zh != 10 {
		t.Errorf("%d Chinese documents in 100, want 10", zh)
	}
	if len(c.queries) < 10 {
		t.Fatalf("%d queries from 100 documents, want at least 10", len(c.queries))
	}
	plain := strings.NewReplacer(".", "", "。", "", "；", "", "！", "", "？", "").Replace(string(all)) // a user types no sentence ends
	for _, q := range c.queries {
		if !strings.Contains(plain, q) {
			t.Errorf("query %q is not a phrase of the corpus", q)
		}
	}
	again := newCorpus(4000)
	if d0, _ := again.document(0); !bytes.HasPrefix(all, d0) {
		t.Error("the corpus is not reproducible from its size")
	}
}

func TestMillionNeedsTheLocalStack(t *testing.T) {
	if _, err := Million(context.Background(), Options{Chunks: 100}); err == nil || !strings.Contains(err.Error(), "docmind bench") {
		t.Fatalf("err = %v, want a message naming docmind bench", err)
	}
}
