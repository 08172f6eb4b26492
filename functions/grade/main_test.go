package main

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/docmind/docmind/functions/internal/lambdatest"
	"github.com/docmind/docmind/functions/internal/linktest"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/rankfn"
)

// TestDeps: no forbidden package, and neither testing, the Milvus client nor go-openai is among the
// dependencies (go list -deps, as the Lambda build sees them).
func TestDeps(t *testing.T) { linktest.Computing(t, "github.com/docmind/docmind/functions/grade") }

// TestContract runs the testdata event (the one `make invoke-grade` sends) through the handler.
func TestContract(t *testing.T) {
	g, err := wire(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	in := lambdatest.ReadJSON[rankfn.GradeIn](t, "testdata/grade.json")
	out, err := awsrt.Handler(g.Grade)(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Grade.Tier != "HIGH" || out.Grade.Coverage < 0.99 {
		t.Errorf("grade = %+v, want HIGH with full coverage (the top passage names every query term)", out.Grade)
	}
	if len(out.Evidence) != 2 {
		t.Errorf("evidence = %d items, want 2", len(out.Evidence))
	}
	in.Evidence = nil
	out, err = g.Grade(context.Background(), in)
	if err != nil || !out.Grade.NoEvidence || out.Evidence == nil {
		t.Errorf("no evidence: %+v, %v; want no_evidence and an empty (not null) list", out, err)
	}
	_, err = awsrt.Handler(g.Grade)(context.Background(), rankfn.GradeIn{})
	var le messages.InvokeResponse_Error
	if !errors.As(err, &le) || le.Type != "Invalid" {
		t.Errorf("empty query: %#v, want errorType Invalid", err)
	}
}

// TestWireWithTemplateGlobals: the template's Globals name the cloud stores for every function; the
// grade function opens none and must start without their settings.
func TestWireWithTemplateGlobals(t *testing.T) {
	lambdatest.StartsStoreless(t, func(getenv func(string) string) error { _, err := wire(getenv); return err })
}
