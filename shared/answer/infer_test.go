package answer

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store/memkv"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

func facet(key, typ string, values ...any) rag.MetaFacet {
	f := rag.MetaFacet{Key: key, Type: typ, Distinct: len(values), Documents: 10}
	for _, v := range values {
		f.Values = append(f.Values, rag.MetaValueCount{Value: v, Documents: 1})
	}
	return f
}

func TestMatchValues(t *testing.T) {
	many := make([]any, 40)
	for i := range many {
		many[i] = fmt.Sprintf("team%02d", i)
	}
	facets := []rag.MetaFacet{
		facet("department", "string", "HR", "Finance", "Legal"),
		facet("year", "number", 2024.0, 2025.0),
		facet("doc_type", "string", "handbook", "policy"),
		facet("category", "string", "差旅制度"),
		facet("version", "number", 3.0, 30.0),
		facet("team", "string", "legal", "Platform_Eng"),
		facet("source", "string", "upload", "file"),
		facet("owner", "string", many...),
		facet("flag", "string", "true", "x"),
		{Key: "product", Type: "list", Distinct: 1, Documents: 4, Values: []rag.MetaValueCount{{Value: "docmind", Documents: 4}}},
	}
	for _, c := range []struct {
		q    string
		skip []string
		want string // key=value;... in match order, "" for none
	}{
		// positive: each value exists
		{"What is the per diem in the 2025 policy?", nil, "year=2025;doc_type=policy"},
		{"What does the HR handbook's leave section say?", nil, "department=HR;doc_type=handbook"},
		{"2025年的差旅制度是什么？", nil, "year=2025;category=差旅制度"},
		{"How is travel approved according to the Finance department?", nil, "department=Finance"},
		{"HR or Finance: who approves travel?", nil, "department=HR;department=Finance"},
		{"２０２５年の規程", nil, "year=2025"},                                // full-width digits, NFKC
		{"what changed in version 3 of the rules?", nil, "version=3"}, // a small number after its key's name
		{"what does platform eng own?", nil, "team=Platform_Eng"},     // underscores read as spaces
		// negative: no value, or not one to infer from
		{"What changed in the 2023 rules?", nil, ""},                     // a year no document has
		{"Can I carry over 30 days of leave?", nil, ""},                  // a number that is not a year, not after its key
		{"Who signs for legal matters?", nil, ""},                        // legal is a department and a team: ambiguous
		{"Which rules apply since 2025-01-01?", nil, ""},                 // a date, not a year
		{"Are there three rules for thrifty travel?", nil, ""},           // "hr" inside words
		{"How do I upload a file?", nil, ""},                             // derived keys are never inferred
		{"What does team07 own?", nil, ""},                               // too many distinct values: not a category
		{"Is it true?", nil, ""},                                         // generic values
		{"the HR handbook", []string{"department"}, "doc_type=handbook"}, // the user's filter names the key
		{"per diem in 20250 or v2025", nil, ""},
		{"Does docmind do OCR?", nil, ""}, // a key on 4 of 10 documents describes them, it does not partition them
	} {
		var got []string
		for _, m := range MatchValues(c.q, facets, c.skip) {
			got = append(got, m.Key+"="+valueString(m.Value))
		}
		if strings.Join(got, ";") != c.want {
			t.Errorf("MatchValues(%q) = %v; want %q", c.q, got, c.want)
		}
	}
}

// kbFixture is two tenants' documents with metadata in a real SQL store.
type kbFixture struct {
	db                    *sqldb.DB
	kb, other             rag.KnowledgeBase
	hr, finance, untagged rag.Document
	marketing             rag.Document // the other tenant's
}

