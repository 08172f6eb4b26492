package reconcile_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/fsblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

const tenant = "t1"

// world is the embedded stores with the ingestion service over them.
type world struct {
	db  *sqldb.DB
	vec vectors
	blb store.Blobs
	emb *embed.Offline
	svc *ingest.Service
	kb  rag.KnowledgeBase
}

// vectors is an index that can list its records.
type vectors interface {
	store.VectorIndex
	store.VectorLister
}

// newWorld is the embedded stores: SQLite, memvec and a blob directory.
func newWorld(t testing.TB) *world {
	t.Helper()
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	return newWorldOn(t, db, memvec.New(32))
}

func newWorldOn(t testing.TB, db *sqldb.DB, vec vectors) *world {
	t.Helper()
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	blobs, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{db: db, vec: vec, blb: blobs, emb: embed.NewOffline(32)}
	st := &ingest.Stages{Records: db, Vectors: w.vec, Blobs: blobs, Embedder: w.emb, Chunking: chunk.Options{ChildChars: 120, Overlap: 20, ParentChars: 400}}
	w.svc = &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.Policy{}}}
	w.kb = rag.KnowledgeBase{Tenant: tenant, Name: "manuals"}
	if err := db.CreateKB(context.Background(), &w.kb); err != nil {
		t.Fatal(err)
	}
	return w
}

