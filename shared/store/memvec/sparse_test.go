package memvec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/rag"
)

// sparseVec is a hashed-feature-like vector: nz of dim components set to small signed integers, so many
// rows tie (the case the candidate heap's tie rules are about).
func sparseVec(r *rand.Rand, dim, nz int) []float32 {
	v := make([]float32, dim)
	for range nz {
		x := float32(1 + r.IntN(3))
		if r.IntN(2) == 0 {
			x = -x
		}
		v[r.IntN(dim)] += x
	}
	if !slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
		v[0] = 1
	}
	return v
}

func sparseRecord(r *rand.Rand, i, dim int) rag.VectorRecord {
	tenant := []string{"t1", "t2"}[i%2]
	return rag.VectorRecord{ID: fmt.Sprintf("v%05d", i), ChunkID: fmt.Sprintf("c%05d", i), Tenant: tenant,
		KBID: fmt.Sprintf("kb%d", i%3), DocumentID: fmt.Sprintf("d%03d", i%97), Tags: []string{fmt.Sprintf("tag%d", i%5)},
		Vector: sparseVec(r, dim, 4+r.IntN(8))}
}

// upsertSparse adds rows 0 to n of sparseRecord to ix in one upsert.
func upsertSparse(t *testing.T, ix *Index, r *rand.Rand, n, dim int) {
	t.Helper()
	var recs []rag.VectorRecord
	for i := range n {
		recs = append(recs, sparseRecord(r, i, dim))
	}
	if err := ix.Upsert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

// bothScans runs the candidate scan through the postings and through the int8 kernel over the same
// shards, sorted best first (score, then row), and fails when they differ.
func bothScans(t *testing.T, ix *Index, q []float32, want int, f rag.Filter) {
	t.Helper()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m, ok, err := ix.matcher(f)
	if err != nil || !ok {
		t.Fatalf("matcher %+v: ok %v err %v", f, ok, err)
	}
	qn, _ := normalize(q)
	q16 := quantizeQuery(qn)
	dims := ix.sparseDims(q16)
	if dims == nil {
		t.Fatalf("a question of %d non-zero dimensions did not take the postings", countNZ(q))
	}
	byScoreRow := func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return a.row - b.row
	}
	sparse := ix.fanOut(func(lo, hi int) topK { return ix.scanSparse(q16, dims, want, m, lo, hi) })
	dense := ix.fanOut(func(lo, hi int) topK { return ix.scanCodes(q16, want, m, lo, hi) })
	slices.SortFunc(sparse, byScoreRow)
	slices.SortFunc(dense, byScoreRow)
	if !slices.Equal(sparse, dense) {
		t.Fatalf("filter %+v, query dims %v: postings gave %d candidates, the scan %d; first difference at %d",
			f, dims, len(sparse), len(dense), firstDiff(sparse, dense))
	}
}

func countNZ(v []float32) (n int) {
	for _, x := range v {
		if x != 0 {
			n++
		}
	}
	return n
}

func firstDiff(a, b []scored) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func randomFilter(r *rand.Rand) rag.Filter {
	f := rag.Filter{Tenant: []string{"t1", "t2"}[r.IntN(2)]}
	switch r.IntN(4) {
	case 1:
		f.KBIDs = []string{fmt.Sprintf("kb%d", r.IntN(3))}
	case 2:
		for range 1 + r.IntN(5) {
			f.DocumentIDs = append(f.DocumentIDs, fmt.Sprintf("d%03d", r.IntN(97)))
		}
	case 3:
		f.Tags = []string{fmt.Sprintf("tag%d", r.IntN(5))}
	}
	return f
}

