// Command askstep is the Lambda behind the answer state machine's Understand, Retrieve, Evidence and
// Generate Tasks (infra/statemachines/answer.asl.json), which run the chat pipeline's own steps. The
// payload names the stage ({"stage":"Retrieve", "input":{...}}); errors carry their kind as errorType,
// which the ASL's Retry matches and the API function maps back to a status. Rerank and Grade are their
// own functions.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/functions/internal/stores"
	"github.com/docmind/docmind/functions/internal/stores/aurora"
	"github.com/docmind/docmind/shared/askflow"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/wire"
)

var version = "dev"

func main() { lambdamain.Run("askstep", version, run) }

func run(ctx context.Context, _ *slog.Logger) error {
	s, err := open(ctx, os.Getenv)
	if err != nil {
		return err
	}
	lambda.Start(awsrt.Handler(s.Dispatch))
	return nil
}

// open opens Aurora and Milvus and builds the stages.
func open(ctx context.Context, getenv func(string) string) (*askflow.Stages, error) {
	cfg, err := awsenv.Load(ctx, getenv)
	if err != nil {
		return nil, err
	}
	c, err := stores.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return stages(cfg, c.SQL, aurora.Keyword(c.SQL, cfg), c.Vectors)
}

// stages wires the chat's pipeline as the chat function does (the same model, prices, guard, web,
// agent and retrieval options, the SQL record as the catalog), without the cache and memory: the
// workflow answers one question, not a conversation. The standard path's rerank is the Rerank Task's;
// the chain's own reranker (as configured here) serves only the DECOMPOSED and AGENTIC paths.
func stages(cfg config.Config, db *sqldb.DB, kw retrieve.Keyword, vec retrieve.Vectors) (*askflow.Stages, error) {
	chain, err := wire.Retriever(cfg, kw, vec, db)
	if err != nil {
		return nil, err
	}
	return &askflow.Stages{Pipeline: wire.Chat(cfg, chain, db, nil), Chain: chain}, nil
}
