package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func chunk(tenant, kb, doc, id string, idx int, level, text string, tags ...string) rag.Chunk {
	return rag.Chunk{ID: id, Tenant: tenant, KBID: kb, DocumentID: doc, Level: level, Index: idx, Content: text,
		ContentHash: hash(text), ContentType: rag.ContentGeneral, Chapter: "A > B", Tags: tags, TokenCount: len(text) / 4}
}

// Budget of a test context derived from the work it does: a fixed allowance for setup plus one per
// database round trip. perRoundTrip is about 5x a loaded MariaDB's commit (10-20 ms measured by the
// ManyChunks run that took 23 s for about 2,400 round trips), so a slow CI machine does not fail a
// correct adapter; a hung call is still caught, by this budget or by go test's own -timeout.
const (
	setupBudget  = 30 * time.Second
	perRoundTrip = 100 * time.Millisecond
)

// workCtx is a context for a subtest that makes about roundTrips database round trips. It ends at
// setupBudget + roundTrips*perRoundTrip, or a little before the test binary's own deadline when that is
// sooner (so the failure names the call that was slow instead of a panic dump).
func workCtx(t *testing.T, roundTrips int) context.Context {
	budget := setupBudget + time.Duration(roundTrips)*perRoundTrip
	deadline := time.Now().Add(budget)
	if d, ok := t.Deadline(); ok && d.Add(-5*time.Second).Before(deadline) {
		deadline = d.Add(-5 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// TestRelational runs the relational contract. open returns a fresh, empty, unmigrated database.
func TestRelational(t *testing.T, open func(t *testing.T) *sqldb.DB) {
	migrated := func(t *testing.T) *sqldb.DB {
		db := open(t)
		if _, err := db.Migrate(workCtx(t, 100)); err != nil { // about 50 DDL statements, each a round trip or two
			t.Fatalf("Migrate: %v", err)
		}
		return db
	}

	t.Run("MigrateIdempotent", func(t *testing.T) {
		db := open(t)
		ctx := workCtx(t, 250) // two migration runs of about 50 statements each, plus their bookkeeping
		if v, err := db.SchemaVersion(ctx); err != nil || v != 0 {
			t.Fatalf("SchemaVersion before migrate = %d, %v", v, err)
		}
		first, err := db.Migrate(ctx)
		if err != nil || len(first) == 0 || first[0] != 1 {
			t.Fatalf("first Migrate = %v, %v", first, err)
		}
		again, err := db.Migrate(ctx)
		if err != nil || len(again) != 0 {
			t.Fatalf("second Migrate applied %v, %v; want nothing", again, err)
		}
		v, err := db.SchemaVersion(ctx)
		if err != nil || v != first[len(first)-1] {
			t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, first[len(first)-1])
		}
		must(t, db.Ping(ctx))
	})

	t.Run("GetDocuments", func(t *testing.T) { testGetDocuments(t, migrated(t)) })
	t.Run("GetReadyChunks", func(t *testing.T) { testGetReadyChunks(t, migrated(t)) })

	t.Run("KnowledgeBases", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		if kbs, err := db.ListKBs(ctx, "t1"); err != nil || kbs == nil || len(kbs) != 0 {
			t.Fatalf("ListKBs on empty = %v, %v; want empty non-nil", kbs, err)
		}
		b := rag.KnowledgeBase{Tenant: "t1", Name: "保险条款", Description: "policies"}
		a := rag.KnowledgeBase{Tenant: "t1", Name: "Alpha"}
		must(t, db.CreateKB(ctx, &b))
		must(t, db.CreateKB(ctx, &a))
		if b.ID == "" || b.CreatedAt.IsZero() {
			t.Fatalf("CreateKB did not fill id/created: %+v", b)
		}
		dup := rag.KnowledgeBase{Tenant: "t1", Name: "Alpha"}
		checkKind(t, "duplicate name", rag.KindConflict, db.CreateKB(ctx, &dup))
		other := rag.KnowledgeBase{Tenant: "t2", Name: "Alpha"}
		must(t, db.CreateKB(ctx, &other)) // names are unique per tenant only
		dupID := rag.KnowledgeBase{ID: a.ID, Tenant: "t1", Name: "Beta"}
		checkKind(t, "duplicate id", rag.KindConflict, db.CreateKB(ctx, &dupID))

		kbs, err := db.ListKBs(ctx, "t1")
		must(t, err)
		if len(kbs) != 2 || kbs[0].Name != "Alpha" || kbs[1].Name != "保险条款" {
			t.Fatalf("ListKBs = %+v, want Alpha then 保险条款", kbs)
		}
		got, err := db.GetKB(ctx, "t1", b.ID)
		must(t, err)
		if got.Name != b.Name || got.Description != "policies" || got.Version != 0 || !got.CreatedAt.Equal(b.CreatedAt) {
			t.Fatalf("GetKB = %+v, want %+v", got, b)
		}
		byName, err := db.GetKBByName(ctx, "t1", "保险条款")
		if err != nil || byName.ID != b.ID {
			t.Fatalf("GetKBByName = %+v, %v", byName, err)
		}
		checkKind(t, "name is case-sensitive", rag.KindNotFound, second(db.GetKBByName(ctx, "t1", "alpha")))
		checkKind(t, "other tenant by id", rag.KindNotFound, second(db.GetKB(ctx, "t2", b.ID)))
		checkKind(t, "missing", rag.KindNotFound, second(db.GetKB(ctx, "t1", "kb_missing")))

		for want := int64(1); want <= 3; want++ {
			v, err := db.BumpKBVersion(ctx, "t1", b.ID)
			if err != nil || v != want {
				t.Fatalf("BumpKBVersion = %d, %v; want %d", v, err, want)
			}
		}
		checkKind(t, "bump other tenant", rag.KindNotFound, second(db.BumpKBVersion(ctx, "t2", b.ID)))
		if got, _ := db.GetKB(ctx, "t1", b.ID); got.Version != 3 {
			t.Fatalf("version after 3 bumps = %d", got.Version)
		}

		checkKind(t, "delete other tenant", rag.KindNotFound, db.DeleteKB(ctx, "t2", b.ID))
		must(t, db.DeleteKB(ctx, "t1", b.ID))
		checkKind(t, "delete twice", rag.KindNotFound, db.DeleteKB(ctx, "t1", b.ID))
		checkKind(t, "get deleted", rag.KindNotFound, second(db.GetKB(ctx, "t1", b.ID)))

		for _, bad := range []string{"", " padded ", "a/b", "..", "x\x00y", strings.Repeat("n", 256)} {
			kb := rag.KnowledgeBase{Tenant: "t1", Name: bad}
			checkKind(t, fmt.Sprintf("bad name %.20q", bad), rag.KindInvalid, db.CreateKB(ctx, &kb))
		}
		for _, bad := range hostileIDs {
			checkKind(t, fmt.Sprintf("hostile tenant %.20q", bad), rag.KindInvalid, second(db.ListKBs(ctx, bad)))
			checkKind(t, fmt.Sprintf("hostile kb id %.20q", bad), rag.KindInvalid, second(db.GetKB(ctx, "t1", bad)))
		}
	})

	t.Run("Documents", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
		must(t, db.CreateKB(ctx, &kb))
		if docs, err := db.ListDocuments(ctx, "t1", kb.ID, ""); err != nil || docs == nil || len(docs) != 0 {
			t.Fatalf("ListDocuments on empty = %v, %v", docs, err)
		}
		d1 := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "inbox/kb/手册 v2.pdf", FileType: "pdf", SourceETag: "e1", SourceSequencer: "0A"}
		must(t, db.CreateDocument(ctx, &d1))
		if d1.ID == "" || d1.Status != rag.StatusPending || d1.FileName != "手册 v2.pdf" {
			t.Fatalf("CreateDocument defaults: %+v", d1)
		}
		d2 := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "inbox/kb/b.md", FileName: "b.md", Status: rag.StatusProcessing}
		must(t, db.CreateDocument(ctx, &d2))
		same := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: d1.SourceURI}
		checkKind(t, "same source twice", rag.KindConflict, db.CreateDocument(ctx, &same))
		orphan := rag.Document{Tenant: "t1", KBID: "kb_missing", SourceURI: "x"}
		checkKind(t, "missing kb", rag.KindNotFound, db.CreateDocument(ctx, &orphan))
		foreign := rag.Document{Tenant: "t2", KBID: kb.ID, SourceURI: "y"}
		checkKind(t, "another tenant's kb", rag.KindNotFound, db.CreateDocument(ctx, &foreign))
		badStatus := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "z", Status: "done"}
		checkKind(t, "bad status", rag.KindInvalid, db.CreateDocument(ctx, &badStatus))
		noSource := rag.Document{Tenant: "t1", KBID: kb.ID}
		checkKind(t, "no source", rag.KindInvalid, db.CreateDocument(ctx, &noSource))

		got, err := db.GetDocument(ctx, "t1", d1.ID)
		must(t, err)
		if got.SourceURI != d1.SourceURI || got.SourceETag != "e1" || got.SourceSequencer != "0A" || got.FileType != "pdf" || got.KBID != kb.ID {
			t.Fatalf("GetDocument = %+v", got)
		}
		bySrc, err := db.GetDocumentBySource(ctx, "t1", kb.ID, "inbox/kb/b.md")
		if err != nil || bySrc.ID != d2.ID {
			t.Fatalf("GetDocumentBySource = %+v, %v", bySrc, err)
		}
		checkKind(t, "by source missing", rag.KindNotFound, second(db.GetDocumentBySource(ctx, "t1", kb.ID, "nope")))
		checkKind(t, "by id other tenant", rag.KindNotFound, second(db.GetDocument(ctx, "t2", d1.ID)))

		docs, err := db.ListDocuments(ctx, "t1", kb.ID, "")
		must(t, err)
		if len(docs) != 2 || !slices.IsSortedFunc(docs, func(a, b rag.Document) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		}) || !slices.Equal(sorted([]string{docs[0].ID, docs[1].ID}), sorted([]string{d1.ID, d2.ID})) {
			t.Fatalf("ListDocuments = %v, want both documents by (created_at, id)", docs)
		}
		proc, err := db.ListDocuments(ctx, "t1", kb.ID, rag.StatusProcessing)
		if err != nil || len(proc) != 1 || proc[0].ID != d2.ID {
			t.Fatalf("ListDocuments(processing) = %v, %v", proc, err)
		}
		if other, _ := db.ListDocuments(ctx, "t2", kb.ID, ""); len(other) != 0 {
			t.Fatalf("another tenant lists %d documents", len(other))
		}
		checkKind(t, "list bad status", rag.KindInvalid, second(db.ListDocuments(ctx, "t1", kb.ID, "x")))

		got.Status, got.Error, got.ChunkCount, got.DocVersion, got.EffectiveDate, got.ContentHash = rag.StatusFailed, "bad PDF: truncated xref", 7, "2.1.0", "2024-05-01", hash("x")
		got.StageMillis = `{"extract":12,"index":3}`
		must(t, db.UpdateDocument(ctx, &got))
		re, _ := db.GetDocument(ctx, "t1", d1.ID)
		if re.Status != rag.StatusFailed || re.Error != "bad PDF: truncated xref" || re.ChunkCount != 7 || re.DocVersion != "2.1.0" || re.EffectiveDate != "2024-05-01" || re.ContentHash != hash("x") || re.StageMillis != `{"extract":12,"index":3}` {
			t.Fatalf("after UpdateDocument: %+v", re)
		}
		if re.UpdatedAt.Before(re.CreatedAt) {
			t.Fatalf("updated_at %v before created_at %v", re.UpdatedAt, re.CreatedAt)
		}
		cross := got
		cross.Tenant = "t2"
		checkKind(t, "update other tenant", rag.KindNotFound, db.UpdateDocument(ctx, &cross))
		if re, _ := db.GetDocument(ctx, "t1", d1.ID); re.Status != rag.StatusFailed {
			t.Fatal("cross-tenant update changed the row")
		}

		checkKind(t, "delete other tenant", rag.KindNotFound, db.DeleteDocument(ctx, "t2", d1.ID))
		must(t, db.DeleteDocument(ctx, "t1", d1.ID))
		checkKind(t, "delete twice", rag.KindNotFound, db.DeleteDocument(ctx, "t1", d1.ID))
		// the source can be ingested again after a delete
		again := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: d1.SourceURI}
		must(t, db.CreateDocument(ctx, &again))
		// deleting the kb removes its documents
		must(t, db.DeleteKB(ctx, "t1", kb.ID))
		checkKind(t, "doc of deleted kb", rag.KindNotFound, second(db.GetDocument(ctx, "t1", again.ID)))
	})

	t.Run("Chunks", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
		must(t, db.CreateKB(ctx, &kb))
		doc := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "a.md"}
		must(t, db.CreateDocument(ctx, &doc))
		doc2 := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "b.md"}
		must(t, db.CreateDocument(ctx, &doc2))
		if cs, err := db.ListChunks(ctx, "t1", doc.ID); err != nil || cs == nil || len(cs) != 0 {
			t.Fatalf("ListChunks on empty = %v, %v", cs, err)
		}
		p := chunk("t1", kb.ID, doc.ID, "p0", 0, rag.LevelParent, "# A\n\nparent text")
		c0 := chunk("t1", kb.ID, doc.ID, "c0", 0, rag.LevelChild, "# A\n\n第一段 child zero", "保险", "faq")
		c0.ParentID, c0.VectorID, c0.Page = "p0", rag.VectorID(kb.ID, doc.ID, c0.ContentHash, 0), 3
		c1 := chunk("t1", kb.ID, doc.ID, "c1", 1, rag.LevelChild, "# A\n\nchild one")
		c1.ParentID = "p0"
		must(t, db.ApplyChunks(ctx, "t1", doc.ID, []rag.Chunk{c1, p, c0}, nil))
		must(t, db.ApplyChunks(ctx, "t1", doc2.ID, []rag.Chunk{chunk("t1", kb.ID, doc2.ID, "x0", 0, rag.LevelChild, "other doc")}, nil))

		cs, err := db.ListChunks(ctx, "t1", doc.ID)
		must(t, err)
		if got := chunkIDs(cs); !slices.Equal(got, []string{"c0", "p0", "c1"}) {
			t.Fatalf("ListChunks order = %v, want c0 p0 c1 (index, then level)", got)
		}
		if g := cs[0]; g.Content != c0.Content || g.ParentID != "p0" || g.VectorID != c0.VectorID || g.Page != 3 ||
			!slices.Equal(g.Tags, []string{"保险", "faq"}) || g.Chapter != "A > B" || g.ContentHash != c0.ContentHash || g.KBID != kb.ID {
			t.Fatalf("round trip: got %+v, want %+v", g, c0)
		}
		if cs[1].Tags != nil && len(cs[1].Tags) != 0 {
			t.Fatalf("untagged chunk has tags %v", cs[1].Tags)
		}

		got, err := db.GetChunks(ctx, "t1", []string{"c1", "missing", "x0", "c1"})
		must(t, err)
		if ids := chunkIDs(got); !slices.Equal(ids, []string{"c1", "x0"}) {
			t.Fatalf("GetChunks = %v, want c1 x0 in request order", ids)
		}
		if other, _ := db.GetChunks(ctx, "t2", []string{"c1"}); len(other) != 0 {
			t.Fatal("GetChunks crossed tenants")
		}
		if none, err := db.GetChunks(ctx, "t1", nil); err != nil || len(none) != 0 {
			t.Fatalf("GetChunks(nil) = %v, %v", none, err)
		}

		count := func(f rag.Filter, level string) int {
			n, err := db.CountChunks(ctx, f, level)
			must(t, err)
			return n
		}
		if n := count(rag.Filter{Tenant: "t1"}, ""); n != 4 {
			t.Fatalf("count all = %d", n)
		}
		if n := count(rag.Filter{Tenant: "t1", DocumentIDs: []string{doc.ID}}, rag.LevelChild); n != 2 {
			t.Fatalf("count children of doc = %d", n)
		}
		if n := count(rag.Filter{Tenant: "t1", KBIDs: []string{kb.ID}}, rag.LevelParent); n != 1 {
			t.Fatalf("count parents = %d", n)
		}
		if n := count(rag.Filter{Tenant: "t2"}, ""); n != 0 {
			t.Fatalf("other tenant count = %d", n)
		}
		checkKind(t, "count bad level", rag.KindInvalid, second(db.CountChunks(ctx, rag.Filter{Tenant: "t1"}, "leaf")))

		// a diff: remove c1, add c2; one transaction
		c2 := chunk("t1", kb.ID, doc.ID, "c2", 1, rag.LevelChild, "# A\n\nchild one, edited")
		must(t, db.ApplyChunks(ctx, "t1", doc.ID, []rag.Chunk{c2}, []string{"c1", "never-existed"}))
		cs, _ = db.ListChunks(ctx, "t1", doc.ID)
		if got := chunkIDs(cs); !slices.Equal(got, []string{"c0", "p0", "c2"}) {
			t.Fatalf("after diff = %v", got)
		}

		// all or nothing: a conflicting add rolls back the removals of the same call
		checkKind(t, "duplicate id", rag.KindConflict, db.ApplyChunks(ctx, "t1", doc.ID,
			[]rag.Chunk{chunk("t1", kb.ID, doc.ID, "c3", 2, rag.LevelChild, "new"), chunk("t1", kb.ID, doc.ID, "c0", 9, rag.LevelChild, "dup")}, []string{"c2"}))
		cs, _ = db.ListChunks(ctx, "t1", doc.ID)
		if got := chunkIDs(cs); !slices.Equal(got, []string{"c0", "p0", "c2"}) {
			t.Fatalf("a failed ApplyChunks left partial changes: %v", got)
		}

		bad := []struct {
			name string
			c    rag.Chunk
		}{
			{"wrong tenant", chunk("t2", kb.ID, doc.ID, "b1", 0, rag.LevelChild, "x")},
			{"wrong doc", chunk("t1", kb.ID, doc2.ID, "b2", 0, rag.LevelChild, "x")},
			{"wrong kb", chunk("t1", "kb_other", doc.ID, "b3", 0, rag.LevelChild, "x")},
			{"bad level", chunk("t1", kb.ID, doc.ID, "b4", 0, "leaf", "x")},
			{"hostile id", chunk("t1", kb.ID, doc.ID, "b' or 1=1", 0, rag.LevelChild, "x")},
		}
		for _, b := range bad {
			checkKind(t, b.name, rag.KindInvalid, db.ApplyChunks(ctx, "t1", doc.ID, []rag.Chunk{b.c}, nil))
		}
		noHash := chunk("t1", kb.ID, doc.ID, "b5", 0, rag.LevelChild, "x")
		noHash.ContentHash = ""
		checkKind(t, "no hash", rag.KindInvalid, db.ApplyChunks(ctx, "t1", doc.ID, []rag.Chunk{noHash}, nil))
		checkKind(t, "other tenant's doc", rag.KindNotFound, db.ApplyChunks(ctx, "t2", doc.ID, nil, []string{"c0"}))
		if n := count(rag.Filter{Tenant: "t1", DocumentIDs: []string{doc.ID}}, ""); n != 3 {
			t.Fatalf("rejected calls changed chunks: %d", n)
		}

		// deleting the document deletes its chunks and nothing else
		must(t, db.DeleteDocument(ctx, "t1", doc.ID))
		if n := count(rag.Filter{Tenant: "t1"}, ""); n != 1 {
			t.Fatalf("after DeleteDocument %d chunks remain, want 1 (the other document's)", n)
		}
	})

	t.Run("ManyChunks", func(t *testing.T) {
		db := migrated(t)
		const n = 1200
		// Round trips: n inserts, their reads, 1,100 deletes and the counts (the adapters batch some of
		// them; this is the upper bound).
		ctx := workCtx(t, 3*n)
		kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
		must(t, db.CreateKB(ctx, &kb))
		doc := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "big.md"}
		must(t, db.CreateDocument(ctx, &doc))
		var add []rag.Chunk
		var ids []string
		for i := range n {
			id := fmt.Sprintf("c%04d", i)
			add = append(add, chunk("t1", kb.ID, doc.ID, id, i, rag.LevelChild, fmt.Sprintf("text %d", i)))
			ids = append(ids, id)
		}
		must(t, db.ApplyChunks(ctx, "t1", doc.ID, add, nil))
		got, err := db.GetChunks(ctx, "t1", ids)
		must(t, err)
		if len(got) != 1200 || got[1199].ID != "c1199" {
			t.Fatalf("GetChunks over batches returned %d", len(got))
		}
		must(t, db.ApplyChunks(ctx, "t1", doc.ID, nil, ids[:1100]))
		if n, _ := db.CountChunks(ctx, rag.Filter{Tenant: "t1"}, ""); n != 100 {
			t.Fatalf("after removing 1100 of 1200: %d", n)
		}
	})

	t.Run("CommitDocuments", func(t *testing.T) { testCommitDocuments(t, migrated(t)) })
	t.Run("ChunkOrphans", func(t *testing.T) { testChunkOrphans(t, migrated(t)) })
	t.Run("Conversations", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		c := rag.Conversation{Tenant: "t1", User: "alice", KBIDs: []string{"kb_a"}, Title: strings.Repeat("标题", 150)}
		must(t, db.CreateConversation(ctx, &c))
		if !strings.HasPrefix(c.ID, "conv_") || len([]rune(c.Title)) != 200 {
			t.Fatalf("created %+v", c)
		}
		got, err := db.GetConversation(ctx, "t1", "alice", c.ID)
		if err != nil || got.ID != c.ID || len(got.KBIDs) != 1 || got.KBIDs[0] != "kb_a" || got.Title != c.Title {
			t.Fatalf("GetConversation = %+v, %v", got, err)
		}
		for _, who := range [][2]string{{"t1", "bob"}, {"t2", "alice"}, {"t1", "alice' OR '1'='1"}} {
			if _, err := db.GetConversation(ctx, who[0], who[1], c.ID); !rag.Is(err, rag.KindNotFound) {
				t.Errorf("GetConversation as %v = %v, want NotFound", who, err)
			}
		}
		for i := range 6 {
			role := []string{"user", "assistant"}[i%2]
			m := rag.Message{Tenant: "t1", ConversationID: c.ID, Role: role, Content: fmt.Sprintf("turn %d", i)}
			if role == "assistant" {
				m.Sources, m.Trace, m.Confidence, m.Band, m.IsFallback, m.PromptTokens = json.RawMessage(`[{"n":1}]`), json.RawMessage(`[{"event":"meta"}]`), 0.9, "HIGH", true, 12
			}
			must(t, db.AppendMessage(ctx, &m))
		}
		msgs, err := db.ListMessages(ctx, "t1", c.ID, 4)
		if err != nil || len(msgs) != 4 || msgs[0].Content != "turn 2" || msgs[3].Content != "turn 5" {
			t.Fatalf("ListMessages = %+v, %v (want turns 2-5, oldest first)", msgs, err)
		}
		if a := msgs[1]; a.Role != "assistant" || a.Band != "HIGH" || !a.IsFallback || a.PromptTokens != 12 || string(a.Sources) != `[{"n":1}]` || string(a.Trace) != `[{"event":"meta"}]` {
			t.Fatalf("assistant message %+v", a)
		}
		if u := msgs[0]; string(u.Sources) != "[]" || u.IsFallback {
			t.Fatalf("user message %+v", u)
		}
		for i := 1; i < len(msgs); i++ {
			if !msgs[i].CreatedAt.After(msgs[i-1].CreatedAt) {
				t.Fatalf("message times not strictly increasing: %v then %v", msgs[i-1].CreatedAt, msgs[i].CreatedAt)
			}
		}
		if other, err := db.ListMessages(ctx, "t2", c.ID, 10); err != nil || len(other) != 0 {
			t.Fatalf("another tenant read %d messages, %v", len(other), err)
		}
		for _, bad := range []rag.Message{
			{Tenant: "t2", ConversationID: c.ID, Role: "user", Content: "x"},
			{Tenant: "t1", ConversationID: "conv_missing", Role: "user", Content: "x"},
		} {
			if err := db.AppendMessage(ctx, &bad); !rag.Is(err, rag.KindNotFound) {
				t.Errorf("AppendMessage(%+v) = %v, want NotFound", bad, err)
			}
		}
		for _, bad := range []rag.Message{
			{Tenant: "t1", ConversationID: c.ID, Role: "system", Content: "x"},
			{Tenant: "t1", ConversationID: c.ID, Role: "assistant", Trace: json.RawMessage(`{not json`)},
		} {
			if err := db.AppendMessage(ctx, &bad); !rag.Is(err, rag.KindInvalid) {
				t.Errorf("AppendMessage(%+v) = %v, want Invalid", bad, err)
			}
		}
		// Writes in the same millisecond leave updated_at unchanged: the conversation must still be found
		// (MySQL counts changed rows unless the client asks for matched rows).
		burst := rag.Conversation{Tenant: "t1", User: "carol"}
		must(t, db.CreateConversation(ctx, &burst))
		for i := range 30 {
			must(t, db.AppendMessage(ctx, &rag.Message{Tenant: "t1", ConversationID: burst.ID, Role: "user", Content: fmt.Sprint(i)}))
		}
		c2 := rag.Conversation{Tenant: "t1", User: "alice"}
		must(t, db.CreateConversation(ctx, &c2))
		time.Sleep(2 * time.Millisecond)
		must(t, db.AppendMessage(ctx, &rag.Message{Tenant: "t1", ConversationID: c.ID, Role: "user", Content: "again"}))
		list, err := db.ListConversations(ctx, "t1", "alice", 10)
		if err != nil || len(list) != 2 || list[0].ID != c.ID || list[1].KBIDs == nil {
			t.Fatalf("ListConversations = %+v, %v (most recently active first)", list, err)
		}
		if l, _ := db.ListConversations(ctx, "t1", "bob", 10); len(l) != 0 {
			t.Fatalf("bob sees %d of alice's conversations", len(l))
		}
		// The summary only moves forward, and only for its owner.
		t1, t2 := time.UnixMilli(1_800_000_000_000).UTC(), time.UnixMilli(1_800_000_001_000).UTC()
		must(t, db.SetConversationSummary(ctx, "t1", "alice", c.ID, "asked about leave", t2))
		must(t, db.SetConversationSummary(ctx, "t1", "alice", c.ID, "older summary", t1))
		got, err = db.GetConversation(ctx, "t1", "alice", c.ID)
		if err != nil || got.Summary != "asked about leave" || !got.SummaryUpto.Equal(t2) {
			t.Fatalf("summary %q up to %v, %v", got.Summary, got.SummaryUpto, err)
		}
		if err := db.SetConversationSummary(ctx, "t1", "bob", c.ID, "x", t2.Add(time.Second)); !rag.Is(err, rag.KindNotFound) {
			t.Fatalf("bob summarising alice's conversation: %v", err)
		}
		if got, _ = db.GetConversation(ctx, "t1", "alice", c.ID); got.Summary != "asked about leave" {
			t.Fatalf("summary changed by another user: %q", got.Summary)
		}
	})

	t.Run("Memories", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		role := rag.Memory{Tenant: "t1", User: "alice", Kind: "role", Content: " works as a claims adjuster "}
		must(t, db.AddMemory(ctx, &role))
		pref := rag.Memory{Tenant: "t1", User: "alice", Kind: "preference", Content: "prefers short answers"}
		must(t, db.AddMemory(ctx, &pref))
		must(t, db.AddMemory(ctx, &rag.Memory{Tenant: "t1", User: "bob", Kind: "role", Content: "is a nurse"}))
		if !strings.HasPrefix(role.ID, "mem_") || role.Content != "works as a claims adjuster" {
			t.Fatalf("added %+v", role)
		}
		// A newer role supersedes the old one in the same transaction.
		newRole := rag.Memory{Tenant: "t1", User: "alice", Kind: "role", Content: "leads the claims team"}
		must(t, db.AddMemory(ctx, &newRole, role.ID))
		list, err := db.ListMemories(ctx, "t1", "alice")
		if err != nil || len(list) != 2 || list[0].ID != newRole.ID || list[1].ID != pref.ID {
			t.Fatalf("ListMemories = %+v, %v (active only, newest first)", list, err)
		}
		// Counters are atomic: 20 concurrent touches count 20.
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() { must(t, db.TouchMemories(ctx, "t1", "alice", []string{pref.ID, "mem_missing"})) })
		}
		wg.Wait()
		must(t, db.TouchMemories(ctx, "t1", "bob", []string{pref.ID})) // not bob's: no effect
		list, _ = db.ListMemories(ctx, "t1", "alice")
		if list[1].AccessCount != 20 {
			t.Fatalf("access count %d after 20 touches", list[1].AccessCount)
		}
		// Invalidation is per user, counts only active rows, and hides the memory from the list.
		if n, err := db.InvalidateMemories(ctx, "t1", "bob", []string{pref.ID}); err != nil || n != 0 {
			t.Fatalf("bob invalidating alice's memory: %d, %v", n, err)
		}
		if n, err := db.InvalidateMemories(ctx, "t1", "alice", []string{pref.ID, role.ID}); err != nil || n != 1 {
			t.Fatalf("InvalidateMemories = %d, %v (the superseded one is already invalid)", n, err)
		}
		if list, _ = db.ListMemories(ctx, "t1", "alice"); len(list) != 1 || list[0].ID != newRole.ID {
			t.Fatalf("after invalidation %+v", list)
		}
		if list, _ = db.ListMemories(ctx, "t2", "alice"); len(list) != 0 {
			t.Fatalf("another tenant sees %+v", list)
		}
		for _, bad := range []rag.Memory{{Tenant: "t1", User: "alice", Kind: "role", Content: "  "},
			{Tenant: "t1", User: "alice", Kind: "role", Content: strings.Repeat("x", 501)},
			{Tenant: "t1", User: "alice'--", Kind: "role", Content: "x"}} {
			if err := db.AddMemory(ctx, &bad); !rag.Is(err, rag.KindInvalid) {
				t.Errorf("AddMemory(%q, %d chars) = %v, want Invalid", bad.User, len(bad.Content), err)
			}
		}
		if err := db.TouchMemories(ctx, "t1", "alice", []string{"x' OR '1'='1"}); !rag.Is(err, rag.KindInvalid) {
			t.Errorf("hostile id: %v", err)
		}
	})

	t.Run("ConcurrentCreates", func(t *testing.T) {
		// DB-04: racing creates of one source give exactly one row; the losers see Conflict, not a failure.
		db := migrated(t)
		ctx := ctxT(t)
		kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
		must(t, db.CreateKB(ctx, &kb))
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range 20 {
			wg.Go(func() {
				d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "same.pdf"}
				errs[i] = db.CreateDocument(ctx, &d)
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch rag.KindOf(err) {
			case rag.KindUnknown:
				if err == nil {
					ok++
					continue
				}
				t.Errorf("unclassified error: %v", err)
			case rag.KindConflict:
			default:
				t.Errorf("loser got %v (%v), want Conflict", rag.KindOf(err), err)
			}
		}
		docs, _ := db.ListDocuments(ctx, "t1", kb.ID, "")
		if ok != 1 || len(docs) != 1 {
			t.Fatalf("%d creates succeeded, %d rows; want 1 and 1", ok, len(docs))
		}
	})
}

func chunkIDs(cs []rag.Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}
