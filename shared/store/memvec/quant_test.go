package memvec

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
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

// int8 with MinRows 1 sends every search of the shared suite through the quantised scan and re-score,
// reopened from disk after each Flush.
func TestConformanceInt8Persisted(t *testing.T) {
	storetest.TestVectorIndex(t, func(t *testing.T) store.VectorIndex {
		o := Options{Quant: "int8", MinRows: 1}
		ix, err := OpenWith(filepath.Join(t.TempDir(), "vectors.bin"), storetest.VectorDim, o)
		if err != nil {
			t.Fatal(err)
		}
		return &reopeningWith{t: t, o: o, Index: ix}
	})
}

type reopeningWith struct {
	t *testing.T
	o Options
	*Index
}

func (r *reopeningWith) Flush(ctx context.Context) error {
	if err := r.Index.Flush(ctx); err != nil {
		return err
	}
	r.Index.release()
	ix, err := OpenWith(r.Index.path, r.Index.dim, r.o)
	if err != nil {
		r.t.Fatalf("reopen: %v", err)
	}
	r.Index = ix
	return nil
}

func TestDotI8MatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 15, 16, 17, 63, 64, 65, 100, 1024, 1031} {
		q, c := make([]int16, n), make([]int8, n)
		var want int64
		for i := range n {
			q[i], c[i] = int16(r.IntN(255)-127), int8(r.IntN(255)-127)
			want += int64(q[i]) * int64(c[i])
		}
		if got := dotI8Generic(q, c); int64(got) != want {
			t.Fatalf("n=%d: generic %d, want %d", n, got, want)
		}
		if got := dotI8(q, c); int64(got) != want {
			t.Fatalf("n=%d: kernel %d, want %d", n, got, want)
		}
	}
	// extremes: every product at its largest magnitude, either sign
	q, c := make([]int16, 1024), make([]int8, 1024)
	for i := range q {
		q[i], c[i] = -127, 127
	}
	if got := dotI8(q, c); got != -127*127*1024 {
		t.Fatalf("extremes: %d", got)
	}
}

func TestQuantizeRoundTrip(t *testing.T) {
	v, _ := normalize(randVecs(1, 256, 5))
	c := make([]int8, 256)
	s := quantize(v, c)
	for i, x := range v {
		if d := math.Abs(float64(x - float32(c[i])*s)); d > float64(s)/2+1e-7 {
			t.Fatalf("component %d: %v vs %v*%v (error %v above half a step)", i, x, c[i], s, d)
		}
	}
	if slices.Max(c) != 127 && slices.Min(c) != -127 {
		t.Fatal("the largest component does not use the full range")
	}
	if quantize(make([]float32, 8), c[:8]) != 0 || slices.ContainsFunc(c[:8], func(x int8) bool { return x != 0 }) {
		t.Fatal("a zero vector must give a zero code")
	}
}

// clustered returns n unit-norm vectors around nc centres with per-dimension variances spread over two
// orders of magnitude, as embedding models' outputs are (uniform noise makes quantisation look better
// than it is: every component has the same range).
func clustered(n, dim, nc int, noise float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 2))
	scale := make([]float64, dim)
	for d := range scale {
		scale[d] = math.Exp(r.NormFloat64())
	}
	centres := make([]float64, nc*dim)
	for i := range centres {
		centres[i] = r.NormFloat64() * scale[i%dim]
	}
	out := make([]float32, n*dim)
	for i := range n {
		c := r.IntN(nc)
		for d := range dim {
			out[i*dim+d] = float32(centres[c*dim+d] + noise*r.NormFloat64()*scale[d])
		}
	}
	return out
}

func fill(t testing.TB, ix *Index, data []float32, dim int) []string {
	t.Helper()
	n := len(data) / dim
	ids := make([]string, n)
	var recs []rag.VectorRecord
	for i := range n {
		ids[i] = fmt.Sprintf("v%06d", i)
		recs = append(recs, rag.VectorRecord{ID: ids[i], Tenant: "t", KBID: fmt.Sprintf("kb%d", i%3), DocumentID: "d", Vector: data[i*dim : (i+1)*dim]})
	}
	if err := ix.Upsert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	return ids
}

func hitIDs(hs []rag.Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return out
}