func newKBFixture(t *testing.T) *kbFixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	f := &kbFixture{db: db, kb: rag.KnowledgeBase{Tenant: "t1", Name: "policies"}, other: rag.KnowledgeBase{Tenant: "t2", Name: "policies"}}
	for _, k := range []*rag.KnowledgeBase{&f.kb, &f.other} {
		if err := db.CreateKB(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	doc := func(k rag.KnowledgeBase, name string, m rag.Metadata) rag.Document {
		d := rag.Document{Tenant: k.Tenant, KBID: k.ID, SourceURI: "file/" + name, FileName: name, Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
		if m != nil {
			if err := db.SetDocumentMetadata(ctx, k.Tenant, k.ID, d.ID, m); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	f.hr = doc(f.kb, "hr.md", rag.Metadata{"department": "HR", "year": 2025})
	f.finance = doc(f.kb, "finance.md", rag.Metadata{"department": "Finance", "year": 2024})
	f.untagged = doc(f.kb, "misc.md", nil)
	f.marketing = doc(f.other, "mkt.md", rag.Metadata{"department": "Marketing", "year": 2023})
	return f
}

// scopedRetriever answers with evidence only from the documents of its query's restriction (all
// when none), recording each query.
type scopedRetriever struct {
	docs    map[string]string // document id -> passage
	queries []retrieve.Query
}

func (r *scopedRetriever) Retrieve(_ context.Context, q retrieve.Query) (*retrieve.Result, error) {
	r.queries = append(r.queries, q)
	res := &retrieve.Result{Grade: rank.Grade{Tier: rank.TierLow, NoEvidence: true}}
	for id, text := range r.docs {
		if len(q.Filter.DocumentIDs) == 0 || slices.Contains(q.Filter.DocumentIDs, id) {
			res.Evidence = append(res.Evidence, rank.Evidence{ChunkID: "c_" + id, DocumentID: id, KBID: "kb", FileName: id, Text: text, ChildText: text, Score: 0.9})
		}
	}
	if len(res.Evidence) > 0 {
		res.Grade = rank.Grade{Tier: rank.TierHigh, TopScore: 0.9}
	}
	return res, nil
}

type eventLog struct {
	names    []string
	inferred []InferredFilter
}

func (l *eventLog) emit(name string, v any) error {
	l.names = append(l.names, name)
	if name == EventInferredFilter {
		l.inferred = append(l.inferred, *v.(*InferredFilter))
	}
	return nil
}

func TestInferredFilter(t *testing.T) {
	f := newKBFixture(t)
	ctx := context.Background()
	passages := map[string]string{f.hr.ID: "HR approves travel within five days.", f.finance.ID: "Finance approves travel budgets.",
		f.untagged.ID: "Travel is booked through the portal."}
	run := func(t *testing.T, p *Pipeline, req Request) (*Done, *eventLog, *scopedRetriever) {
		t.Helper()
		r := &scopedRetriever{docs: passages}
		p.Retriever = r
		var log eventLog
		done, err := p.Run(ctx, req, log.emit)
		if err != nil {
			t.Fatal(err)
		}
		return done, &log, r
	}
	ask := func(q string) Request { return Request{Tenant: "t1", KBIDs: []string{f.kb.ID}, Question: q} }

	t.Run("AppliedWhenTheValueExists", func(t *testing.T) {
		for name, p := range map[string]*Pipeline{
			"offline":    {Infer: f.db},
			"fake model": {Infer: f.db, Understander: &Understander{LLM: &fakeLLM{deltas: []string{"not json"}}}},
		} {
			done, log, r := run(t, p, ask("Who approves travel according to the HR department?"))
			if len(r.queries) != 1 || !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{f.hr.ID}) {
				t.Fatalf("%s: retrieval restricted to %v; want only the HR document", name, r.queries)
			}
			if got := strings.Join(log.names[:3], " "); got != "understanding inferred_filter routing" {
				t.Errorf("%s: events %v; want the inferred filter as its own step after understanding", name, log.names)
			}
			in := done.InferredFilter
			if in == nil || string(in.Filter) != `{"eq":"HR","key":"department"}` || in.Documents != 1 || in.Fallback ||
				len(in.Matched) != 1 || in.Matched[0].Words != "hr" || !strings.Contains(in.Detail, "department HR") {
				t.Fatalf("%s: done.inferred_filter = %+v", name, in)
			}
			if raw, _ := json.Marshal(done); !strings.Contains(string(raw), `"inferred_filter":{"filter":{"eq":"HR","key":"department"}`) {
				t.Errorf("%s: done JSON %s lacks inferred_filter", name, raw)
			}
		}
	})

	t.Run("NotWhenAbsentOrForeign", func(t *testing.T) {
		p := &Pipeline{Infer: f.db}
		for _, q := range []string{
			"What does Marketing say about travel?", // another tenant's value
			"What did the 2023 rules say?",          // another tenant's year
			"What is the travel policy?",            // no value named
			"Can I claim 2 days of travel?",         // a number, not a value
		} {
			done, log, r := run(t, p, ask(q))
			if done.InferredFilter != nil || slices.Contains(log.names, EventInferredFilter) || len(r.queries[0].Filter.DocumentIDs) != 0 {
				t.Errorf("%q inferred %+v (restriction %v); want nothing", q, done.InferredFilter, r.queries[0].Filter.DocumentIDs)
			}
		}
		// the other tenant asking about its own value is served from its own documents only
		req := Request{Tenant: "t2", KBIDs: []string{f.other.ID}, Question: "What does Marketing say?"}
		done, _, r := run(t, p, req)
		if done.InferredFilter == nil || !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{f.marketing.ID}) {
			t.Errorf("t2's own value: %+v, restriction %v", done.InferredFilter, r.queries[0].Filter.DocumentIDs)
		}
		// a tenant admin naming no knowledge base: every one of its own tenant, never t2's
		done, _, _ = run(t, p, Request{Tenant: "t1", Question: "What does Marketing say?"})
		if done.InferredFilter != nil {
			t.Errorf("t1 over all its knowledge bases matched t2's value: %+v", done.InferredFilter)
		}
	})

	t.Run("NotOverTheUsersFilter", func(t *testing.T) {
		req := ask("Who approves travel according to the HR department?")
		req.Restrict, req.FilterKeys = []string{f.finance.ID}, []string{"department"}
		done, _, r := run(t, &Pipeline{Infer: f.db}, req)
		if done.InferredFilter != nil || !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{f.finance.ID}) {
			t.Fatalf("inferred over the user's department filter: %+v, restriction %v", done.InferredFilter, r.queries[0].Filter.DocumentIDs)
		}
		// another key: and-ed with the user's filter, so nothing outside it
		req = ask("the 2025 travel rules")
		req.Restrict, req.FilterKeys = []string{f.finance.ID, f.hr.ID}, []string{"department"}
		done, _, r = run(t, &Pipeline{Infer: f.db}, req)
		if done.InferredFilter == nil || !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{f.hr.ID}) {
			t.Fatalf("year inferred within the user's filter: %+v, restriction %v", done.InferredFilter, r.queries[0].Filter.DocumentIDs)
		}
	})

	t.Run("FallsBackWhenNothingRelevant", func(t *testing.T) {
		p := &Pipeline{Infer: f.db}
		r := &scopedRetriever{docs: map[string]string{f.untagged.ID: "Travel is booked through the portal."}}
		p.Retriever = r
		var log eventLog
		done, err := p.Run(ctx, ask("How is travel booked in the 2025 rules?"), log.emit)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.queries) != 2 || !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{f.hr.ID}) || len(r.queries[1].Filter.DocumentIDs) != 0 {
			t.Fatalf("queries %+v; want the filtered search, then the unfiltered one", r.queries)
		}
		if len(log.inferred) != 2 || log.inferred[0].Fallback || !log.inferred[1].Fallback || !strings.Contains(log.inferred[1].Detail, "searched without") {
			t.Fatalf("inferred_filter events %+v; want the inference, then its fallback", log.inferred)
		}
		if done.InferredFilter == nil || !done.InferredFilter.Fallback || len(done.Sources) != 1 || done.Sources[0].DocumentID != f.untagged.ID {
			t.Fatalf("done %+v; want the unfiltered evidence and the fallback said", done.InferredFilter)
		}
	})

	t.Run("NotForSelectedDocuments", func(t *testing.T) {
		req := ask("the HR rules")
		req.DocumentIDs = []string{f.finance.ID}
		if done, _, _ := run(t, &Pipeline{Infer: f.db}, req); done.InferredFilter != nil {
			t.Fatalf("inferred over selected documents: %+v", done.InferredFilter)
		}
	})

	t.Run("CacheKeyHoldsTheInference", func(t *testing.T) {
		cache := func() *SemanticCache {
			return &SemanticCache{KV: memkv.New(nil, 1000), Embedder: embed.NewOffline(64), Catalog: f.db}
		}
		key := func(p *Pipeline, q string) string {
			p.Retriever = &scopedRetriever{docs: passages}
			st, prepared, err := p.Begin(ctx, ask(q), func(string, any) error { return nil })
			if err != nil || prepared != nil {
				t.Fatalf("Begin: %v, %v", prepared, err)
			}
			return st.CacheKey
		}
		on, off := &Pipeline{Infer: f.db, Cache: cache()}, &Pipeline{Cache: cache()}
		hr, fin := key(on, "travel approval HR"), key(on, "travel approval Finance")
		if hr == "" || hr == fin || hr == key(off, "travel approval HR") {
			t.Fatalf("cache keys HR %q, Finance %q, uninferred %q; want three different", hr, fin, key(off, "travel approval HR"))
		}
		// the same key as a user's filter on the same documents would not do: the inference can fall back
		req := ask("travel approval HR")
		req.Restrict = []string{f.hr.ID}
		st, _, _ := off.Begin(ctx, req, func(string, any) error { return nil })
		if st.CacheKey == hr {
			t.Fatal("an inferred filter shares the key of a user's filter on the same documents")
		}
	})
}