// checker sees the stores two hours from now, so that what the test just wrote is old enough to judge
// (blob grace, stuck deadline).
func (w *world) checker(later time.Duration) *reconcile.Checker {
	return &reconcile.Checker{Records: w.db, Vectors: w.vec, Blobs: w.blb, Embedder: w.emb, Documents: w.svc,
		Tenants: []string{tenant}, Now: func() time.Time { return time.Now().Add(later) }}
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// seed writes n ready documents directly (no extraction), each with one parent, three children, their
// vectors and a stored markdown source: fast enough for a thousand documents in a unit test.
func (w *world) seed(t testing.TB, n int) []rag.Document {
	t.Helper()
	ctx := context.Background()
	docs := make([]rag.Document, n)
	for i := range n {
		d := rag.Document{Tenant: tenant, KBID: w.kb.ID, SourceURI: fmt.Sprintf("upload/%04d", i), FileName: "d.md", FileType: "md", Status: rag.StatusProcessing}
		if err := w.db.CreateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
		parent := rag.Chunk{ID: "p_" + d.ID, Tenant: tenant, KBID: w.kb.ID, DocumentID: d.ID, Level: rag.LevelParent, Content: "parent", ContentHash: hash("p" + d.ID), ContentType: rag.ContentGeneral}
		rows := []rag.Chunk{parent}
		var recs []rag.VectorRecord
		for j := range 3 {
			text := fmt.Sprintf("document %d passage %d about topic %d", i, j, i%7)
			c := rag.Chunk{ID: fmt.Sprintf("c_%s_%d", d.ID, j), Tenant: tenant, KBID: w.kb.ID, DocumentID: d.ID, ParentID: parent.ID, Level: rag.LevelChild,
				Index: j, Content: text, ContentHash: hash(text), VectorID: fmt.Sprintf("v_%s_%d", d.ID, j), ContentType: rag.ContentGeneral}
			rows = append(rows, c)
			v, _ := w.emb.Embed(ctx, []string{text})
			recs = append(recs, rag.VectorRecord{ID: c.VectorID, Tenant: tenant, KBID: w.kb.ID, DocumentID: d.ID, ChunkID: c.ID, Vector: v[0]})
		}
		if err := w.db.ApplyChunks(ctx, tenant, d.ID, rows, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.vec.Upsert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		src := fmt.Sprintf("# Document %d\n\nThe passage of document %d about topic %d.\n", i, i, i%7)
		if _, err := w.blb.Put(ctx, ingest.SourcePrefix(tenant, w.kb.ID, d.ID)+"source.md", strings.NewReader(src), ""); err != nil {
			t.Fatal(err)
		}
		d.Status, d.ChunkCount = rag.StatusReady, 3
		if err := w.db.UpdateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
		docs[i] = d
	}
	return docs
}

// key names one injected or found piece of drift, so found and injected sets can be compared.
func key(class, tenant, doc, id string) string { return class + " " + tenant + " " + doc + " " + id }

func found(rep reconcile.Report) map[string]bool {
	out := map[string]bool{}
	for _, f := range rep.Findings {
		switch f.Class {
		case reconcile.VectorsWithoutRows, reconcile.SourcesWithoutDocument, reconcile.StagingLeftovers:
			for _, id := range f.IDs {
				out[key(f.Class, f.Tenant, f.DocumentID, id)] = true
			}
		default:
			out[key(f.Class, f.Tenant, f.DocumentID, "")] = true
		}
	}
	return out
}

// injector records what it breaks.
type injector struct {
	t    testing.TB
	w    *world
	want map[string]bool
}

func (in *injector) missingVector(d rag.Document) {
	ctx := context.Background()
	if err := in.w.vec.Delete(ctx, tenant, []string{fmt.Sprintf("v_%s_1", d.ID)}); err != nil {
		in.t.Fatal(err)
	}
	in.want[key(reconcile.ReadyWithoutVectors, tenant, d.ID, "")] = true
}

func (in *injector) orphanVector(i int) {
	ctx := context.Background()
	doc, id := fmt.Sprintf("doc_gone%04d", i), fmt.Sprintf("v_orphan%04d", i)
	v, _ := in.w.emb.Embed(ctx, []string{id})
	if err := in.w.vec.Upsert(ctx, []rag.VectorRecord{{ID: id, Tenant: tenant, KBID: in.w.kb.ID, DocumentID: doc, ChunkID: "c", Vector: v[0]}}); err != nil {
		in.t.Fatal(err)
	}
	in.want[key(reconcile.VectorsWithoutRows, tenant, doc, id)] = true
}

func (in *injector) wrongVersion(d rag.Document) {
	ctx := context.Background()
	id := "v_old_" + d.ID
	v, _ := in.w.emb.Embed(ctx, []string{id})
	if err := in.w.vec.Upsert(ctx, []rag.VectorRecord{{ID: id, Tenant: tenant, KBID: d.KBID, DocumentID: d.ID, ChunkID: "c_old", Vector: v[0]}}); err != nil {
		in.t.Fatal(err)
	}
	in.want[key(reconcile.VectorsWithoutRows, tenant, d.ID, id)] = true
}

func (in *injector) setStatus(d rag.Document, status, class string) {
	cur, err := in.w.db.GetDocument(context.Background(), tenant, d.ID)
	if err != nil {
		in.t.Fatal(err)
	}
	cur.Status = status
	if err := in.w.db.UpdateDocument(context.Background(), &cur); err != nil {
		in.t.Fatal(err)
	}
	in.want[key(class, tenant, d.ID, "")] = true
}

func (in *injector) orphanSource(i int) {
	doc := fmt.Sprintf("doc_nosrc%04d", i)
	k := ingest.SourcePrefix(tenant, in.w.kb.ID, doc) + "source.pdf"
	if _, err := in.w.blb.Put(context.Background(), k, strings.NewReader("%PDF"), ""); err != nil {
		in.t.Fatal(err)
	}
	in.want[key(reconcile.SourcesWithoutDocument, tenant, doc, k)] = true
}

func (in *injector) goneSource(d rag.Document) {
	if err := in.w.blb.Delete(context.Background(), ingest.SourcePrefix(tenant, d.KBID, d.ID)+"source.md"); err != nil {
		in.t.Fatal(err)
	}
	in.want[key(reconcile.DocumentsWithoutSource, tenant, d.ID, "")] = true
}

// rowGone removes the document's row only, as a delete racing a write of chunks leaves it: its chunk
// rows (rows_of_deleted_documents), vectors and stored source stay.
func (in *injector) rowGone(d rag.Document) {
	if _, err := in.w.db.SQL().ExecContext(context.Background(), `DELETE FROM documents WHERE tenant_id = ? AND id = ?`, tenant, d.ID); err != nil {
		in.t.Fatal(err)
	}
	in.want[key(reconcile.DeletedDocuments, tenant, d.ID, "")] = true
	for j := range 3 {
		in.want[key(reconcile.VectorsWithoutRows, tenant, d.ID, fmt.Sprintf("v_%s_%d", d.ID, j))] = true
	}
	in.want[key(reconcile.SourcesWithoutDocument, tenant, d.ID, ingest.SourcePrefix(tenant, d.KBID, d.ID)+"source.md")] = true
}

func (in *injector) staging(d rag.Document) {
	k := ingest.StagingPrefix(tenant, d.ID) + "chunks.json"
	if _, err := in.w.blb.Put(context.Background(), k, strings.NewReader("[]"), ""); err != nil {
		in.t.Fatal(err)
	}
	in.want[key(reconcile.StagingLeftovers, tenant, d.ID, k)] = true
}

// perClass splits a key set by class.
func perClass(keys map[string]bool) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for k := range keys {
		c, _, _ := strings.Cut(k, " ")
		if out[c] == nil {
			out[c] = map[string]bool{}
		}
		out[c][k] = true
	}
	return out
}

// precisionRecall compares found with injected per class.
func precisionRecall(t testing.TB, want, got map[string]bool) {
	t.Helper()
	w, g := perClass(want), perClass(got)
	for _, c := range reconcile.Classes {
		tp := 0
		for k := range g[c] {
			if w[c][k] {
				tp++
			}
		}
		if tp != len(w[c]) || tp != len(g[c]) {
			var fn, fp []string
			for k := range w[c] {
				if !g[c][k] {
					fn = append(fn, k)
				}
			}
			for k := range g[c] {
				if !w[c][k] {
					fp = append(fp, k)
				}
			}
			t.Errorf("%s: injected %d, found %d, true positives %d; missed %v; false %v", c, len(w[c]), len(g[c]), tp, head(fn), head(fp))
		}
	}
}

func head(s []string) []string {
	slices.Sort(s)
	if len(s) > 3 {
		return s[:3]
	}
	return s
}

// assertConsistent checks the end state directly, without the checker: every ready document's vectors
// are exactly its child rows' and its source is stored; nothing is left of deleted or unknown documents.
func (w *world) assertConsistent(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	docs, _ := w.db.ListDocuments(ctx, tenant, w.kb.ID, "")
	known := map[string]rag.Document{}
	for _, d := range docs {
		known[d.ID] = d
		if d.Status != rag.StatusReady && d.Status != rag.StatusFailed {
			t.Errorf("document %s is %s after repair", d.ID, d.Status)
		}
	}
	refs, _ := w.vec.ListVectors(ctx, rag.Filter{Tenant: tenant})
	byDoc := map[string][]string{}
	for _, r := range refs {
		if _, ok := known[r.DocumentID]; !ok {
			t.Errorf("vector %s of unknown document %s", r.ID, r.DocumentID)
		}
		byDoc[r.DocumentID] = append(byDoc[r.DocumentID], r.ID)
	}
	for _, d := range docs {
		if d.Status != rag.StatusReady {
			continue
		}
		rows, _ := w.db.ListChunks(ctx, tenant, d.ID)
		var want []string
		for _, r := range rows {
			if r.Level == rag.LevelChild {
				want = append(want, r.VectorID)
			}
		}
		slices.Sort(want)
		got := byDoc[d.ID]
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("document %s: vectors %v, child rows %v", d.ID, got, want)
		}
	}
	if orphans, err := w.db.ListChunkOrphans(ctx, tenant); err != nil || len(orphans) != 0 {
		t.Errorf("chunk rows without a document: %+v, %v", orphans, err)
	}
	objs, _ := w.blb.List(ctx, "")
	for _, o := range objs {
		parts := strings.Split(o.Key, "/")
		doc := parts[3%len(parts)]
		if parts[0] == "staging" {
			t.Errorf("staging left: %s", o.Key)
			continue
		}
		if _, ok := known[doc]; !ok {
			t.Errorf("blob of unknown document: %s", o.Key)
		}
	}
}

