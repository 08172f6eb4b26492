package memvec

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/storetest"
)

// Binary with MinRows 1 sends every search of the shared suite through the Hamming scan and both
// re-scores, reopened from disk after each Flush.
func TestConformanceBinaryPersisted(t *testing.T) {
	storetest.TestVectorIndex(t, func(t *testing.T) store.VectorIndex {
		o := Options{Quant: "binary", MinRows: 1}
		ix, err := OpenWith(filepath.Join(t.TempDir(), "vectors.bin"), storetest.VectorDim, o)
		if err != nil {
			t.Fatal(err)
		}
		return &reopeningWith{t: t, o: o, Index: ix}
	})
}

// The bits are the signs against the centre, padding bits stay clear (dimensions not a multiple of 64),
// and hamming counts exactly the dimensions whose signs differ.
func TestBitsAndHamming(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{1, 63, 64, 65, 70, 128, 1024, 1031} {
		a, b, c := make([]float32, dim), make([]float32, dim), make([]float32, dim)
		for d := range dim {
			a[d], b[d], c[d] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		ba, bb := make([]uint64, words(dim)), make([]uint64, words(dim))
		encodeBits(a, c, ba)
		encodeBits(b, c, bb)
		want := 0
		for d := range dim {
			if (a[d] > c[d]) != (b[d] > c[d]) {
				want++
			}
			if got := ba[d/64]>>(d%64)&1 == 1; got != (a[d] > c[d]) {
				t.Fatalf("dim %d: bit %d is %v", dim, d, got)
			}
		}
		if h := hamming(ba, bb); h != want {
			t.Fatalf("dim %d: hamming %d, want %d", dim, h, want)
		}
		if pad := dim % 64; pad != 0 && bits.LeadingZeros64(ba[len(ba)-1]) < 64-pad {
			t.Fatalf("dim %d: padding bits set: %x", dim, ba[len(ba)-1])
		}
	}
}

// fillGen upserts n vectors of g; ids are v000000...
func fillGen(t testing.TB, ix *Index, g *embeddingLike, n int) {
	t.Helper()
	var recs []rag.VectorRecord
	for i := range n {
		v := make([]float32, g.dim)
		g.next(v)
		recs = append(recs, rag.VectorRecord{ID: fmt.Sprintf("v%06d", i), Tenant: "t", KBID: fmt.Sprintf("kb%d", i%3), DocumentID: "d", Vector: v})
	}
	if err := ix.Upsert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

// On embedding-like vectors the binary path keeps recall@10 >= 0.99 against exact with fresh queries,
// returns exact float32 scores, and honours filters.
func TestBinarySearchMatchesExact(t *testing.T) {
	const n, dim = 12000, 256
	ix, err := NewWith(dim, Options{Quant: "binary", MinRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	g := newEmbeddingLike(n, dim, 3)
	fillGen(t, ix, g, n)
	if r := ix.CheckRecall(); r < 0.99 {
		t.Fatalf("recall check %.3f", r)
	}
	if st := ix.Quant(); st.Use != "binary" || !st.Active {
		t.Fatalf("status %+v", st)
	}
	ctx := context.Background()
	var found, total int
	for range 30 {
		q := make([]float32, dim)
		g.next(q)
		for _, f := range []rag.Filter{{Tenant: "t"}, {Tenant: "t", KBIDs: []string{"kb2"}}} {
			approx, err := ix.Search(ctx, q, 10, f)
			if err != nil {
				t.Fatal(err)
			}
			exact, _ := ix.SearchExact(ctx, q, 10, f)
			if len(approx) != 10 {
				t.Fatalf("got %d hits", len(approx))
			}
			for _, h := range approx {
				if f.KBIDs != nil && h.KBID != "kb2" {
					t.Fatalf("filter ignored: %+v", h)
				}
				if i := slices.IndexFunc(exact, func(e rag.Hit) bool { return e.ID == h.ID }); i >= 0 {
					if exact[i].Score != h.Score {
						t.Fatalf("%s: score %v, exact %v: candidates must be re-scored in float32", h.ID, h.Score, exact[i].Score)
					}
					found++
				}
			}
			total += 10
		}
	}
	if r := float64(found) / float64(total); r < 0.99 {
		t.Fatalf("recall@10 %.3f below 0.99", r)
	}
}

// The recall check widens the binary candidates when too few hold the exact top-10, falls back to int8
// when even the widest list does not (8 dimensions: a few hundred sign patterns, the Hamming count
// cannot tell neighbours apart), and to the exact scan when int8 fails too; each step is logged.
func TestBinaryRecallWidensThenFallsBack(t *testing.T) {
	check := func(data []float32, dim int) (QuantStatus, []string) {
		var logs []string
		ix, _ := NewWith(dim, Options{Quant: "binary", MinRows: 1000, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
		fill(t, ix, data, dim)
		ix.CheckRecall()
		return ix.Quant(), logs
	}
	st, logs := check(clustered(6000, 128, 40, 0.5, 1), 128)
	if st.Use != "binary" || st.BinFactor <= defaultBinFactor || st.Recall < 0.99 || len(logs) != 1 || !strings.Contains(logs[0], "widened") {
		t.Fatalf("widening: %+v %q", st, logs)
	}
	st, logs = check(randVecs(100000, 8, 5), 8)
	if st.Use != "int8" || st.Recall < 0.99 || len(logs) != 2 || !strings.Contains(logs[0], "falling back to the int8 scan") {
		t.Fatalf("int8 fallback: %+v %q", st, logs)
	}
	r := rand.New(rand.NewPCG(9, 9))
	same := make([]float32, 3000*64)
	for i := range same {
		same[i] = 1 + float32(0.001*r.NormFloat64())
	}
	st, logs = check(same, 64)
	if st.Use != "none" || st.Active || len(logs) != 2 || !strings.Contains(logs[1], "searching exactly") {
		t.Fatalf("exact fallback: %+v %q", st, logs)
	}
}

// A version 3 snapshot keeps the binary codes, the centre and the check's verdict: reopened, the index
// searches binary with the same candidate factor without measuring again, and answers as before.
func TestBinarySnapshotKeepsCodesAndVerdict(t *testing.T) {
	const n, dim = 5000, 128
	var logs []string
	o := Options{Quant: "binary", MinRows: 1000, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	path := filepath.Join(t.TempDir(), "vectors.bin")
	ix, err := OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	g := newEmbeddingLike(n, dim, 8)
	fillGen(t, ix, g, n)
	ix.mu.Lock()
	ix.save() // what Close does, keeping the index open to read its status
	before := QuantStatus{Mode: "binary", Use: ix.scheme(), Active: true, Recall: ix.recall, BinFactor: ix.binFactor, Rescore: ix.depth()}
	ix.mu.Unlock()
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if before.Use != "binary" || before.Recall < 0.99 {
		t.Fatalf("after the snapshot %+v (%q)", before, logs)
	}
	checks := len(logs)
	re, err := OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	if after := re.Quant(); after != before || len(logs) != checks {
		t.Fatalf("reopened %+v, before %+v (logs %q)", after, before, logs)
	}
	if re.bits.n != n || len(re.centre) != dim || (nativeLE && mmapSupported && len(re.bits.base) == 0) {
		t.Fatalf("codes not loaded from the snapshot: %d rows, centre %d, mapped %d", re.bits.n, len(re.centre), len(re.bits.base))
	}
	ctx := context.Background()
	q := make([]float32, dim)
	g.next(q)
	got, _ := re.Search(ctx, q, 10, rag.Filter{Tenant: "t"})
	want, _ := re.SearchExact(ctx, q, 10, rag.Filter{Tenant: "t"})
	if len(got) != 10 || got[0].ID != want[0].ID {
		t.Fatalf("binary %v, exact %v", hitIDs(got), hitIDs(want))
	}
}

// A version 2 snapshot (int8 codes only) opened with binary builds the binary codes at open, checks
// recall, says so, and the next snapshot is version 3 with them.
func TestVersion2OpenedBinaryBuildsCodes(t *testing.T) {
	const n, dim = 3000, 64
	path := filepath.Join(t.TempDir(), "vectors.bin")
	ix, _ := OpenWith(path, dim, Options{Quant: "int8", MinRows: 1})
	fill(t, ix, clustered(n, dim, 30, 0.5, 2), dim)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	// rewrite the version 3 header as version 2: same sections without binary codes, crc at 52
	b, _ := os.ReadFile(path)
	if binary.LittleEndian.Uint32(b[20:])&flagBits != 0 {
		t.Fatal("an int8 snapshot must not hold binary codes")
	}
	copy(b, magicV2)
	clear(b[52:68])
	binary.LittleEndian.PutUint32(b[52:], crc32.ChecksumIEEE(b[:52]))
	os.WriteFile(path, b, 0o644)
	var logs []string
	o := Options{Quant: "binary", MinRows: 1, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	re, err := OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) == 0 || !strings.Contains(logs[0], "version 2") || !strings.Contains(logs[0], "building them") {
		t.Fatalf("logs %q", logs)
	}
	if re.bits.n != n || !(re.Quant().Recall >= 0) {
		t.Fatalf("codes %d, status %+v", re.bits.n, re.Quant())
	}
	if err := re.Upsert(context.Background(), []rag.VectorRecord{{ID: "x", Tenant: "t", KBID: "kb0", DocumentID: "d", Vector: randVecs(1, dim, 3)}}); err != nil {
		t.Fatal(err)
	}
	if err := re.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if string(b[:8]) != magicV3 || binary.LittleEndian.Uint32(b[20:])&flagBits == 0 {
		t.Fatalf("saved as %q flags %d", b[:8], binary.LittleEndian.Uint32(b[20:]))
	}
}

// The block kernel (assembly on amd64 with AVX2) gives the same counts as the math/bits loop, for row
// widths it takes and ones it leaves to the loop.
func TestHammingRowsMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, w := range []int{1, 3, 4, 8, 12, 16, 17, 124, 128} {
		for _, rows := range []int{0, 1, 5, 256} {
			q, codes := make([]uint64, w), make([]uint64, rows*w)
			for i := range q {
				q[i] = r.Uint64()
			}
			for i := range codes {
				codes[i] = r.Uint64()
			}
			if rows > 1 {
				copy(codes[:w], q) // distance 0
				for i := range w { // all bits differ
					codes[w+i] = ^q[i]
				}
			}
			got, want := make([]int32, rows), make([]int32, rows)
			hammingRows(q, codes, w, got)
			hammingRowsGeneric(q, codes, w, want)
			if !slices.Equal(got, want) {
				t.Fatalf("w %d rows %d: %v, want %v", w, rows, got[:min(rows, 8)], want[:min(rows, 8)])
			}
			if rows > 1 && (got[0] != 0 || got[1] != int32(64*w)) {
				t.Fatalf("w %d: extremes %d %d", w, got[0], got[1])
			}
		}
	}
}
