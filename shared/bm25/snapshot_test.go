package bm25

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// snapParams have RM3 on, so that round trips compare the feedback (it reads postings through tf).
func snapParams() Params {
	p := DefaultParams()
	p.RM3 = RM3{Docs: 3, Terms: 5, OrigWeight: 0.6}
	p.RM3CJK = RM3{Docs: 2, Terms: 4, OrigWeight: 0.5}
	return p
}

// corpus is a Source of n documents in two knowledge bases, each five parents of four children, over a
// Zipf-like vocabulary with a Chinese document in five.
func corpus(seed uint64, n int) memSource {
	r := rand.New(rand.NewPCG(seed, seed))
	src := memSource{docs: map[string][]rag.Document{}, rows: map[string][]rag.Chunk{}}
	for k := range 2 {
		src.kbs = append(src.kbs, rag.KnowledgeBase{ID: fmt.Sprintf("k%d", k)})
	}
	for d := range n {
		putDoc(src, r, fmt.Sprintf("k%d", d%2), fmt.Sprintf("d%d", d), 1)
	}
	return src
}

func word(r *rand.Rand) string { return fmt.Sprintf("w%d", int(math.Exp(r.Float64()*7))) }

// putDoc writes (or rewrites, with a new stamp) a document and its chunks into src.
func putDoc(src memSource, r *rand.Rand, kb, id string, rev int) {
	doc := rag.Document{ID: id, KBID: kb, Status: rag.StatusReady, UpdatedAt: time.UnixMilli(int64(1_700_000_000_000 + rev)),
		ContentHash: fmt.Sprintf("%064d", rev), ChunkCount: 20}
	var rows []rag.Chunk
	for p := range 5 {
		parent := fmt.Sprintf("%s_r%d_p%d", id, rev, p)
		rows = append(rows, rag.Chunk{ID: parent, KBID: kb, DocumentID: id, Level: rag.LevelParent, Content: "parent " + word(r) + " " + word(r)})
		for c := range 4 {
			body := word(r) + " " + word(r) + " " + word(r) + " " + word(r)
			if len(id)%5 == 0 && c == 0 {
				body += " 安心保的投保年龄为十八周岁"
			}
			rows = append(rows, rag.Chunk{ID: fmt.Sprintf("%s_c%d", parent, c), KBID: kb, DocumentID: id, ParentID: parent, Level: rag.LevelChild,
				Content: "# Title " + word(r) + "\n\n" + body})
		}
	}
	docs := src.docs[kb]
	for i := range docs {
		if docs[i].ID == id {
			docs[i] = doc
			src.rows[id] = rows
			return
		}
	}
	src.docs[kb] = append(docs, doc)
	src.rows[id] = rows
}

// commitRow rewrites a document's row now, as ingestion does after it indexed the chunks.
func commitRow(src memSource, kb, id string) {
	time.Sleep(2 * time.Millisecond) // a row written strictly after the index's change
	for i := range src.docs[kb] {
		if src.docs[kb][i].ID == id {
			src.docs[kb][i].UpdatedAt = time.Now()
		}
	}
}

func dropDoc(src memSource, kb, id string) {
	docs := src.docs[kb]
	for i := range docs {
		if docs[i].ID == id {
			src.docs[kb] = append(docs[:i:i], docs[i+1:]...)
		}
	}
	delete(src.rows, id)
}

func build(t *testing.T, src memSource) *Index { return buildWith(t, src, snapParams()) }

func buildWith(t *testing.T, src memSource, p Params) *Index {
	t.Helper()
	ix := New(p)
	if err := ix.Load(context.Background(), src, "t"); err != nil {
		t.Fatal(err)
	}
	return ix
}

