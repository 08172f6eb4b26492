package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
)

// accessMetaFixture is the access fixture with metadata: every document has a department, the HR
// page alone "Payroll" (and the label "merger"); filter inference is on.
func accessMetaFixture(t *testing.T) *accessFixture {
	t.Helper()
	f := newAccessFixture(t)
	for _, d := range []struct {
		doc rag.Document
		m   rag.Metadata
	}{
		{f.hrDoc, rag.Metadata{"department": "Payroll", "labels": []string{"merger", "policy"}, "year": 2026}},
		{f.wikiDoc, rag.Metadata{"department": "Engineering", "labels": []string{"policy"}, "year": 2025}},
		{f.up, rag.Metadata{"department": "Engineering", "year": 2025}},
	} {
		if err := f.db.SetDocumentMetadata(context.Background(), "acme", f.kb.ID, d.doc.ID, d.m); err != nil {
			t.Fatal(err)
		}
	}
	f.pipe.Infer = f.db
	return f
}

// GET /api/kbs/{kb}/metadata describes only the documents the caller may read: bob (not in HR) is
// neither suggested the HR page's values nor counts it; ann (in HR) and the admin see it all. Asked
// twice (the second answer from the kept description), and again after the page is shared with bob.
func TestAccessMetadataFacets(t *testing.T) {
	f := accessMetaFixture(t)
	facets := func(who string) map[string]string {
		t.Helper()
		code, b := f.do(t, who, http.MethodGet, "/api/kbs/handbook/metadata", "")
		var out struct {
			Keys []rag.MetaFacet `json:"keys"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &out) != nil {
			t.Fatalf("%s: GET metadata = %d %s", who, code, b)
		}
		got := map[string]string{}
		for _, k := range out.Keys {
			var vs []string
			for _, v := range k.Values {
				vs = append(vs, fmt.Sprintf("%v×%d", v.Value, v.Documents))
			}
			got[k.Key] = fmt.Sprintf("%d %s %v-%v", k.Documents, strings.Join(vs, ","), k.Min, k.Max)
		}
		return got
	}
	everything := map[string]string{
		"department": "3 Engineering×2,Payroll×1 <nil>-<nil>",
		"labels":     "2 policy×2,merger×1 <nil>-<nil>",
		"year":       "3 2025×2,2026×1 2025-2026",
	}
	bobs := map[string]string{
		"department": "2 Engineering×2 <nil>-<nil>",
		"labels":     "1 policy×1 <nil>-<nil>",
		"year":       "2 2025×2 2025-2025",
	}
	for range 2 {
		if got := facets("bob"); !maps.Equal(got, bobs) {
			t.Fatalf("bob's facets = %v; want %v (nothing of the HR page)", got, bobs)
		}
		for _, who := range []string{"ann", "boss"} {
			if got := facets(who); !maps.Equal(got, everything) {
				t.Fatalf("%s's facets = %v; want %v", who, got, everything)
			}
		}
	}
	// shared with bob at the source: his suggestions now hold the page's values
	if err := f.db.PutConnectorItem(context.Background(), "acme", "wiki", rag.ConnectorItem{ID: "101", SourceURI: "connector/wiki/101", Version: "1",
		Metadata: `{"permissions":["group:hr","user:bob@acme.example"]}`}); err != nil {
		t.Fatal(err)
	}
	if got := facets("bob"); !maps.Equal(got, everything) {
		t.Fatalf("bob's facets once the page is shared with him = %v; want %v", got, everything)
	}
}

// Filter inference reads only what the caller may read: a question naming a value only the HR page
// holds ("Payroll") is never narrowed for bob (nor answered from the page), and is for ann; a value
// bob's documents hold is inferred for him, counting only those.
func TestAccessFilterInference(t *testing.T) {
	f := accessMetaFixture(t)
	ask := func(who, q string) (answer.Done, []string) {
		t.Helper()
		code, b := f.do(t, who, http.MethodPost, "/api/ask", `{"question":`+fmt.Sprintf("%q", q)+`}`)
		var done answer.Done
		if code != http.StatusOK || json.Unmarshal(b, &done) != nil {
			t.Fatalf("%s: POST /api/ask = %d %s", who, code, b)
		}
		return done, f.docsIn(b)
	}
	const payroll = "How many days of annual leave does the Payroll department give?"
	done, cited := ask("bob", payroll)
	if done.InferredFilter != nil || slices.Contains(cited, f.hrDoc.ID) {
		t.Fatalf("bob asking about Payroll: inferred %+v, cited %v; want no inference and not the HR page", done.InferredFilter, cited)
	}
	done, cited = ask("ann", payroll)
	if done.InferredFilter == nil || done.InferredFilter.Documents != 1 || !strings.Contains(string(done.InferredFilter.Filter), "Payroll") ||
		!slices.Equal(cited, []string{f.hrDoc.ID}) {
		t.Fatalf("ann asking about Payroll: inferred %+v, cited %v; want department = Payroll, the HR page alone", done.InferredFilter, cited)
	}
	done, cited = ask("bob", "How many days of annual leave does the Engineering department give?")
	if done.InferredFilter == nil || done.InferredFilter.Documents != 2 || slices.Contains(cited, f.hrDoc.ID) {
		t.Fatalf("bob asking about Engineering: inferred %+v, cited %v; want department = Engineering over his 2 documents", done.InferredFilter, cited)
	}
	// a value only the HR page holds (year 2026) named beside one bob's documents hold: for bob, 2026
	// is no value at all (counting it would have ANDed the two into the HR page alone, then nothing),
	// so Engineering is inferred; for ann both are, and together they match nothing she reads
	const both = "What did the Engineering department decide in 2026?"
	done, cited = ask("bob", both)
	if done.InferredFilter == nil || done.InferredFilter.Documents != 2 || len(done.InferredFilter.Matched) != 1 ||
		done.InferredFilter.Matched[0].Key != "department" || slices.Contains(cited, f.hrDoc.ID) {
		t.Fatalf("bob asking about Engineering in 2026: inferred %+v, cited %v; want department = Engineering alone, his 2 documents", done.InferredFilter, cited)
	}
	if last := f.corpus.got[len(f.corpus.got)-1]; slices.Contains(last.Filter.DocumentIDs, f.hrDoc.ID) || len(last.Filter.DocumentIDs) != 2 {
		t.Fatalf("bob's retrieval was scoped to %v; want his 2 Engineering documents", last.Filter.DocumentIDs)
	}
	if done, _ = ask("ann", both); done.InferredFilter != nil {
		t.Fatalf("ann asking about Engineering in 2026: inferred %+v; want none (no document is both)", done.InferredFilter)
	}
}
