package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/milvus/milvustest"
)

// TestWorkflowSendsTheFilterToMilvus: the answer state machine (its JSON states between the Tasks)
// carries a question's metadata filter beside its documents (answer.Request.Filter) to the Retrieve
// stage, whose vector leg searches Milvus with it as an expression, never with the documents' ids;
// only the filter decides which of two alike policies is cited. An execution input written before the
// filter was carried (restrict only) still answers exactly, by id list.
func TestWorkflowSendsTheFilterToMilvus(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	kb := milvustest.New(t, cfg, milvustest.TravelDocs())
	// the askstep function's index: Lazy and Late, attaching on its first search
	ix, err := milvus.Open(ctx, milvus.Options{Addr: kb.Server.Addr(), Collection: milvustest.Collection, Dim: cfg.Vector.Dim, Late: true, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	s, err := stages(cfg, kb.DB, kb.Keyword, ix)
	if err != nil {
		t.Fatal(err)
	}
	lexical := &rankfn.Reranker{Rank: rank.Lexical{}, Model: "lexical"}
	f := newFlow(t, s, lexical.Rerank, (&rankfn.Grader{Options: s.Chain.Options.Grade}).Grade)
	const question = "What is the daily travel allowance for business trips?"
	cited := func(d answer.Done) []string {
		var out []string
		for _, src := range d.Sources {
			if src.Cited {
				out = append(out, src.FileName)
			}
		}
		return out
	}
	// the request as the api function hands it to the execution (httpapi.restrictByFilter)
	request := func(year string) answer.Request {
		mf, err := rag.ParseMetaFilter([]byte(`{"key":"year","eq":` + year + `}`))
		if err != nil {
			t.Fatal(err)
		}
		ids, err := kb.DB.MatchDocuments(ctx, cfg.Tenant, []string{kb.KB.ID}, mf)
		if err != nil || len(ids) != 3 {
			t.Fatalf("%d documents of %s: %v", len(ids), year, err)
		}
		return answer.Request{Tenant: cfg.Tenant, KBIDs: []string{kb.KB.ID}, Restrict: ids, Filter: mf, FilterKeys: mf.Keys(), Question: question}
	}
	kb.Searches()
	for _, year := range []string{"2025", "2024"} {
		done, trace, err := f.ask(t, request(year))
		if err != nil {
			t.Fatal(err)
		}
		if c := cited(done); !slices.Contains(c, "travel-"+year+".md") || len(c) != 1 {
			t.Errorf("year %s: cited %v, want travel-%s.md alone (%q)", year, c, year, done.Answer)
		}
		exprs := kb.Searches()
		if len(exprs) == 0 {
			t.Fatalf("year %s: no search reached Milvus (states %v)", year, trace.States)
		}
		for _, e := range exprs {
			if !strings.Contains(e, `meta["n"]["year"] == `+year+".0") || strings.Contains(e, "doc_id") {
				t.Errorf("year %s: Milvus got %q; want the filter as an expression, no id list", year, e)
			}
		}
	}
	if a, fb := ix.MetaSearches(); a == 0 || fb != 0 {
		t.Errorf("%d searches by expression, %d fallbacks; want every one by expression", a, fb)
	}

	// an execution input from before: the documents only, no "filter" (read as none: ids it is), field
	// by field as the api function wrote it
	ids := request("2025").Restrict
	raw, _ := json.Marshal(map[string]any{"tenant": cfg.Tenant, "kb_ids": []string{kb.KB.ID}, "restrict": ids, "filter_keys": []string{"year"}, "question": question})
	out, trace, err := f.runner.Run(ctx, "ask", raw)
	if err != nil {
		t.Fatalf("old input %s: %v", raw, err)
	}
	var done answer.Done
	if err := json.Unmarshal(out, &done); err != nil {
		t.Fatal(err)
	}
	if c := cited(done); len(c) != 1 || c[0] != "travel-2025.md" || !slices.Contains(trace.States, "Rerank") {
		t.Errorf("old input: cited %v, states %v; want travel-2025.md alone on the standard path", c, trace.States)
	}
	for _, e := range kb.Searches() {
		if !strings.Contains(e, "doc_id in") {
			t.Errorf("old input: Milvus got %q; want the documents' ids", e)
		}
	}
}

// TestFilteredStateSize measures the largest state of an execution whose filter passes 5,000
// documents (ids as docmind makes them; the documents themselves need not exist for the size): the
// states carry the ids beside the filter, which bounds how many documents a filtered /api/ask may
// pass on AWS. Logged (go test ./functions/askstep -run FilteredStateSize -v); fails above the limit.
func TestFilteredStateSize(t *testing.T) {
	cfg := config.Default()
	kb := milvustest.New(t, cfg, milvustest.TravelDocs())
	s, err := stages(cfg, kb.DB, kb.Keyword, kb.Vectors)
	if err != nil {
		t.Fatal(err)
	}
	f := newFlow(t, s, (&rankfn.Reranker{Rank: rank.Lexical{}, Model: "lexical"}).Rerank, (&rankfn.Grader{Options: s.Chain.Options.Grade}).Grade)
	mf, err := rag.ParseMetaFilter([]byte(`{"key":"year","eq":2025}`))
	if err != nil {
		t.Fatal(err)
	}
	base := 0
	for _, n := range []int{0, 5000} {
		ids := []string{kb.IDs["travel-2025.md"]}
		for len(ids) < n {
			ids = append(ids, rag.NewID("doc"))
		}
		req := answer.Request{Tenant: cfg.Tenant, KBIDs: []string{kb.KB.ID}, Restrict: ids, Filter: mf, Question: "What is the daily travel allowance for business trips?"}
		if n == 0 {
			req.Restrict, req.Filter = nil, nil
		}
		_, tr, err := f.ask(t, req)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			base = tr.MaxStateBytes
			continue
		}
		per := float64(tr.MaxStateBytes-base) / float64(n)
		t.Logf("%d documents passing: largest state %d bytes (%.0f%% of 256 KiB; %d unfiltered), %.1f bytes a document: at most about %.0f documents fit",
			n, tr.MaxStateBytes, 100*float64(tr.MaxStateBytes)/maxPayload, base, per, float64(maxPayload-base)/per)
		if tr.MaxStateBytes > maxPayload {
			t.Errorf("a state of %d bytes is over the Step Functions limit", tr.MaxStateBytes)
		}
	}
}
