package answer

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// Values named in another form: case, plural or singular, a hyphen for a space, the words in
// another order; Chinese values anywhere in the question. And what must not match.
func TestMatchValueForms(t *testing.T) {
	facets := []rag.MetaFacet{
		facet("doc_type", "string", "Policy", "handbook", "HR policy", "expense-report"),
		facet("team", "string", "Platform Eng", "Data"),
		facet("category", "string", "差旅制度"),
		facet("region", "string", "EMEA", "news"),
	}
	for _, c := range []struct {
		q, want string // want: key=value@words;... in match order, "" for none
	}{
		{"Which POLICIES cover travel?", "doc_type=Policy@policies"},
		{"what do the handbooks say", "doc_type=handbook@handbooks"},
		{"the policy HR wrote on leave", "doc_type=Policy@policy;doc_type=HR policy@policy hr"},
		{"HR policies on leave", "doc_type=Policy@policies;doc_type=HR policy@hr policies"},
		{"file an expense report", "doc_type=expense-report@expense report"},
		{"file expense reports", "doc_type=expense-report@expense reports"},
		{"what does platform-eng own", "team=Platform Eng@platform eng"},
		{"what does eng platform own", "team=Platform Eng@eng platform"},
		{"公司的差旅制度是什么", "category=差旅制度@差旅制度"},
		// negatives
		{"the policyholder's rights", ""},                            // a value inside a word
		{"what is the platform for eng", ""},                         // the words, but not together
		{"report an expense", ""},                                    // not consecutive
		{"差旅的制度", ""},                                                // the characters apart
		{"emeaa offices", ""},                                        // a longer word
		{"the data policy", "doc_type=Policy@policy;team=Data@data"}, // in the facets' order
	} {
		var got []string
		for _, m := range MatchValues(c.q, facets, nil) {
			got = append(got, fmt.Sprintf("%s=%v@%s", m.Key, m.Value, m.Words))
		}
		if strings.Join(got, ";") != c.want {
			t.Errorf("MatchValues(%q) = %v; want %q", c.q, got, c.want)
		}
	}
	// the same words under two keys (in any form) are ambiguous
	two := []rag.MetaFacet{facet("doc_type", "string", "policies"), facet("topic", "string", "Policy")}
	if got := MatchValues("the policy on leave", two, nil); len(got) != 0 {
		t.Errorf("a value under two keys in two forms: %+v; want nothing", got)
	}
}

func TestMatchDates(t *testing.T) {
	now := time.Date(2026, 3, 15, 10, 0, 0, 0, time.UTC)
	facets := []rag.MetaFacet{
		{Key: "effective_date", Type: "date", Documents: 10},
		{Key: "modified", Type: "date", Documents: 10}, // derived: never
		facet("department", "string", "HR"),
	}
	for _, c := range []struct {
		q, want string // words:gte..lt;...
	}{
		{"What is the per diem in the 2025 policy?", "2025:2025-01-01..2026-01-01"},
		{"travel rules in 2025", "in 2025:2025-01-01..2026-01-01"},
		{"2025年的差旅制度是什么？", "2025:2025-01-01..2026-01-01"},
		{"what changed since March 2024?", "since march 2024:2024-03-01.."},
		{"what changed since 2024?", "since 2024:2024-01-01.."},
		{"rules adopted after 2023", "after 2023:2024-01-01.."},
		{"rules from before 2023", "before 2023:..2023-01-01"},
		{"rules until june 2024", "until june 2024:..2024-07-01"},
		{"the Sept. 2025 memo", "sept. 2025:2025-09-01..2025-10-01"},
		{"policies from last year", "from last year:2025-01-01..2026-01-01"},
		{"changes since last year", "since last year:2025-01-01.."},
		{"what changed this year", "this year:2026-01-01..2027-01-01"},
		{"memos of last month", "last month:2026-02-01..2026-03-01"},
		{"去年的制度", "去年:2025-01-01..2026-01-01"},
		// negatives: not a year standing alone
		{"invoice 120250 is late", ""},
		{"which rules apply since 2025-01-01?", ""},
		{"the v2025 release and 2025th day", ""},
		{"a 2025.5 ratio", ""},
		{"in 1850 or 2300", ""},
	} {
		var got []string
		for _, m := range MatchDates(c.q, facets, nil, now) {
			if m.Key != "effective_date" {
				t.Errorf("%q matched the key %s", c.q, m.Key)
			}
			got = append(got, m.Words+":"+m.Gte+".."+m.Lt)
		}
		if strings.Join(got, ";") != c.want {
			t.Errorf("MatchDates(%q) = %v; want %q", c.q, got, c.want)
		}
	}
	// the user's filter names the key; a key on few documents; no date key at all
	if got := MatchDates("in 2025", facets, []string{"effective_date"}, now); got != nil {
		t.Errorf("over the user's filter: %+v", got)
	}
	few := []rag.MetaFacet{{Key: "effective_date", Type: "date", Documents: 2}, facet("department", "string", "HR")}
	if got := MatchDates("in 2025", few, nil, now); got != nil {
		t.Errorf("a date key on 2 of 10 documents: %+v", got)
	}
	if got := MatchDates("in 2025", []rag.MetaFacet{facet("department", "string", "HR")}, nil, now); got != nil {
		t.Errorf("no date key: %+v", got)
	}
}