// The answer workflow on AWS runs Begin, Gather and Finish as separate Tasks with the state as JSON in
// between: the inferred filter, its restriction and its fallback travel with it.
func TestInferredFilterAcrossTasks(t *testing.T) {
	f := newKBFixture(t)
	ctx := context.Background()
	roundTrip := func(st *State) *State {
		t.Helper()
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		return &back
	}
	for _, c := range []struct {
		name     string
		docs     map[string]string
		fallback bool
	}{
		{"applied", map[string]string{f.hr.ID: "HR approves travel within five days."}, false},
		{"fallback", map[string]string{f.untagged.ID: "Travel is booked through the portal."}, true},
	} {
		r := &scopedRetriever{docs: c.docs}
		p := &Pipeline{Infer: f.db, Retriever: r}
		var log eventLog
		st, prepared, err := p.Begin(ctx, Request{Tenant: "t1", KBIDs: []string{f.kb.ID}, Question: "How is travel approved by HR?"}, log.emit)
		if err != nil || prepared != nil {
			t.Fatalf("%s: Begin: %v, %v", c.name, prepared, err)
		}
		st = roundTrip(st)
		if err := p.Gather(ctx, st, log.emit); err != nil {
			t.Fatal(err)
		}
		st = roundTrip(st)
		done, err := p.Finish(ctx, st, log.emit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{f.hr.ID}) {
			t.Fatalf("%s: the first retrieval after the JSON hop was restricted to %v; want the HR document", c.name, r.queries[0].Filter.DocumentIDs)
		}
		if done.InferredFilter == nil || done.InferredFilter.Fallback != c.fallback || len(r.queries) != map[bool]int{false: 1, true: 2}[c.fallback] {
			t.Fatalf("%s: done.inferred_filter %+v after %d retrievals", c.name, done.InferredFilter, len(r.queries))
		}
	}
}