// The quantised search returns exact scores (it re-scores in float32), matches the exact top-10 on
// clustered data at the default rescoring factor, and honours filters.
func TestQuantisedSearchMatchesExact(t *testing.T) {
	const n, dim = 6000, 128
	ix, err := NewWith(dim, Options{Quant: "int8", MinRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, ix, clustered(n, dim, 40, 0.5, 1), dim)
	if !ix.Quant().Active {
		t.Fatal("int8 with MinRows 1 must take the quantised path")
	}
	ctx := context.Background()
	queries := clustered(30, dim, 40, 0.5, 1) // same centres (same seed), other points
	var found, total int
	for qi := range 30 {
		q := queries[qi*dim : (qi+1)*dim]
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
				if i := slices.IndexFunc(exact, func(e rag.Hit) bool { return e.ID == h.ID }); i >= 0 && exact[i].Score != h.Score {
					t.Fatalf("%s: score %v, exact %v: candidates must be re-scored in float32", h.ID, h.Score, exact[i].Score)
				}
				if slices.ContainsFunc(exact, func(e rag.Hit) bool { return e.ID == h.ID }) {
					found++
				}
			}
			total += 10
		}
	}
	if r := float64(found) / float64(total); r < 0.99 {
		t.Fatalf("recall@10 %.3f below 0.99", r)
	}
	if r := ix.CheckRecall(); r < 0.99 || !ix.Quant().Active {
		t.Fatalf("recall check %.3f, active %v", r, ix.Quant().Active)
	}
}

// Vectors all but equal (one direction plus a thousandth of noise) are below int8's resolution: the
// check at snapshot time finds the recall too low, says so and falls back to the exact scan, which
// then returns the exact ranking.
func TestRecallCheckFallsBack(t *testing.T) {
	const n, dim = 3000, 64
	var warned []string
	o := Options{Quant: "int8", MinRows: 1000, Rescore: 1, Logf: func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) }}
	path := filepath.Join(t.TempDir(), "vectors.bin")
	ix, err := OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	data := make([]float32, n*dim)
	for i := range data {
		data[i] = 1 + float32(0.001*r.NormFloat64())
	}
	fill(t, ix, data, dim)
	if !ix.Quant().Active {
		t.Fatal("before any check the quantised path is trusted")
	}
	if err := ix.Close(); err != nil { // the snapshot runs the check
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "searching exactly") {
		t.Fatalf("warnings %q", warned)
	}
	re, err := OpenWith(path, dim, o) // the verdict is stored in the snapshot
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	st := re.Quant()
	if st.Active || !(st.Recall < 0.99) {
		t.Fatalf("status after reopen %+v", st)
	}
	q := data[:dim]
	got, _ := re.Search(context.Background(), q, 10, rag.Filter{Tenant: "t"})
	want, _ := re.SearchExact(context.Background(), q, 10, rag.Filter{Tenant: "t"})
	if !slices.Equal(hitIDs(got), hitIDs(want)) {
		t.Fatalf("fallback is not exact: %v vs %v", hitIDs(got), hitIDs(want))
	}
}

// Codes follow every write: after updates, deletes (which move the last row into the hole, in the
// mapped part and in the heap tail) and a crash with a log to replay, each surviving vector, used as a
// query, finds itself first through the codes alone (Rescore 1: the k candidates are the codes' best).
func TestCodesFollowWritesAcrossSnapshotAndLog(t *testing.T) {
	for _, quant := range []string{"int8", "binary"} {
		t.Run(quant, func(t *testing.T) { codesFollowWrites(t, quant) })
	}
}

