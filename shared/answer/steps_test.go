package answer

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

// TestStateJSON: the per-question state survives JSON half-way through the steps, so a step can be
// given its input from a fixture (or another process) and carry on to the same answer.
func TestStateJSON(t *testing.T) {
	evidence := []rank.Evidence{ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 0.9)}
	fr := &fakeRetriever{res: &retrieve.Result{Evidence: evidence, Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.9}, StageMS: map[string]int64{"bm25": 1}}}
	p := &Pipeline{Retriever: fr}
	req := Request{Tenant: "acme", KBIDs: []string{"kb_1"}, Question: " annual leave days? ", User: "u1",
		History: []llm.Message{{Role: "user", Content: "hi"}}, HistoryAt: []time.Time{time.Unix(100, 0).UTC()}}
	st := p.newState(req)
	ctx := context.Background()
	if p.understand(ctx, st) != nil {
		t.Fatal("an in-scope question has no prepared answer")
	}
	p.route(st)
	if err := p.retrieve(ctx, st, (&recorder{}).emit); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Request, st.Request) || back.Question != "annual leave days?" || back.Route.Path != PathStandard ||
		len(back.Result.Evidence) != 1 || back.Done.StageMS["retrieval.bm25"] != 1 || back.Understanding.Rewrite != st.Understanding.Rewrite {
		t.Fatalf("round trip lost state:\n got %+v\nwant %+v", back, *st)
	}
	// The rest of the steps, from the decoded state, give the answer the original state gives.
	finish := func(st *State) *Done {
		st.sources()
		if err := p.generate(ctx, st, (&recorder{}).emit); err != nil {
			t.Fatal(err)
		}
		if err := p.verify(st, (&recorder{}).emit); err != nil {
			t.Fatal(err)
		}
		return final(st, st.Done)
	}
	a, b2 := finish(st), finish(&back)
	a.StageMS, b2.StageMS = nil, nil // timings differ
	if ja, jb := mustJSON(t, a), mustJSON(t, b2); ja != jb {
		t.Fatalf("the decoded state answers differently:\n got %s\nwant %s", jb, ja)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRouteStep checks the routing step alone, one understanding per path.
func TestRouteStep(t *testing.T) {
	agent := &Agent{LLM: &fakeToolCaller{}}
	cases := []struct {
		name   string
		req    Request
		u      Understanding
		agent  *Agent
		path   string
		reason string
	}{
		{"standard", Request{}, Understanding{}, nil, PathStandard, "RULES_DEFAULT"},
		{"selected wins over sub-questions", Request{DocumentIDs: []string{"d1"}}, Understanding{Decompose: true, SubQueries: []string{"a", "b"}}, nil, PathSelectedDoc, "SELECTED_DOC"},
		{"decomposed", Request{}, Understanding{Decompose: true, SubQueries: []string{"a", "b"}}, agent, PathDecomposed, "DECOMPOSED"},
		{"one sub-question", Request{}, Understanding{Decompose: true, SubQueries: []string{"a"}}, nil, PathStandard, "DECOMPOSITION_WITHOUT_SUBQUERIES"},
		{"complex with an agent", Request{}, Understanding{Complexity: "complex"}, agent, PathAgentic, "COMPLEX"},
		{"complex without one", Request{}, Understanding{Complexity: "complex"}, nil, PathStandard, "RULES_DEFAULT"},
	}
	for _, c := range cases {
		p := &Pipeline{Agent: c.agent}
		st := p.newState(c.req)
		st.Understanding = c.u
		p.route(st)
		if st.Done.Path != c.path || st.Route.Path != c.path || st.Route.Reason != c.reason {
			t.Errorf("%s: path %s (route %s, %s), want %s, %s", c.name, st.Done.Path, st.Route.Path, st.Route.Reason, c.path, c.reason)
		}
	}
}

// fakeToolCaller is a tool-calling model that is never called (the route step only checks it is there).
type fakeToolCaller struct{}

func (fakeToolCaller) CallTools(context.Context, llm.Request, []llm.Tool) (llm.Reply, error) {
	return llm.Reply{}, nil
}

// TestWarningText: a calibrated score is said as an estimate of being right; otherwise the band speaks.
func TestWarningText(t *testing.T) {
	for _, c := range []struct {
		c    Confidence
		want string
	}{
		{Confidence{Band: BandLow, Score: 0.31, Calibrated: true}, "About 31% of answers"},
		{Confidence{Band: BandLow}, "Low confidence"},
		{Confidence{Band: BandMedium}, "only partly supported"},
	} {
		if got := warning(c.c); !strings.HasPrefix(got, c.want) && !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.c, got, c.want)
		}
	}
}

// TestFunctionLength keeps the package's functions short enough to read and test alone (Run was 263
// lines over one struct before it became named steps).
func TestFunctionLength(t *testing.T) {
	const limit = 80
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > limit {
					t.Errorf("%s: %s is %d lines (limit %d)", name, fd.Name.Name, n, limit)
				}
			}
		}
	}
}