// The postings give the int8 scan's candidates exactly: after the build, with rows appended, updated and
// deleted since (scanned with the kernel), and after the rebuild those writes trigger.
func TestSparseMatchesDenseScan(t *testing.T) {
	ctx := context.Background()
	const dim, n = 64, 12_000 // two shards on two cores (minRowsPerWorker)
	r := rand.New(rand.NewPCG(11, 12))
	ix, err := NewWith(dim, Options{Quant: "int8", MinRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var recs []rag.VectorRecord
	for i := range n {
		recs = append(recs, sparseRecord(r, i, dim))
	}
	for b := 0; b < n; b += 500 {
		if err := ix.Upsert(ctx, recs[b:b+500]); err != nil {
			t.Fatal(err)
		}
	}
	check := func(stage string) {
		t.Helper()
		for range 60 {
			q := sparseVec(r, dim, 1+r.IntN(3))
			t.Run(stage, func(t *testing.T) { bothScans(t, ix, q, 10*(1+r.IntN(8)), randomFilter(r)) })
		}
	}
	if ix.sp == nil {
		t.Fatal("no postings over sparse codes")
	}
	check("built")
	built := ix.sp
	// fewer writes than the rebuild threshold: the postings stay, the touched rows take the kernel
	for i := range 300 {
		rec := sparseRecord(r, r.IntN(n), dim) // an update of an existing row
		if err := ix.Upsert(ctx, []rag.VectorRecord{rec}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := ix.Delete(ctx, rec.Tenant, []string{fmt.Sprintf("v%05d", r.IntN(n))}); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 0 {
			if err := ix.Upsert(ctx, []rag.VectorRecord{sparseRecord(r, n+i, dim)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ix.sp != built || ix.sp.ndirty == 0 || ix.sp.stale(len(ix.rows)) == 0 {
		t.Fatalf("the postings were rebuilt (or nothing is stale) after few writes: dirty %d", ix.sp.ndirty)
	}
	check("stale")
	for b := range 8 { // past an eighth of the rows: rebuilt
		var more []rag.VectorRecord
		for i := range 500 {
			more = append(more, sparseRecord(r, 2*n+b*500+i, dim))
		}
		if err := ix.Upsert(ctx, more); err != nil {
			t.Fatal(err)
		}
	}
	if ix.sp == built || ix.sp.built != len(ix.rows) && ix.sp.stale(len(ix.rows)) > len(ix.rows)/8 {
		t.Fatalf("postings not rebuilt after %d new rows", 4000)
	}
	check("rebuilt")
}

// A dense question (every dimension set) takes the scan; dense stored vectors keep no postings.
func TestSparseOnlyWhereItPays(t *testing.T) {
	ctx := context.Background()
	const dim = 64
	r := rand.New(rand.NewPCG(5, 6))
	ix, _ := NewWith(dim, Options{Quant: "int8", MinRows: 100})
	var recs []rag.VectorRecord
	for i := range 2000 {
		recs = append(recs, sparseRecord(r, i, dim))
	}
	if err := ix.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	dense := make([]float32, dim)
	for d := range dense {
		dense[d] = float32(r.NormFloat64())
	}
	qn, _ := normalize(dense)
	if ix.sparseDims(quantizeQuery(qn)) != nil {
		t.Error("a dense question took the postings")
	}
	qs, _ := normalize(sparseVec(r, dim, 2))
	if ix.sparseDims(quantizeQuery(qs)) == nil {
		t.Error("a two-dimension question took the scan")
	}

	g := newEmbeddingLike(2000, dim, 3)
	dx, _ := NewWith(dim, Options{Quant: "int8", MinRows: 100})
	recs = recs[:0]
	for i := range 2000 {
		v := make([]float32, dim)
		g.next(v)
		recs = append(recs, rag.VectorRecord{ID: fmt.Sprint(i), ChunkID: fmt.Sprint(i), Tenant: "t", KBID: "k", DocumentID: "d", Vector: v})
	}
	if err := dx.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if dx.sp != nil {
		t.Errorf("postings kept over dense codes (density %.2f)", dx.sparseDensity())
	}
}

// The offline embedder's own vectors, persisted and reopened: the reopened index builds its postings from
// the mapped codes, and Search returns what the int8 scan returns, for questions quoted from the texts.
func TestSparseOfflineEmbedderReopened(t *testing.T) {
	ctx := context.Background()
	const dim = 512
	r := rand.New(rand.NewPCG(21, 22))
	words := make([]string, 3000)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx%d", i, r.IntN(1000))
	}
	word := func() string { return words[min(len(words)-1, int(r.ExpFloat64()*300))] }
	e := embed.NewOffline(dim)
	var texts []string
	var recs []rag.VectorRecord
	for i := range 6000 {
		var b strings.Builder
		for range 40 + r.IntN(60) {
			b.WriteString(word() + " ")
		}
		texts = append(texts, b.String())
		v, _ := e.Embed(ctx, []string{b.String()})
		recs = append(recs, rag.VectorRecord{ID: fmt.Sprint(i), ChunkID: fmt.Sprint(i), Tenant: "t", KBID: "k", DocumentID: fmt.Sprint(i / 50), Vector: v[0]})
	}
	path := filepath.Join(t.TempDir(), "vectors.bin")
	o := Options{Quant: "binary", MinRows: 1000}
	ix, err := OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.sp == nil || ix.sp.built != len(ix.rows) {
		t.Fatalf("reopened without postings over %d rows", len(ix.rows))
	}
	for i := range 100 {
		fs := strings.Fields(texts[r.IntN(len(texts))])
		at := r.IntN(len(fs) - 6)
		v, _ := e.Embed(ctx, []string{strings.Join(fs[at:at+3+i%4], " ")})
		bothScans(t, ix, v[0], 80, rag.Filter{Tenant: "t"})
		got, err := ix.Search(ctx, v[0], 10, rag.Filter{Tenant: "t"})
		if err != nil || len(got) != 10 {
			t.Fatalf("search: %d hits, %v", len(got), err)
		}
	}
}

// A reopened index asks for each mapped row's page once, on its first re-score: the rows a search
// re-scored are marked, rows appended since the map (on the heap) never are, and the answer is the same
// on the next search.
func TestPrefetchMarksRescoredRows(t *testing.T) {
	if !mmapSupported {
		t.Skip("no memory map here")
	}
	ctx := context.Background()
	const dim, n = 64, 3000
	r := rand.New(rand.NewPCG(31, 32))
	path := filepath.Join(t.TempDir(), "vectors.bin")
	o := Options{Quant: "int8", MinRows: 100}
	ix, err := OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	upsertSparse(t, ix, r, n, dim)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if ix, err = OpenWith(path, dim, o); err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	extra := sparseRecord(r, n, dim)
	extra.Tenant = "t1"
	if err := ix.Upsert(ctx, []rag.VectorRecord{extra}); err != nil {
		t.Fatal(err)
	}
	marked := func() (c int) {
		for _, w := range ix.warm {
			for ; w != 0; w &= w - 1 {
				c++
			}
		}
		return c
	}
	if marked() != 0 {
		t.Fatalf("%d rows marked before any search", marked())
	}
	q := extra.Vector
	first, err := ix.Search(ctx, q, 5, rag.Filter{Tenant: "t1"})
	if err != nil || len(first) == 0 || first[0].ID != extra.ID {
		t.Fatalf("search: %v %v", first, err)
	}
	got := marked()
	if got == 0 || got > 5*ix.opt.Rescore {
		t.Fatalf("%d rows marked after one search of %d candidates", got, 5*ix.opt.Rescore)
	}
	if at := ix.byID[key("t1", extra.ID)]; at < len(ix.warm)*64 && ix.warm[at>>6]&(1<<(uint(at)&63)) != 0 {
		t.Fatal("a row on the heap was marked")
	}
	again, _ := ix.Search(ctx, q, 5, rag.Filter{Tenant: "t1"})
	if marked() != got || !slices.Equal(first, again) {
		t.Fatalf("the same search marked more rows (%d -> %d) or answered differently", got, marked())
	}
}

// The postings built over several ranges of rows at once (one per core) equal a plain pass over the
// rows, for a width that is not a multiple of the eight codes tested together.
func TestBuildPostingsInRanges(t *testing.T) {
	const dim, n = 61, 3*minRowsPerWorker + 5
	r := rand.New(rand.NewPCG(5, 6))
	ix, err := NewWith(dim, Options{Quant: "int8", MinRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	upsertSparse(t, ix, r, n, dim)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	wantRows, wantCodes := make([][]uint32, dim), make([][]int8, dim)
	for i := range n {
		for d, c := range ix.codes.row(i) {
			if c != 0 {
				wantRows[d], wantCodes[d] = append(wantRows[d], uint32(i)), append(wantCodes[d], c)
			}
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(procs)
		p := ix.buildPostings(n)
		for d := range dim {
			if !slices.Equal(p.rows[d], wantRows[d]) || !slices.Equal(p.codes[d], wantCodes[d]) {
				t.Fatalf("%d cores: dimension %d has rows %v codes %v, want %v %v", procs, d, p.rows[d], p.codes[d], wantRows[d], wantCodes[d])
			}
			if cap(p.rows[d]) != len(p.rows[d]) {
				t.Fatalf("%d cores: dimension %d's list has slack (cap %d, len %d): an append would write over its neighbour", procs, d, cap(p.rows[d]), len(p.rows[d]))
			}
		}
	}
}