// TestXS01 is XS-01 at a tenth of its scale (100 documents): each class injected, detection recall and
// precision 100% per class, repair, and a second run that finds and changes nothing.
func TestXS01(t *testing.T) {
	dry, rep := runXS01(t, 100, 1)
	t.Logf("drift %v repaired %v", dry.Drift, rep.Repaired)
}

// runXS01 seeds n documents and injects drift in proportion to XS-01's 1,000 (50 orphans, 50 missing
// vectors, 20 stuck, 20 sources without rows, 20 rows without sources, 10 wrong-version vectors), plus
// interrupted deletes and staging leftovers.
func runXS01(t testing.TB, n, scale int) (reconcile.Report, reconcile.Report) {
	return runXS01On(t, newWorld(t), n, scale)
}

func runXS01On(t testing.TB, w *world, n, scale int) (reconcile.Report, reconcile.Report) {
	docs := w.seed(t, n)
	in := &injector{t: t, w: w, want: map[string]bool{}}
	next := 0
	take := func(k int) []rag.Document { d := docs[next : next+k]; next += k; return d }
	per := func(x int) int { return max(1, x*n/1000) }
	for _, d := range take(per(50)) {
		in.missingVector(d)
	}
	for i := range per(50) * scale {
		in.orphanVector(i)
	}
	for _, d := range take(per(10)) {
		in.wrongVersion(d)
	}
	for _, d := range take(per(20)) {
		in.setStatus(d, rag.StatusProcessing, reconcile.StuckDocuments)
	}
	for i := range per(20) {
		in.orphanSource(i)
	}
	for _, d := range take(per(20)) {
		in.goneSource(d)
	}
	for _, d := range take(per(10)) {
		in.setStatus(d, rag.StatusDeleted, reconcile.DeletedDocuments)
	}
	for _, d := range take(per(10)) {
		in.staging(d)
	}
	for _, d := range take(per(5)) {
		in.rowGone(d)
	}
	ctx := context.Background()
	c := w.checker(2 * time.Hour)
	dry, err := c.Run(ctx, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	precisionRecall(t, in.want, found(dry))
	if dry.Clean() || slices.ContainsFunc(slices.Collect(maps.Values(dry.Repaired)), func(n int) bool { return n != 0 }) {
		t.Fatalf("a dry run must report drift and repair nothing: %+v", dry.Repaired)
	}
	rep, err := c.Run(ctx, reconcile.Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || len(rep.Errors) > 0 {
		t.Fatalf("after repair: remaining %v, errors %v", rep.Remaining, head(rep.Errors))
	}
	if !maps.Equal(rep.Drift, dry.Drift) || !maps.Equal(rep.Repaired, rep.Drift) {
		t.Fatalf("repair run: drift %v (dry run %v), repaired %v", rep.Drift, dry.Drift, rep.Repaired)
	}
	again, err := c.Run(ctx, reconcile.Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range reconcile.Classes {
		if again.Drift[cl] != 0 || again.Repaired[cl] != 0 {
			t.Fatalf("second run: drift %v, repaired %v; want 0 changes", again.Drift, again.Repaired)
		}
	}
	w.assertConsistent(t)
	return dry, rep
}

func TestEveryClassPresentWhenClean(t *testing.T) {
	w := newWorld(t)
	w.seed(t, 3)
	rep, err := w.checker(2*time.Hour).Run(context.Background(), reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range reconcile.Classes {
		if n, ok := rep.Drift[cl]; !ok || n != 0 {
			t.Errorf("clean store: drift[%s] = %d, %v; want 0, present", cl, n, ok)
		}
		if _, ok := rep.Repaired[cl]; !ok {
			t.Errorf("repaired[%s] missing", cl)
		}
	}
	if !rep.Clean() || rep.Documents != 3 || rep.Vectors != 9 {
		t.Fatalf("clean report: %+v", rep)
	}
}

// TestInFlightIsNotDrift: a document being ingested right now (processing, fresh staging and vectors
// without rows yet) is not reported; the same state two hours later is.
func TestInFlightIsNotDrift(t *testing.T) {
	w := newWorld(t)
	docs := w.seed(t, 2)
	in := &injector{t: t, w: w, want: map[string]bool{}}
	in.setStatus(docs[0], rag.StatusProcessing, reconcile.StuckDocuments)
	in.staging(docs[0])
	in.orphanSource(1) // a fresh upload whose document row a later listing would show
	ctx := context.Background()
	now, err := w.checker(0).Run(ctx, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !now.Clean() {
		t.Fatalf("in-flight work reported as drift: %v", now.Drift)
	}
	later, err := w.checker(2*time.Hour).Run(ctx, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if later.Drift[reconcile.StuckDocuments] != 1 || later.Drift[reconcile.SourcesWithoutDocument] != 1 {
		t.Fatalf("two hours later: %v", later.Drift)
	}
}

func TestKBScope(t *testing.T) {
	w := newWorld(t)
	docs := w.seed(t, 2)
	other := rag.KnowledgeBase{Tenant: tenant, Name: "other"}
	if err := w.db.CreateKB(context.Background(), &other); err != nil {
		t.Fatal(err)
	}
	in := &injector{t: t, w: w, want: map[string]bool{}}
	in.missingVector(docs[0])
	rep, err := w.checker(2*time.Hour).Run(context.Background(), reconcile.Options{KB: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.Documents != 0 {
		t.Fatalf("the other knowledge base: %+v", rep.Drift)
	}
	rep, err = w.checker(2*time.Hour).Run(context.Background(), reconcile.Options{KB: "manuals"})
	if err != nil || rep.Drift[reconcile.ReadyWithoutVectors] != 1 {
		t.Fatalf("manuals: %v, %v", rep.Drift, err)
	}
	if _, err := w.checker(0).Run(context.Background(), reconcile.Options{KB: "nope"}); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("unknown knowledge base: %v, want Invalid", err)
	}
}

// TestStuckWithoutSourceIsFailed: a stuck document whose source is gone can never finish.
func TestStuckWithoutSourceIsFailed(t *testing.T) {
	w := newWorld(t)
	docs := w.seed(t, 1)
	in := &injector{t: t, w: w, want: map[string]bool{}}
	in.setStatus(docs[0], rag.StatusPending, reconcile.StuckDocuments)
	w.blb.Delete(context.Background(), ingest.SourcePrefix(tenant, docs[0].KBID, docs[0].ID)+"source.md")
	rep, err := w.checker(2*time.Hour).Run(context.Background(), reconcile.Options{Repair: true})
	if err != nil || !rep.Clean() {
		t.Fatalf("%+v, %v", rep, err)
	}
	d, _ := w.db.GetDocument(context.Background(), tenant, docs[0].ID)
	if d.Status != rag.StatusFailed || !strings.Contains(d.Error, "source is gone") {
		t.Fatalf("stuck document without source: %s %q", d.Status, d.Error)
	}
}

// gateEmbedder blocks the first embedding call until released, holding a run inside its lease.
type gateEmbedder struct {
	*embed.Offline
	entered chan struct{}
	release chan struct{}
	once    bool
}

func (g *gateEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if !g.once {
		g.once = true
		close(g.entered)
		<-g.release
	}
	return g.Offline.Embed(ctx, texts)
}

// TestXS02 starts a second run while the first holds the SQL lease (real SQLite leases): the second
// exits cleanly with lock_held and repairs nothing; the first repairs everything once.
func TestXS02(t *testing.T) {
	w := newWorld(t)
	docs := w.seed(t, 20)
	in := &injector{t: t, w: w, want: map[string]bool{}}
	for _, d := range docs[:5] {
		in.missingVector(d)
	}
	for i := range 5 {
		in.orphanVector(i)
	}
	gate := &gateEmbedder{Offline: w.emb, entered: make(chan struct{}), release: make(chan struct{})}
	first := w.checker(2 * time.Hour)
	first.Lease, first.Embedder = w.db, gate
	second := w.checker(2 * time.Hour)
	second.Lease = w.db
	ctx := context.Background()
	type result struct {
		rep reconcile.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := first.Run(ctx, reconcile.Options{Repair: true})
		done <- result{rep, err}
	}()
	<-gate.entered // the first run is repairing, inside its lease
	rep2, err := second.Run(ctx, reconcile.Options{Repair: true})
	if err != nil || !rep2.LockHeld {
		t.Fatalf("second run: lock_held %v, err %v; want lock_held", rep2.LockHeld, err)
	}
	for _, cl := range reconcile.Classes {
		if rep2.Repaired[cl] != 0 || rep2.Drift[cl] != 0 {
			t.Fatalf("the second run touched %s: drift %v repaired %v", cl, rep2.Drift, rep2.Repaired)
		}
	}
	close(gate.release)
	r1 := <-done
	if r1.err != nil || !r1.rep.Clean() || r1.rep.Repaired[reconcile.ReadyWithoutVectors] != 5 || r1.rep.Repaired[reconcile.VectorsWithoutRows] != 5 {
		t.Fatalf("first run: %+v, %v", r1.rep.Repaired, r1.err)
	}
	// the lease was released: a third run takes it and finds nothing to do
	rep3, err := second.Run(ctx, reconcile.Options{Repair: true})
	if err != nil || rep3.LockHeld || sumMap(rep3.Drift) != 0 {
		t.Fatalf("third run: %+v, %v", rep3, err)
	}
}

func sumMap(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestXS01Scale runs XS-01 at DOCMIND_XS01_DOCS documents (1000 is the scale) and logs the
// check's throughput: go test ./shared/reconcile -run XS01Scale -v with DOCMIND_XS01_DOCS=1000.
func TestXS01Scale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("DOCMIND_XS01_DOCS"))
	if n < 100 {
		t.Skip("set DOCMIND_XS01_DOCS=1000 (or more) to run XS-01 at scale")
	}
	dry, rep := runXS01(t, n, 1)
	t.Logf("XS-01 at %d documents: drift %v", n, dry.Drift)
	t.Logf("dry run: %d documents, %d vectors, %d blobs in %s = %.0f documents/s", dry.Documents, dry.Vectors, dry.Blobs, dry.Duration, float64(dry.Documents)/dry.Duration.Seconds())
	t.Logf("repair run: %s (%.0f documents/s); max_docs_per_run in 15 minutes at the check's rate: %.0f",
		rep.Duration, float64(rep.Documents)/rep.Duration.Seconds(), 900*float64(dry.Documents)/dry.Duration.Seconds())
}

// interruptedKBDelete leaves a knowledge base recorded as being deleted, with two documents, their
// vectors and sources still there, and checks that it is found as one piece of drift (its documents not
// counted elsewhere), finished by one repair, and gone for good.
func interruptedKBDelete(t *testing.T, w *world) {
	ctx := context.Background()
	for _, name := range []string{"a.md", "b.md"} {
		if _, err := w.svc.Ingest(ctx, tenant, ingest.Source{KBName: "old", URI: "inbox/old/" + name, Name: name, Data: []byte("# " + name + "\n\nSome text about " + name + ".\n")}); err != nil {
			t.Fatal(err)
		}
	}
	old, err := w.db.GetKBByName(ctx, tenant, "old")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.db.MarkKBDeleting(ctx, old); err != nil {
		t.Fatal(err)
	}
	c := w.checker(2 * time.Hour)
	dry, err := c.Run(ctx, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Drift[reconcile.DeletedKnowledgeBases] != 1 || sumMap(dry.Drift) != 1 {
		t.Fatalf("an interrupted knowledge-base delete: drift %v, want deleted_knowledge_bases 1 and nothing else", dry.Drift)
	}
	rep, err := c.Run(ctx, reconcile.Options{Repair: true})
	if err != nil || !rep.Clean() || rep.Repaired[reconcile.DeletedKnowledgeBases] != 1 {
		t.Fatalf("repair: %+v, %v", rep.Repaired, err)
	}
	if _, err := w.db.GetKB(ctx, tenant, old.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("the knowledge base survived: %v", err)
	}
	if refs, _ := w.vec.ListVectors(ctx, rag.Filter{Tenant: tenant, KBIDs: []string{old.ID}}); len(refs) != 0 {
		t.Fatalf("%d vectors left", len(refs))
	}
	if objs, _ := w.blb.List(ctx, ingest.SourcePrefix(tenant, old.ID, "")); len(objs) != 0 {
		t.Fatalf("%d sources left", len(objs))
	}
	again, err := c.Run(ctx, reconcile.Options{Repair: true})
	if err != nil || sumMap(again.Drift) != 0 || sumMap(again.Repaired) != 0 {
		t.Fatalf("second run: %v %v, %v", again.Drift, again.Repaired, err)
	}
}

func TestInterruptedKBDelete(t *testing.T) { interruptedKBDelete(t, newWorld(t)) }
