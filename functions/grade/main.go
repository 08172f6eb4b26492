// Command grade is the grade function: {"query", "evidence", "rerank_known"} -> {"grade", "evidence"},
// the CRAG verdict of shared/rank (and, with "diversify", MMR and compression first: the answer state
// machine's Grade Task, and the chat's grade when the query function's DOCMIND_GRADE_FUNCTION names
// it). Grading is pure computation over the evidence it is sent: the function holds no store and no
// model client, and lists neither the Milvus client nor the chat model's among its dependencies
// (TestDeps).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

var version = "dev"

func main() { lambdamain.Run("grade", version, run) }

func run(_ context.Context, _ *slog.Logger) error {
	g, err := wire(os.Getenv)
	if err != nil {
		return err
	}
	lambda.Start(awsrt.Handler(g.Grade))
	return nil
}

// wire reads the grader's thresholds from the configuration (the same variables as the chat's).
func wire(getenv func(string) string) (*rankfn.Grader, error) {
	cfg, err := config.Load("", lambdamain.Storeless(getenv))
	if err != nil {
		return nil, err
	}
	rc := cfg.Retrieval
	return &rankfn.Grader{Options: rank.GradeOptions{RerankHigh: rc.GradeRerankHigh, RerankLow: rc.GradeRerankLow,
		CoverHigh: rc.GradeCoverHigh, CoverLow: rc.GradeCoverLow, MinSalient: 1}}, nil
}
