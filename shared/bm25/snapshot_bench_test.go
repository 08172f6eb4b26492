package bm25

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// benchSource is a knowledge base of n child chunks in documents of 40 (ten parents of four), about a
// hundred words each from a Zipf-like vocabulary of 50,000 words, as the million suite generates them
// (BM25_BENCH_CHUNKS sets n; 50,000 by default).
func benchSource(n int) memSource {
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 3, 50_000)
	words := func(k int) string {
		var b strings.Builder
		for i := range k {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "w%d", zipf.Uint64())
		}
		return b.String()
	}
	src := memSource{kbs: []rag.KnowledgeBase{{ID: "k"}}, docs: map[string][]rag.Document{}, rows: map[string][]rag.Chunk{}}
	for d := 0; d*40 < n; d++ {
		id := "doc" + strconv.Itoa(d)
		src.docs["k"] = append(src.docs["k"], rag.Document{ID: id, KBID: "k", Status: rag.StatusReady, ChunkCount: 40, UpdatedAt: time.UnixMilli(int64(d))})
		var rows []rag.Chunk
		for p := range 10 {
			parent := fmt.Sprintf("%s_p%d", id, p)
			rows = append(rows, rag.Chunk{ID: parent, KBID: "k", DocumentID: id, Level: rag.LevelParent, Content: words(400)})
			for c := range 4 {
				rows = append(rows, rag.Chunk{ID: fmt.Sprintf("%s_c%d", parent, c), KBID: "k", DocumentID: id, ParentID: parent, Level: rag.LevelChild,
					Content: "# " + words(4) + "\n\n" + words(100)})
			}
		}
		src.rows[id] = rows
	}
	return src
}

func heapInUse() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}

// BenchmarkSnapshot compares, in one run, the index built from chunk text (what start-up did) with the
// same index read from its snapshot: time (and the save's), heap held after it (the source's text is freed first), the
// snapshot's bytes per posting, the entries' packed term lists' bytes per posting (termList; 4 as the
// []int32 they were, before its growth slack), and search time on each.
//
//	BM25_BENCH_CHUNKS=100000 go test -run '^$' -bench Snapshot -benchtime 3x ./shared/bm25
func BenchmarkSnapshot(b *testing.B) {
	n := 50_000
	if s := os.Getenv("BM25_BENCH_CHUNKS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "snap")
	src := benchSource(n)
	base := heapInUse()
	var built *Index
	var postings int
	b.Run("build", func(b *testing.B) {
		cpu := cpuTime()
		for range b.N {
			built = New(DefaultParams())
			if err := built.Load(ctx, src, "t"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
		b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		postings = 0
		for _, ps := range built.postings {
			postings += len(ps)
		}
		b.ReportMetric(float64(postings)/float64(built.Len()), "postings/chunk")
		fwd := 0
		for i := range built.entries {
			fwd += cap(built.entries[i].terms)
		}
		// a posting is 8 bytes in its list plus its term in the entry's packed list (4 bytes as []int32)
		b.ReportMetric(float64(fwd)/float64(postings), "termListB/posting")
		b.ReportMetric((heapInUse()-base)/(1<<20), "heapMB")
	})
	b.Run("save", func(b *testing.B) {
		cpu := cpuTime()
		for range b.N {
			if err := built.SaveSnapshot(ctx, src, "t", path); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
		b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
	})
	var loaded *Index
	b.Run("snapshot", func(b *testing.B) {
		loaded = nil
		before := heapInUse()
		cpu := cpuTime()
		for range b.N {
			loaded = New(DefaultParams())
			rep, err := loaded.LoadSnapshot(ctx, src, "t", path, nil)
			if err != nil || !rep.Snapshot {
				b.Fatal(rep, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
		b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		fi, _ := os.Stat(path)
		b.ReportMetric(float64(fi.Size())/float64(postings), "fileB/posting")
		b.ReportMetric(float64(fi.Size())/(1<<20), "fileMB")
		b.ReportMetric((heapInUse()-before)/(1<<20), "heapMB")
	})
	r := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(r, 1.1, 3, 50_000)
	qs := make([]string, 200)
	for i := range qs {
		qs[i] = fmt.Sprintf("w%d w%d w%d", zipf.Uint64(), zipf.Uint64()+20, zipf.Uint64()+200)
	}
	// the two indexes searched in alternation, five rounds of the 200 queries each, CPU time (the
	// machine is shared): the median round of each
	b.Run("search", func(b *testing.B) {
		var times [2][]float64
		for range b.N {
			for range 5 {
				for k, ix := range []*Index{built, loaded} {
					cpu := cpuTime()
					for _, q := range qs {
						if _, err := ix.Search(ctx, q, 10, rag.Filter{Tenant: "t"}); err != nil {
							b.Fatal(err)
						}
					}
					times[k] = append(times[k], float64((cpuTime()-cpu).Microseconds())/float64(len(qs)))
				}
			}
		}
		for k, name := range []string{"built-cpu-µs/query", "snapshot-cpu-µs/query"} {
			slices.Sort(times[k])
			b.ReportMetric(times[k][len(times[k])/2], name)
		}
	})
}
