// Command grade is the grade function: {"query", "evidence", "rerank_known"} -> {"grade", "evidence"},
// the CRAG verdict of shared/rank (and, with "diversify", MMR and compression first: the answer state
// machine's Grade Task). Grading is pure computation over the evidence it is sent: the function holds
// no store and no model client, and links neither the Milvus client nor the chat model's (TestDeps).
package main

import (
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

var version = "dev"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	g, err := wire(os.Getenv)
	if err != nil {
		log.Error("grade function failed to start", "version", version, "error_type", awsrt.ErrorType(err), "err", err)
		os.Exit(1)
	}
	lambda.Start(awsrt.Handler(g.Grade))
}

// wire reads the grader's thresholds from the configuration (the same variables as the chat's).
func wire(getenv func(string) string) (*rankfn.Grader, error) {
	cfg, err := config.Load("", storeless(getenv))
	if err != nil {
		return nil, err
	}
	rc := cfg.Retrieval
	return &rankfn.Grader{Options: rank.GradeOptions{RerankHigh: rc.GradeRerankHigh, RerankLow: rc.GradeRerankLow,
		CoverHigh: rc.GradeCoverHigh, CoverLow: rc.GradeCoverLow, MinSalient: 1}}, nil
}

// storeless hides the store drivers the template sets for every function (Globals): this function opens
// no store, and the drivers' own settings (a DSN, an address) are not given to it.
func storeless(getenv func(string) string) func(string) string {
	return func(k string) string {
		switch k {
		case "DOCMIND_SQL_DRIVER", "DOCMIND_VECTOR_DRIVER", "DOCMIND_KV_DRIVER", "DOCMIND_BLOB_DRIVER":
			return ""
		}
		return getenv(k)
	}
}