func codesFollowWrites(t *testing.T, quant string) {
	const n, dim = 2000, 64
	ctx := context.Background()
	o := Options{Quant: quant, MinRows: 1, Rescore: 1}
	path := filepath.Join(t.TempDir(), "vectors.bin")
	ix, err := OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	data := randVecs(n, dim, 11)
	ids := fill(t, ix, data, dim)
	if err := ix.Close(); err != nil { // version 2 snapshot with codes
		t.Fatal(err)
	}
	ix, err = OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	if ix.mapped == nil && nativeLE && mmapSupported {
		t.Fatal("the snapshot was not mapped")
	}
	want := map[string][]float32{}
	for i, id := range ids {
		want[id] = data[i*dim : (i+1)*dim]
	}
	// updates of mapped rows (copy on write), deletes from the middle, new rows in the heap tail
	upd := randVecs(100, dim, 12)
	var recs []rag.VectorRecord
	for i := range 100 {
		id := ids[i*7]
		recs = append(recs, rag.VectorRecord{ID: id, Tenant: "t", KBID: "kb0", DocumentID: "d", Vector: upd[i*dim : (i+1)*dim]})
		want[id] = upd[i*dim : (i+1)*dim]
	}
	extra := randVecs(300, dim, 13)
	for i := range 300 {
		id := fmt.Sprintf("x%04d", i)
		recs = append(recs, rag.VectorRecord{ID: id, Tenant: "t", KBID: "kb1", DocumentID: "d", Vector: extra[i*dim : (i+1)*dim]})
		want[id] = extra[i*dim : (i+1)*dim]
	}
	if err := ix.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	var del []string
	for i := 0; i < n; i += 5 {
		del = append(del, ids[i])
		delete(want, ids[i])
	}
	del = append(del, "x0007", "x0299")
	delete(want, "x0007")
	delete(want, "x0299")
	if err := ix.Delete(ctx, "t", del); err != nil {
		t.Fatal(err)
	}
	check := func(ix *Index, when string) {
		t.Helper()
		if c, _ := ix.Count(ctx, rag.Filter{Tenant: "t"}); c != len(want) {
			t.Fatalf("%s: %d rows, want %d", when, c, len(want))
		}
		for id, v := range want {
			hs, err := ix.Search(ctx, v, 1, rag.Filter{Tenant: "t"})
			if err != nil || len(hs) != 1 || hs[0].ID != id {
				t.Fatalf("%s: %s finds %v (%v)", when, id, hitIDs(hs), err)
			}
		}
	}
	check(ix, "live")
	if err := ix.Flush(ctx); err != nil { // to the log
		t.Fatal(err)
	}
	ix.release() // crash
	ix, err = OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	check(ix, "after log replay")
	if err := ix.Close(); err != nil { // folds into a new snapshot
		t.Fatal(err)
	}
	ix, err = OpenWith(path, dim, o)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	check(ix, "after compaction")
	// the same file opened exact (no codes kept) ranks the same
	ix.Close()
	ex, err := Open(path, dim)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if ex.codes.n != 0 || ex.bits.n != 0 {
		t.Fatal("an exact index must not load codes")
	}
	check(ex, "opened exact")
}

// writeV1 writes the version 1 snapshot format, byte for byte as the previous release did.
func writeV1(t *testing.T, path string, dim int, meta []metaRow, data []float32) {
	t.Helper()
	mj := []byte("[")
	for i, m := range meta {
		if i > 0 {
			mj = append(mj, ',')
		}
		mj = fmt.Appendf(mj, `{"i":%q,"c":%q,"t":%q,"k":%q,"d":%q}`, m.ID, m.Chunk, m.Tenant, m.KB, m.Doc)
	}
	mj = append(mj, ']')
	b := []byte(magic)
	b = binary.LittleEndian.AppendUint32(b, uint32(dim))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(meta)))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(mj)))
	b = append(b, mj...)
	for _, x := range data {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A version 1 snapshot (and its log) still opens, exact or int8, and the next save writes version 2.
func TestVersion1SnapshotStillLoads(t *testing.T) {
	const n, dim = 300, 16
	for _, quant := range []string{"none", "int8"} {
		t.Run(quant, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vectors.bin")
			data := randVecs(n, dim, 21)
			var meta []metaRow
			var normed []float32
			for i := range n {
				meta = append(meta, metaRow{ID: fmt.Sprintf("v%03d", i), Chunk: "c", Tenant: "t", KB: "kb", Doc: "d"})
				v, _ := normalize(data[i*dim : (i+1)*dim])
				normed = append(normed, v...)
			}
			writeV1(t, path, dim, meta, normed)
			o := Options{Quant: quant, MinRows: 1}
			ix, err := OpenWith(path, dim, o)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, i := range []int{0, 150, 299} {
				hs, _ := ix.Search(ctx, data[i*dim:(i+1)*dim], 1, rag.Filter{Tenant: "t"})
				if len(hs) != 1 || hs[0].ID != meta[i].ID {
					t.Fatalf("row %d finds %v", i, hitIDs(hs))
				}
			}
			if err := ix.Upsert(ctx, []rag.VectorRecord{{ID: "new", Tenant: "t", KBID: "kb", DocumentID: "d", Vector: data[:dim]}}); err != nil {
				t.Fatal(err)
			}
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			if string(b[:8]) != magicV3 {
				t.Fatalf("saved as %q", b[:8])
			}
			re, err := OpenWith(path, dim, o)
			if err != nil {
				t.Fatal(err)
			}
			defer re.Close()
			if c, _ := re.Count(ctx, rag.Filter{Tenant: "t"}); c != n+1 {
				t.Fatalf("%d rows after conversion", c)
			}
		})
	}
}