func TestCombineMatches(t *testing.T) {
	year := InferredMatch{Words: "2025", Key: "year", Value: 2025.0, By: "rules"}
	hr := InferredMatch{Words: "hr", Key: "department", Value: "HR", By: "rules"}
	eff := InferredMatch{Words: "in 2025", Key: "effective_date", Gte: "2025-01-01", Lt: "2026-01-01", By: "rules"}
	pub := InferredMatch{Words: "in 2025", Key: "published", Gte: "2025-01-01", Lt: "2026-01-01", By: "rules"}
	keys := func(ms []InferredMatch) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Key)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		values, dates []InferredMatch
		want          string
	}{
		{[]InferredMatch{hr}, []InferredMatch{eff}, "department,effective_date"},
		{[]InferredMatch{hr}, []InferredMatch{eff, pub}, "department"},  // two date keys claim "in 2025"
		{[]InferredMatch{hr, year}, []InferredMatch{eff}, "department"}, // "2025" is a year value and a date
		{[]InferredMatch{hr, year}, nil, "department,year"},
	} {
		if got := keys(combineMatches(c.values, c.dates)); got != c.want {
			t.Errorf("combineMatches(%s | %s) = %s; want %s", keys(c.values), keys(c.dates), got, c.want)
		}
	}
}

// Over a real store: a date range becomes a filter only when some document's value is in it, says
// so in the timeline with the words matched, and never when the user's filter names the key.
func TestInferredDateRange(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "policies"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	var docs []rag.Document
	for i, eff := range []string{"2024-03-10", "2025-02-01", "2025-11-30"} {
		d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: fmt.Sprintf("file/p%d.md", i), FileName: fmt.Sprintf("p%d.md", i), Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
		if err := db.SetDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"effective_date": eff, "doc_type": "policy"}); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	passages := map[string]string{}
	for _, d := range docs {
		passages[d.ID] = "Travel is approved by the manager."
	}
	run := func(req Request) (*Done, *eventLog, *scopedRetriever) {
		t.Helper()
		r := &scopedRetriever{docs: passages}
		var log eventLog
		done, err := (&Pipeline{Infer: db, Retriever: r}).Run(ctx, req, log.emit)
		if err != nil {
			t.Fatal(err)
		}
		return done, &log, r
	}
	ask := func(q string) Request { return Request{Tenant: "t1", KBIDs: []string{kb.ID}, Question: q} }

	done, log, r := run(ask("How is travel approved under the rules in 2025?"))
	in := done.InferredFilter
	want := []string{docs[1].ID, docs[2].ID}
	slices.Sort(want)
	if in == nil || string(in.Filter) != `{"gte":"2025-01-01","key":"effective_date","lt":"2026-01-01"}` || in.Documents != 2 ||
		len(in.Matched) != 1 || in.Matched[0].Words != "in 2025" || !slices.Equal(r.queries[0].Filter.DocumentIDs, want) {
		t.Fatalf("in 2025: inferred %+v, restriction %v", in, r.queries[0].Filter.DocumentIDs)
	}
	if !slices.Contains(log.names, EventInferredFilter) || !strings.Contains(in.Detail, "“in 2025” is effective_date from 2025-01-01 to before 2026-01-01") {
		t.Fatalf("timeline %v, detail %q", log.names, in.Detail)
	}
	done, _, r = run(ask("What changed since March 2024?"))
	if in := done.InferredFilter; in == nil || string(in.Filter) != `{"gte":"2024-03-01","key":"effective_date"}` || in.Documents != 3 {
		t.Fatalf("since March 2024: %+v", in)
	}
	done, _, r = run(ask("the rules before 2025"))
	if in := done.InferredFilter; in == nil || in.Documents != 1 || !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{docs[0].ID}) {
		t.Fatalf("before 2025: %+v", in)
	}
	// a year no document's date is in; a number holding 2025; the user's filter on the key
	for _, req := range []Request{ask("the rules in 2023"), ask("what is claim 120250 about?"), ask("the rules since 2026")} {
		if done, log, _ := run(req); done.InferredFilter != nil || slices.Contains(log.names, EventInferredFilter) {
			t.Errorf("%q inferred %+v; want nothing", req.Question, done.InferredFilter)
		}
	}
	req := ask("the rules in 2025")
	req.Restrict, req.FilterKeys = []string{docs[0].ID}, []string{"effective_date"}
	if done, _, r := run(req); done.InferredFilter != nil || !slices.Equal(r.queries[0].Filter.DocumentIDs, []string{docs[0].ID}) {
		t.Errorf("over the user's filter on the key: %+v", done.InferredFilter)
	}
}