// sameSearches compares a and b on random queries under every kind of filter: none, a knowledge base,
// a short and a long (bitset) document restriction, with RM3 feedback on. exact demands equal float32
// scores; otherwise scores may differ by float rounding of the length sum (an index that removed
// documents sums lengths in another order than a fresh build) and ranks only where scores differ.
//
// fresh compares with a fresh build and turns RM3 off on both first: feedback breaks ties between
// expansion terms' weights by term number, and an index updated in place numbers its terms in another
// order than a fresh build (so it differs from one with or without a snapshot); the round trips and the
// loaded-then-saved comparisons keep it on.
func sameSearches(t *testing.T, a, b *Index, exact bool, fresh ...bool) {
	t.Helper()
	if len(fresh) > 0 && fresh[0] {
		for _, x := range []*Index{a, b} {
			if err := x.Tune(DefaultParams()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if a.Len() != b.Len() {
		t.Fatalf("Len %d vs %d", a.Len(), b.Len())
	}
	r := rand.New(rand.NewPCG(9, 9))
	var long []string
	for d := range 40 {
		long = append(long, fmt.Sprintf("d%d", d*3))
	}
	filters := []rag.Filter{{Tenant: "t"}, {Tenant: "t", KBIDs: []string{"k1"}}, {Tenant: "t", DocumentIDs: []string{"d1", "d4", "d7"}}, {Tenant: "t", DocumentIDs: long}}
	ctx := context.Background()
	for q := range 60 {
		query := word(r) + " " + word(r) + " parent"
		if q%10 == 0 {
			query = "投保年龄"
		}
		for _, f := range filters {
			want, err := a.Search(ctx, query, 10, f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.Search(ctx, query, 10, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%q %v: %d hits vs %d", query, f, len(got), len(want))
			}
			for i := range want {
				d := math.Abs(float64(got[i].Score - want[i].Score))
				if exact && (got[i].ID != want[i].ID || d != 0) || !exact && d > 1e-5*float64(want[i].Score) {
					t.Fatalf("%q %v: hit %d %s %v vs %s %v", query, f, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
				}
				if !exact && got[i].ID != want[i].ID && !nearTie(want, i) {
					t.Fatalf("%q %v: hit %d %s vs %s with distinct scores", query, f, i, got[i].ID, want[i].ID)
				}
			}
		}
	}
}

// nearTie reports whether hit i's score is within rounding of a neighbour's (their order may differ).
func nearTie(h []rag.Hit, i int) bool {
	tol := 1e-5 * float64(h[i].Score)
	return i > 0 && math.Abs(float64(h[i-1].Score-h[i].Score)) <= tol || i+1 < len(h) && math.Abs(float64(h[i+1].Score-h[i].Score)) <= tol
}

func TestSnapshotRoundTripEqualsFreshBuild(t *testing.T) {
	ctx := context.Background()
	src := corpus(1, 300)
	fresh := build(t, src)
	path := filepath.Join(t.TempDir(), "docmind.db.bm25")
	if err := fresh.SaveSnapshot(ctx, src, "t", path); err != nil {
		t.Fatal(err)
	}
	if fresh.Dirty() {
		t.Fatal("dirty right after saving")
	}
	loaded := New(snapParams())
	rep, err := loaded.LoadSnapshot(ctx, src, "t", path, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Snapshot || rep.Kept != 300 || rep.Reindexed != 0 || rep.Removed != 0 {
		t.Fatalf("report %+v", rep)
	}
	if loaded.Dirty() {
		t.Fatal("an index read unchanged from its snapshot is dirty")
	}
	sameSearches(t, fresh, loaded, true)
}

// After a load, the snapshot's documents whose rows changed are indexed again, the gone ones removed
// and new ones added, and the result equals a fresh build of the changed source; another tenant's
// chunks in the saved index never reach the file.
func TestSnapshotAppliesChangesSinceWritten(t *testing.T) {
	ctx := context.Background()
	src := corpus(2, 200)
	ix := build(t, src)
	ix.Add(Doc{ID: "x", Tenant: "other", KBID: "k0", DocumentID: "other-doc", Content: "w1 w2 parent secret"})
	path := filepath.Join(t.TempDir(), "snap")
	if err := ix.SaveSnapshot(ctx, src, "t", path); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	putDoc(src, r, "k1", "d1", 2) // changed
	dropDoc(src, "k0", "d2")      // deleted
	putDoc(src, r, "k0", "new", 1)
	loaded := New(snapParams())
	rep, err := loaded.LoadSnapshot(ctx, src, "t", path, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Snapshot || rep.Reindexed != 2 || rep.Removed != 1 || rep.Kept != 198 {
		t.Fatalf("report %+v", rep)
	}
	if !loaded.Dirty() {
		t.Fatal("changes applied after a load must be written again")
	}
	if hits, _ := loaded.Search(ctx, "secret", 10, rag.Filter{Tenant: "other"}); len(hits) != 0 {
		t.Fatalf("another tenant's chunk came back: %v", hits)
	}
	sameSearches(t, build(t, src), loaded, false, true)
}

// A write after a load (ingestion on a loaded index, then a save) reads back as that index.
func TestSnapshotWriteAfterLoad(t *testing.T) {
	ctx := context.Background()
	src := corpus(3, 120)
	path := filepath.Join(t.TempDir(), "snap")
	if err := build(t, src).SaveSnapshot(ctx, src, "t", path); err != nil {
		t.Fatal(err)
	}
	ix := New(snapParams())
	if _, err := ix.LoadSnapshot(ctx, src, "t", path, t.Logf); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(6, 6))
	putDoc(src, r, "k0", "d4", 2)
	ix.IndexDocument("t", "d4", src.rows["d4"])
	commitRow(src, "k0", "d4")
	putDoc(src, r, "k1", "fresh", 1)
	ix.IndexDocument("t", "fresh", src.rows["fresh"])
	commitRow(src, "k1", "fresh")
	ix.RemoveDocument("t", "d5")
	dropDoc(src, "k1", "d5")
	if !ix.Dirty() {
		t.Fatal("not dirty after ingestion")
	}
	if err := ix.SaveSnapshot(ctx, src, "t", path); err != nil {
		t.Fatal(err)
	}
	again := New(snapParams())
	rep, err := again.LoadSnapshot(ctx, src, "t", path, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Snapshot || rep.Reindexed != 0 || rep.Removed != 0 {
		t.Fatalf("report %+v", rep)
	}
	sameSearches(t, ix, again, false)
	sameSearches(t, build(t, src), again, false, true)
}

// Every unusable snapshot is reported with its cause and rebuilt from the source; the file is only read.
func TestSnapshotUnusableIsRebuilt(t *testing.T) {
	ctx := context.Background()
	src := corpus(4, 60)
	fresh := build(t, src)
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := fresh.SaveSnapshot(ctx, src, "t", good); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := fresh.SaveSnapshot(ctx, src, "u", other); err != nil {
		t.Fatal(err)
	}
	otherData, _ := os.ReadFile(other)
	weights := snapParams()
	weights.TitleWeight = 3
	heavier := New(weights)
	heavier.Load(ctx, src, "t")
	if err := heavier.SaveSnapshot(ctx, src, "t", other); err != nil {
		t.Fatal(err)
	}
	weightData, _ := os.ReadFile(other)
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(data)) }
	cases := []struct {
		name, reason string
		file         []byte // nil: no file
	}{
		{"missing", "no such file", nil},
		{"empty", "truncated", []byte{}},
		{"truncated", "truncated", data[:len(data)/2]},
		{"header only", "truncated", data[:snapHeader]},
		{"extended", "truncated or extended", append(bytes.Clone(data), 0)},
		{"flipped byte", "checksum", edit(func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b })},
		{"foreign file", "not a BM25 snapshot", []byte("SQLite format 3\x00 and then some more bytes")},
		{"future version", "format version 2", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 2); return b })},
		{"other tenant", `tenant "u"`, otherData},
		{"other field weights", "field weights", weightData},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snap")
			if c.file != nil {
				if err := os.WriteFile(path, c.file, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var logged []string
			ix := New(snapParams())
			rep, err := ix.LoadSnapshot(ctx, src, "t", path, func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) })
			if err != nil {
				t.Fatal(err)
			}
			if rep.Snapshot || !strings.Contains(rep.Reason, c.reason) {
				t.Fatalf("report %+v, want a rebuild because %q", rep, c.reason)
			}
			if c.file != nil && (len(logged) != 1 || !strings.Contains(logged[0], c.reason) || !strings.Contains(logged[0], "rebuilding")) {
				t.Fatalf("logged %q", logged)
			}
			if !ix.Dirty() {
				t.Fatal("a rebuilt index must be written")
			}
			if after, _ := os.ReadFile(path); c.file != nil && !bytes.Equal(after, c.file) {
				t.Fatal("loading changed the file")
			}
			sameSearches(t, fresh, ix, true)
		})
	}
}