// A damaged version 2 snapshot is refused with the repair instructions, and one of another dimension
// with the re-index hint; nothing is loaded from either.
func TestVersion2DamageIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vectors.bin")
	o := Options{Quant: "int8", MinRows: 1}
	ix, _ := OpenWith(path, 16, o)
	fill(t, ix, randVecs(100, 16, 1), 16)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	for name, mut := range map[string]func([]byte) []byte{
		"header":    func(b []byte) []byte { b[13] ^= 1; return b },
		"metadata":  func(b []byte) []byte { b[len(b)-3] ^= 1; return b },
		"codes":     func(b []byte) []byte { b[headerSize+100*16*4+5] ^= 1; return b },
		"truncated": func(b []byte) []byte { return b[:len(b)-1] },
	} {
		b := mut(slices.Clone(good))
		os.WriteFile(path, b, 0o644)
		_, err := OpenWith(path, 16, o)
		if !rag.Is(err, rag.KindInternal) || !strings.Contains(err.Error(), "reconcile --repair") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	os.WriteFile(path, good, 0o644)
	if _, err := OpenWith(path, 32, o); !rag.Is(err, rag.KindInvalid) || !strings.Contains(err.Error(), "re-index") {
		t.Fatalf("dimension: %v", err)
	}
	if _, err := OpenWith(path, 16, Options{Quant: "int4"}); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("bad mode: %v", err)
	}
}

// The recall check counts the exact top-10, not every worker's candidates: on data the int8 scan ranks
// well it must report (nearly) 1, with the scan fanned out over several workers.
func TestRecallCheckCountsTopTen(t *testing.T) {
	const n, dim = 3 * minRowsPerWorker, 64
	ix, _ := NewWith(dim, Options{Quant: "int8", MinRows: 1})
	fill(t, ix, clustered(n, dim, 30, 0.5, 4), dim)
	if r := ix.CheckRecall(); r < 0.99 || r > 1 {
		t.Fatalf("recall %v", r)
	}
}

// The recall check also chooses how deep the int8 path re-scores: the shallowest of 2, 4 ... Rescore
// times k whose recall@10 holds. Well separated clusters need 2x, which then holds on other queries too;
// tight ones need more. The snapshot keeps the choice for the setting it was measured under: a changed
// setting is trusted until the next check, and a file from a build before the choice means the setting.
func TestRecallCheckChoosesDepth(t *testing.T) {
	const n, dim = 4000, 64
	ctx := context.Background()
	hard, _ := NewWith(dim, Options{Quant: "int8", MinRows: 1})
	fill(t, hard, clustered(n, dim, 40, 0.02, 3), dim)
	if r := hard.CheckRecall(); r < 0.99 || hard.Quant().Use != "int8" || hard.Quant().Rescore <= 2 {
		t.Fatalf("tight clusters: recall %.3f, %+v; want int8 re-scoring deeper than 2x", r, hard.Quant())
	}

	path := filepath.Join(t.TempDir(), "vectors.bin")
	open := func(rescore int) *Index {
		t.Helper()
		ix, err := OpenWith(path, dim, Options{Quant: "int8", MinRows: 1, Rescore: rescore})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	ix := open(8)
	fill(t, ix, clustered(n, dim, 40, 0.5, 3), dim)
	if err := ix.Close(); err != nil { // the snapshot runs the check
		t.Fatal(err)
	}
	ix = open(8)
	if st := ix.Quant(); st.Use != "int8" || st.Rescore != 2 || st.Recall < 0.99 {
		t.Fatalf("separated clusters after reopening: %+v, want int8 at 2x", st)
	}
	queries := clustered(40, dim, 40, 0.5, 3) // the same centres, other points
	var found, total int
	for qi := range 40 {
		q := queries[qi*dim : (qi+1)*dim]
		got, _ := ix.Search(ctx, q, 10, rag.Filter{Tenant: "t"})
		want, _ := ix.SearchExact(ctx, q, 10, rag.Filter{Tenant: "t"})
		for _, h := range want {
			total++
			if slices.Contains(hitIDs(got), h.ID) {
				found++
			}
		}
	}
	if r := float64(found) / float64(total); r < 0.99 {
		t.Fatalf("recall@10 at the chosen depth on other queries %.3f", r)
	}
	ix.Close()
	ix = open(16)
	if st := ix.Quant(); st.Rescore != 16 {
		t.Fatalf("another setting: %+v, want it trusted until the next check", st)
	}
	ix.Close()
	// a header from a build before the choice: nothing after crcHeader
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(b[32:]) != 8 || binary.LittleEndian.Uint32(b[68:]) != 2 {
		t.Fatalf("header: setting %d, depth %d; want 8 and 2", binary.LittleEndian.Uint32(b[32:]), binary.LittleEndian.Uint32(b[68:]))
	}
	clear(b[68:76])
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ix = open(8)
	defer ix.Close()
	if st := ix.Quant(); st.Use != "int8" || st.Rescore != 8 {
		t.Fatalf("a file without a chosen depth: %+v, want the setting", st)
	}
}
