// Command rerank is the rerank function: {"query", "documents"} -> {"scores"} in input order, or
// {"query", "evidence", "k"} -> the reranked, cut and filtered evidence (the answer state machine's
// Rerank Task). It holds the reranker the chat function would otherwise hold in process (the rerank API
// of DOCMIND_RERANK_PROVIDER=http, or lexical scores), so it can be sized for a cross-encoder on its
// own. It lists neither the Milvus client nor the chat model's client among its dependencies (TestDeps).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

var version = "dev"

func main() { lambdamain.Run("rerank", version, run) }

func run(ctx context.Context, _ *slog.Logger) error {
	r, err := wire(ctx, os.Getenv)
	if err != nil {
		return err
	}
	lambda.Start(awsrt.Handler(r.Rerank))
	return nil
}

// wire reads the configuration (the rerank API key from Secrets Manager when
// DOCMIND_RERANK_API_KEY_SECRET_ARN names it) and builds the reranker.
func wire(ctx context.Context, getenv func(string) string) (*rankfn.Reranker, error) {
	if getenv("DOCMIND_RERANK_API_KEY_SECRET_ARN") != "" && getenv("DOCMIND_RERANK_API_KEY") == "" {
		ac, err := awsrt.LoadConfig(ctx, awsconfig.WithRetryer(func() aws.Retryer { return retry.NewStandard() }))
		if err != nil {
			return nil, rag.E("rerank", rag.KindInvalid, err)
		}
		sm := &awsrt.Cache{Reader: awsrt.SecretsManager{Client: secretsmanager.NewFromConfig(ac)}}
		var bind []awsrt.Binding
		for _, b := range awsrt.Bindings() {
			if b.Var == "DOCMIND_RERANK_API_KEY" {
				bind = append(bind, b)
			}
		}
		if getenv, err = awsrt.Env(ctx, getenv, sm, bind); err != nil {
			return nil, err
		}
	}
	cfg, err := config.Load("", lambdamain.Storeless(getenv))
	if err != nil {
		return nil, err
	}
	return reranker(cfg)
}

// reranker is the configured rerank API, or lexical scores. The chat model ("llm") is refused: grading
// passages with the chat model belongs to the query function, which already holds its client.
func reranker(cfg config.Config) (*rankfn.Reranker, error) {
	filter := rank.FilterOptions{Floor: cfg.Retrieval.FilterFloor, Drop: cfg.Retrieval.FilterDrop}
	switch cfg.Rerank.Provider {
	case "http":
		return &rankfn.Reranker{Model: cfg.Rerank.Model, Filter: filter,
			Rank: &rank.HTTPReranker{URL: cfg.Rerank.URL, APIKey: cfg.Rerank.APIKey, Model: cfg.Rerank.Model, Format: cfg.Rerank.Format}}, nil
	case "", "none", "lexical":
		return &rankfn.Reranker{Model: "lexical", Rank: rank.Lexical{}}, nil
	}
	return nil, &config.ValidationError{Problems: []string{"DOCMIND_RERANK_PROVIDER must be http (or empty for lexical scores) in the rerank function, got " + cfg.Rerank.Provider}}
}
