package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memkv"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

type env struct {
	s   *Store
	db  *sqldb.DB
	vec *memvec.Index
	now time.Time
}

func setup(t *testing.T) *env {
	t.Helper()
	e := &env{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	clock := func() time.Time { return e.now }
	db, err := sqlite.Open(":memory:", clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.db, e.vec = db, memvec.New(256)
	e.s = &Store{Records: db, Vectors: e.vec, Embedder: embed.NewOffline(256), KV: memkv.New(clock, 1000), Now: clock}
	return e
}

func contents(ms []rag.Memory) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Kind+": "+m.Content)
	}
	return out
}

func TestParseHint(t *testing.T) {
	for in, want := range map[string][2]string{
		"role: claims adjuster":        {"role", "claims adjuster"},
		"Preference:  short   answers": {"preference", "short answers"},
		"works night shifts":           {"fact", "works night shifts"},
		"note: see http://x":           {"fact", "note: see http://x"},
		"role：理赔专员":                    {"role", "理赔专员"},
		"偏好：简短回答":                      {"fact", "偏好：简短回答"},
	} {
		if k, c := ParseHint(in); k != want[0] || c != want[1] {
			t.Errorf("ParseHint(%q) = %q, %q; want %q", in, k, c, want)
		}
	}
}

func TestRememberRecallForget(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	n, err := e.s.Remember(ctx, "t1", "alice", []string{"role: claims adjuster", "preference: answers in bullet points",
		"fact: handles travel insurance claims for the 安心保 product", "preference: answers in bullet points!"})
	if err != nil || n != 3 {
		t.Fatalf("Remember = %d, %v (the near-duplicate is skipped)", n, err)
	}
	// A new role supersedes the old one: SQL keeps the chain, recall never shows the old one.
	if n, err := e.s.Remember(ctx, "t1", "alice", []string{"role: claims team lead"}); err != nil || n != 1 {
		t.Fatalf("Remember role = %d, %v", n, err)
	}
	got, err := e.s.Recall(ctx, "t1", "alice", "how are travel insurance claims handled?")
	if err != nil {
		t.Fatal(err)
	}
	c := contents(got)
	if !slices.Contains(c, "role: claims team lead") || slices.Contains(c, "role: claims adjuster") ||
		!slices.Contains(c, "fact: handles travel insurance claims for the 安心保 product") {
		t.Fatalf("recalled %q", c)
	}
	// Access counters rose for what was recalled.
	list, _ := e.db.ListMemories(ctx, "t1", "alice")
	for _, m := range list {
		if slices.Contains(c, m.Kind+": "+m.Content) != (m.AccessCount == 1) {
			t.Errorf("%s: access count %d", m.Content, m.AccessCount)
		}
	}
	// Another user and another tenant recall nothing of alice's.
	for _, who := range [][2]string{{"t1", "bob"}, {"t2", "alice"}} {
		if got, err := e.s.Recall(ctx, who[0], who[1], "travel insurance claims"); err != nil || len(got) != 0 {
			t.Fatalf("%v recalls %q, %v", who, contents(got), err)
		}
	}
	// Forget: gone from recall at once, though the cache was warm.
	var fact rag.Memory
	for _, m := range list {
		if m.Kind == "fact" {
			fact = m
		}
	}
	if err := e.s.Forget(ctx, "t1", "alice", fact.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Forget(ctx, "t1", "bob", fact.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("forgetting another's memory: %v", err)
	}
	if got, _ := e.s.Recall(ctx, "t1", "alice", "how are travel insurance claims handled?"); slices.Contains(contents(got), "fact: "+fact.Content) {
		t.Fatal("a forgotten memory was recalled")
	}
}

// A memory invalidated in SQL behind the store's back (another process, an operator) is never recalled,
// even though its vector copy is still indexed: recall reconciles with the record and removes the copy.
func TestRecallReconciledWithSQL(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.s.KV = nil // no cache: the record decides on every recall
	if _, err := e.s.Remember(ctx, "t1", "alice", []string{"fact: works on the 安心保 travel product"}); err != nil {
		t.Fatal(err)
	}
	list, _ := e.db.ListMemories(ctx, "t1", "alice")
	if _, err := e.db.InvalidateMemories(ctx, "t1", "alice", []string{list[0].ID}); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.vec.Count(ctx, rag.Filter{Tenant: "t1", KBIDs: []string{"alice"}}); n != 1 {
		t.Fatalf("setup: %d vector copies", n)
	}
	if _, err := e.s.Remember(ctx, "t1", "alice", []string{"preference: short answers"}); err != nil {
		t.Fatal(err)
	}
	got, err := e.s.Recall(ctx, "t1", "alice", "安心保 travel product")
	if err != nil || slices.Contains(contents(got), "fact: works on the 安心保 travel product") {
		t.Fatalf("recalled %q, %v", contents(got), err)
	}
	if n, _ := e.vec.Count(ctx, rag.Filter{Tenant: "t1", KBIDs: []string{"alice"}}); n != 1 {
		t.Fatalf("the stale copy was not removed: %d copies", n)
	}
}

func TestScoreAndEviction(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	if s := Score(rag.Memory{CreatedAt: now}, now); s != 1 {
		t.Fatalf("fresh unused memory scores %v, want 1", s)
	}
	if s := Score(rag.Memory{CreatedAt: now.Add(-14 * 24 * time.Hour), AccessCount: 3}, now); math.Abs(s-(math.Exp(-1)+0.5*math.Log1p(3))) > 1e-12 {
		t.Fatalf("score %v", s)
	}
	e := setup(t)
	ctx := context.Background()
	e.s.Max = 5
	// Seven memories a day apart; the oldest (day 0) was used a lot and must survive the recency of the others.
	start := e.now
	for i := range 7 {
		e.now = start.Add(time.Duration(i) * 24 * time.Hour)
		if _, err := e.s.Remember(ctx, "t1", "alice", []string{fmt.Sprintf("fact: remembered item number %d about topic %c", i, 'A'+i)}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			list, _ := e.db.ListMemories(ctx, "t1", "alice")
			for range 10 {
				if err := e.db.TouchMemories(ctx, "t1", "alice", []string{list[0].ID}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	list, _ := e.db.ListMemories(ctx, "t1", "alice")
	c := contents(list)
	if len(list) != 5 || !slices.Contains(c, "fact: remembered item number 0 about topic A") ||
		slices.Contains(c, "fact: remembered item number 1 about topic B") || slices.Contains(c, "fact: remembered item number 2 about topic C") {
		t.Fatalf("after eviction %q", c)
	}
	if n, _ := e.vec.Count(ctx, rag.Filter{Tenant: "t1", KBIDs: []string{"alice"}}); n != 5 {
		t.Fatalf("%d vector copies after eviction, want 5", n)
	}
}

type failingVectors struct{ *memvec.Index }

func (failingVectors) Upsert(context.Context, []rag.VectorRecord) error {
	return rag.Errorf("vec", rag.KindUnavailable, "down")
}

// The vector copy failing keeps the record (SQL is the truth) and reports the failure.
func TestVectorFailureKeepsRecord(t *testing.T) {
	e := setup(t)
	e.s.Vectors = failingVectors{e.vec}
	n, err := e.s.Remember(context.Background(), "t1", "alice", []string{"role: nurse"})
	if n != 1 || !rag.Is(errors.Unwrap(err), rag.KindUnavailable) && !rag.Is(err, rag.KindUnavailable) {
		t.Fatalf("Remember = %d, %v", n, err)
	}
	// The profile is still recalled (it does not need similarity).
	if got, _ := e.s.Recall(context.Background(), "t1", "alice", "anything"); !slices.Equal(contents(got), []string{"role: nurse"}) {
		t.Fatalf("recalled %q", contents(got))
	}
}