// With a model, the understanding call is shown the candidate values (this tenant's, as data) and may
// say the question names one under another name; only a value on that list is applied, never over
// the rules or the user's filter, and the cache key follows.
func TestInferredFilterByModel(t *testing.T) {
	f := newKBFixture(t)
	ctx := context.Background()
	understanding := func(values string) *fakeLLM {
		return &fakeLLM{deltas: []string{`{"scope":"KB_QUERY","rewrite":"","intent":"x","complexity":"simple","specificity":"precise",` +
			`"decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":[],"filter_values":` + values + `}`}}
	}
	passages := map[string]string{f.hr.ID: "HR approves travel within five days.", f.finance.ID: "Finance approves travel budgets."}
	run := func(model *fakeLLM, req Request) (*Done, *scopedRetriever) {
		t.Helper()
		r := &scopedRetriever{docs: passages}
		p := &Pipeline{Infer: f.db, Retriever: r, Understander: &Understander{LLM: model}}
		done, err := p.Run(ctx, req, func(string, any) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return done, r
	}
	ask := Request{Tenant: "t1", KBIDs: []string{f.kb.ID}, Question: "How does human resources approve travel?"}

	model := understanding(`[{"key":"department","value":"HR"}]`)
	done, r := run(model, ask)
	in := done.InferredFilter
	if in == nil || len(in.Matched) != 1 || in.Matched[0].By != "model" || !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{f.hr.ID}) ||
		!strings.Contains(in.Detail, "department HR, read by the model") {
		t.Fatalf("the model's value: inferred %+v, restriction %v", in, r.queries[0].Filter.DocumentIDs)
	}
	shown := model.got.Messages[1].Content
	if !strings.Contains(shown, "<metadata>\ndepartment: \"Finance\", \"HR\"\nyear: 2024, 2025\n</metadata>") || strings.Contains(shown, "Marketing") ||
		!strings.Contains(model.got.Messages[0].Content, "filter_values") {
		t.Fatalf("the model was shown %q; want this tenant's candidate values as data", shown)
	}

	for name, values := range map[string]string{
		"a value no document has":    `[{"key":"department","value":"Human Resources"}]`,
		"another tenant's value":     `[{"key":"department","value":"Marketing"}]`,
		"a key that is no candidate": `[{"key":"source","value":"file"}]`,
		"a number as text":           `[{"key":"year","value":"2025"}]`,
	} {
		if done, _ := run(understanding(values), ask); done.InferredFilter != nil {
			t.Errorf("%s: inferred %+v; want nothing", name, done.InferredFilter)
		}
	}
	// the user's filter names the key: the model is not offered it, and a value it names anyway is refused
	withUser := ask
	withUser.Restrict, withUser.FilterKeys = []string{f.finance.ID}, []string{"department"}
	model = understanding(`[{"key":"department","value":"HR"}]`)
	if done, _ := run(model, withUser); done.InferredFilter != nil || strings.Contains(model.got.Messages[1].Content, "department:") {
		t.Errorf("over the user's filter: inferred %+v, shown %q", done.InferredFilter, model.got.Messages[1].Content)
	}
	// the rules' value of a key stands: the model's other value of it is not added
	rules := ask
	rules.Question = "How does HR approve travel, unlike finance?"
	if done, _ := run(understanding(`[{"key":"year","value":2025}]`), rules); done.InferredFilter == nil || len(done.InferredFilter.Matched) != 3 {
		t.Errorf("rules and model together: %+v; want the rules' two departments and the model's year", done.InferredFilter)
	}

	// the cache: the model's narrowing moves the question to the narrowed scope
	cache := &SemanticCache{KV: memkv.New(nil, 1000), Embedder: embed.NewOffline(64), Catalog: f.db}
	key := func(values string) string {
		p := &Pipeline{Infer: f.db, Retriever: &scopedRetriever{docs: passages}, Understander: &Understander{LLM: understanding(values)}, Cache: cache}
		st, _, err := p.Begin(ctx, ask, func(string, any) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return st.CacheKey
	}
	if hr, none := key(`[{"key":"department","value":"HR"}]`), key(`[]`); hr == none || hr == "" {
		t.Fatalf("cache keys with and without the model's value: %q %q; want two", hr, none)
	}
}

// sharedMatches answers every filter with one slice, as the metadata index does until a write.
type sharedMatches struct {
	MetaCatalog
	ids []string
}

func (s sharedMatches) MatchDocuments(context.Context, string, []string, *rag.MetaFilter) ([]string, error) {
	return s.ids, nil
}

// Narrowing an inferred restriction to the user's filter must not write into the index's shared answer:
// the next question with the same filter would read the narrowed (and zero-padded) list.
func TestInferredRestrictionLeavesTheSharedAnswer(t *testing.T) {
	shared := []string{"d1", "d2", "d3"}
	p := &Pipeline{Infer: sharedMatches{ids: shared}}
	st := &State{Request: Request{Tenant: "t1", Restrict: []string{"d3"}}, inferKBs: []string{"kb1"}}
	if !p.applyInferred(context.Background(), st, []InferredMatch{{Words: "hr", Key: "department", Value: "HR", By: "rules"}}) {
		t.Fatal("applyInferred found nothing")
	}
	if !slices.Equal(st.InferredRestrict, []string{"d3"}) {
		t.Errorf("restriction %v; want d3 (the user's filter and the inference)", st.InferredRestrict)
	}
	if !slices.Equal(shared, []string{"d1", "d2", "d3"}) {
		t.Fatalf("the shared answer became %q", shared)
	}
}

// A caller whose access lists deny the HR document (the edge sets Restrict to the rest and
// AccessRestricted): a question naming HR infers nothing, neither by the rules nor by the model, whose
// prompt lists only the values of the documents the caller may read; Finance is still inferred, counting
// only those. Without the flag (every document readable) HR is shown and inferred.
func TestInferredFilterAccessRestricted(t *testing.T) {
	f := newKBFixture(t)
	ctx := context.Background()
	understanding := func(values string) *fakeLLM {
		return &fakeLLM{deltas: []string{`{"scope":"KB_QUERY","rewrite":"","intent":"x","complexity":"simple","specificity":"precise",` +
			`"decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":[],"filter_values":` + values + `}`}}
	}
	passages := map[string]string{f.hr.ID: "HR approves travel within five days.", f.finance.ID: "Finance approves travel budgets.",
		f.untagged.ID: "Travel is booked through the portal."}
	run := func(model *fakeLLM, req Request) (*Done, *scopedRetriever) {
		t.Helper()
		r := &scopedRetriever{docs: passages}
		p := &Pipeline{Infer: f.db, Retriever: r, Understander: &Understander{LLM: model}}
		done, err := p.Run(ctx, req, func(string, any) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return done, r
	}
	denied := Request{Tenant: "t1", KBIDs: []string{f.kb.ID}, Restrict: []string{f.finance.ID, f.untagged.ID}, AccessRestricted: true}

	req := denied
	req.Question = "How does HR approve travel?"
	model := understanding(`[{"key":"department","value":"HR"}]`)
	done, r := run(model, req)
	if done.InferredFilter != nil || slices.Contains(r.queries[0].Filter.DocumentIDs, f.hr.ID) {
		t.Fatalf("HR named by a caller denied the HR document: inferred %+v, restriction %v; want none, without the HR document", done.InferredFilter, r.queries[0].Filter.DocumentIDs)
	}
	if shown := model.got.Messages[1].Content; strings.Contains(shown, `"HR"`) || strings.Contains(shown, "2025") || !strings.Contains(shown, `"Finance"`) {
		t.Fatalf("the model was shown %q; want Finance's values and nothing of the HR document", shown)
	}

	req.Question = "How does Finance approve travel?"
	if done, r = run(understanding(`[]`), req); done.InferredFilter == nil || done.InferredFilter.Documents != 1 || !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{f.finance.ID}) {
		t.Fatalf("Finance named: inferred %+v, restriction %v; want department = Finance", done.InferredFilter, r.queries[0].Filter.DocumentIDs)
	}

	open := Request{Tenant: "t1", KBIDs: []string{f.kb.ID}, Question: "How does HR approve travel?"}
	model = understanding(`[]`)
	if done, _ = run(model, open); done.InferredFilter == nil || !strings.Contains(model.got.Messages[1].Content, `"HR"`) {
		t.Fatalf("HR named by a caller who reads every document: inferred %+v; want department = HR, shown to the model", done.InferredFilter)
	}
}