// A save that dies before its rename leaves a partial temporary file beside the snapshot: the next
// start reads the last whole snapshot and re-indexes what changed since.
func TestSnapshotCrashBetweenWrites(t *testing.T) {
	ctx := context.Background()
	src := corpus(7, 80)
	dir := t.TempDir()
	path := filepath.Join(dir, "snap")
	ix := build(t, src)
	if err := ix.SaveSnapshot(ctx, src, "t", path); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 8))
	putDoc(src, r, "k0", "d0", 2)
	ix.IndexDocument("t", "d0", src.rows["d0"])
	// the second save, cut short: a prefix of its bytes under the temporary name, no rename
	next := filepath.Join(dir, "next")
	if err := ix.SaveSnapshot(ctx, src, "t", next); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(next)
	os.Remove(next)
	if err := os.WriteFile(path+".tmp123", b[:len(b)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	loaded := New(snapParams())
	rep, err := loaded.LoadSnapshot(ctx, src, "t", path, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Snapshot || rep.Reindexed != 1 {
		t.Fatalf("report %+v", rep)
	}
	sameSearches(t, build(t, src), loaded, false, true)
}

// The saver writes once the index has settled and again at Close.
// loadedCorpus is an index of corpus(10, 30) loaded through LoadSnapshot (which writes none), and the
// path its snapshot goes to.
func loadedCorpus(t *testing.T) (context.Context, memSource, string, *Index) {
	t.Helper()
	ctx := context.Background()
	src := corpus(10, 30)
	path := filepath.Join(t.TempDir(), "snap")
	ix := New(snapParams())
	if _, err := ix.LoadSnapshot(ctx, src, "t", path, t.Logf); err != nil {
		t.Fatal(err)
	}
	return ctx, src, path, ix
}

func TestSaverWritesWhenSettledAndAtClose(t *testing.T) {
	ctx, src, path, ix := loadedCorpus(t)
	s := ix.StartSaver(src, "t", path, 5*time.Millisecond, t.Logf)
	for deadline := time.Now().Add(20 * time.Second); ix.Dirty(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the rebuilt index was never written")
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	putDoc(src, rand.New(rand.NewPCG(1, 2)), "k0", "late", 1)
	ix.IndexDocument("t", "late", src.rows["late"])
	commitRow(src, "k0", "late")
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ix.Dirty() {
		t.Fatal("Close did not write the last change")
	}
	loaded := New(snapParams())
	rep, err := loaded.LoadSnapshot(ctx, src, "t", path, t.Logf)
	if err != nil || !rep.Snapshot || rep.Reindexed != 0 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	sameSearches(t, ix, loaded, true)
}

func TestTermListRoundTrip(t *testing.T) {
	ids := []int32{900000, 3, 0, 127, 128, 16384, 5}
	l := packTerms(slices.Clone(ids))
	var got []int32
	l.each(func(id int32) { got = append(got, id) })
	slices.Sort(ids)
	if !slices.Equal(got, ids) {
		t.Fatalf("%v, want %v", got, ids)
	}
	if len(l) >= 4*len(ids) {
		t.Fatalf("%d bytes for %d ids: not packed", len(l), len(ids))
	}
}

// The frequency table keeps every value through its growth and orders them by use.
func TestFreqsGrowAndOrder(t *testing.T) {
	f := newFreqs()
	for i := range 5000 {
		f.slot(float32(i) * 0.3) // count 0 for every seventh
		for range i % 7 {
			f.vals[f.slot(float32(i)*0.3)]++
		}
	}
	order := f.byUse()
	if len(order) != 5000 {
		t.Fatalf("%d distinct values, want 5000", len(order))
	}
	for i, v := range order {
		c := f.vals[f.slot(v)]
		if i > 0 {
			p := f.vals[f.slot(order[i-1])]
			if p < c || p == c && order[i-1] >= v {
				t.Fatalf("order broken at %d: %v (%d) after %v (%d)", i, v, c, order[i-1], p)
			}
		}
	}
	if f.n != 5000 {
		t.Fatalf("n = %d", f.n)
	}
}

// A snapshot never takes a stamp for chunks it does not hold: a document another process re-ingested
// (this index never saw the change) keeps the stamp it was loaded with, and one this process indexed
// but whose row was not written since (an uncommitted or failed ingestion) gets none; both are
// re-indexed at the next load.
func TestSnapshotStampsOnlyWhatTheIndexHolds(t *testing.T) {
	ctx := context.Background()
	src := corpus(11, 50)
	ix := build(t, src)
	r := rand.New(rand.NewPCG(12, 12))
	putDoc(src, r, "k1", "d1", 2) // another process: new rows and a new row stamp, written now
	commitRow(src, "k1", "d1")
	putDoc(src, r, "k0", "d2", 3) // this process indexes new chunks; the row is never committed
	ix.IndexDocument("t", "d2", src.rows["d2"])
	for i := range src.docs["k0"] {
		if src.docs["k0"][i].ID == "d2" {
			src.docs["k0"][i].UpdatedAt = time.UnixMilli(1) // the row as it was before
		}
	}
	path := filepath.Join(t.TempDir(), "snap")
	if err := ix.SaveSnapshot(ctx, src, "t", path); err != nil {
		t.Fatal(err)
	}
	loaded := New(snapParams())
	rep, err := loaded.LoadSnapshot(ctx, src, "t", path, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Snapshot || rep.Reindexed != 2 || rep.Kept != 48 {
		t.Fatalf("report %+v, want d1 and d2 re-indexed", rep)
	}
	sameSearches(t, build(t, src), loaded, false, true)
}

// A loaded index's entries carry the same terms as the index that was saved, whether the term lists
// are rebuilt in one block or in many blocks over several ranges of entries (invertPostings); removal
// (which decrements document frequencies by them) then leaves both indexes searching alike.
func TestLoadedTermListsEqualSaved(t *testing.T) {
	ctx := context.Background()
	src := corpus(3, 400)
	fresh := build(t, src)
	path := filepath.Join(t.TempDir(), "docmind.db.bm25")
	if err := fresh.SaveSnapshot(ctx, src, "t", path); err != nil {
		t.Fatal(err)
	}
	names := func(ix *Index) map[string][]string {
		byID := make([]string, len(ix.postings))
		for s, id := range ix.dict {
			byID[id] = s
		}
		out := map[string][]string{}
		for _, e := range ix.entries {
			var ts []string
			e.terms.each(func(id int32) { ts = append(ts, byID[id]) })
			slices.Sort(ts)
			out[e.id] = ts
		}
		return out
	}
	want := names(fresh)
	defer func(b int, p int) { invertBytes = b; runtime.GOMAXPROCS(p) }(invertBytes, runtime.GOMAXPROCS(0))
	for _, c := range []struct{ bytes, procs int }{{8 << 20, 1}, {1, 1}, {1, 3}, {500, 4}} {
		invertBytes = c.bytes
		runtime.GOMAXPROCS(c.procs)
		loaded := New(snapParams())
		if _, err := loaded.LoadSnapshot(ctx, src, "t", path, t.Logf); err != nil {
			t.Fatal(err)
		}
		got := names(loaded)
		if len(got) != len(want) || len(got) < 1000 {
			t.Fatalf("bytes %d procs %d: %d entries, want %d (and enough for many blocks)", c.bytes, c.procs, len(got), len(want))
		}
		for id, ts := range want {
			if !slices.Equal(got[id], ts) {
				t.Fatalf("bytes %d procs %d: entry %s has terms %v, want %v", c.bytes, c.procs, id, got[id], ts)
			}
		}
		for d := range 400 {
			if d%3 == 0 {
				loaded.RemoveDocument("t", fmt.Sprintf("d%d", d))
			}
		}
		want2 := build(t, src)
		for d := range 400 {
			if d%3 == 0 {
				want2.RemoveDocument("t", fmt.Sprintf("d%d", d))
			}
		}
		sameSearches(t, want2, loaded, false, true)
	}
}

// TestSaveBetweenIndexAndCommit: a save that falls between ingestion's index update and its commit of
// the row writes the document without a stamp; the saver's Close then writes again, so the next start
// reads the document from the snapshot instead of re-indexing it. (The race made
// TestSaverWritesWhenSettledAndAtClose fail once in CI when a tick fell inside that window.)
func TestSaveBetweenIndexAndCommit(t *testing.T) {
	ctx, src, path, ix := loadedCorpus(t)
	s := ix.StartSaver(src, "t", path, time.Hour, t.Logf) // no tick: the save below stands for one
	putDoc(src, rand.New(rand.NewPCG(1, 2)), "k0", "late", 1)
	ix.IndexDocument("t", "late", src.rows["late"])
	if err := ix.SaveSnapshot(ctx, src, "t", path); err != nil { // before the row's commit
		t.Fatal(err)
	}
	if ix.Dirty() || ix.Pending() != 1 {
		t.Fatalf("after the early save: dirty %v, pending %d, want clean with 1 pending", ix.Dirty(), ix.Pending())
	}
	commitRow(src, "k0", "late")
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ix.Pending() != 0 {
		t.Fatalf("Close left %d pending", ix.Pending())
	}
	loaded := New(snapParams())
	rep, err := loaded.LoadSnapshot(ctx, src, "t", path, t.Logf)
	if err != nil || !rep.Snapshot || rep.Reindexed != 0 {
		t.Fatalf("report %+v, %v: the committed document was re-indexed", rep, err)
	}
	sameSearches(t, ix, loaded, true)
}
