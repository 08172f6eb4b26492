// Command stage is the Lambda behind every Task of the ingestion state machine
// (infra/statemachines/ingest.asl.json). The payload names the stage ({"stage":"Chunk","input":{...}});
// the function dispatches it to shared/ingest's Workflow and reports errors with the error kind as
// errorType, which the ASL's Retry and Catch match. The template deploys it twice: ExtractFunction with
// the memory PDF extraction needs, StageFunction for the rest.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/s3"
)

var version = "dev"

func main() {
	log := awsenv.Logger()
	ctx := context.Background()
	w, err := wire(ctx, os.Getenv)
	if err != nil {
		log.Error("stage function failed to start", "version", version, "error_type", awsrt.ErrorType(err), "err", err)
		os.Exit(1)
	}
	lambda.Start(awsrt.Handler(w.Dispatch))
}

// wire opens the stores and builds the workflow; nothing is called per invocation.
func wire(ctx context.Context, getenv func(string) string) (*ingest.Workflow, error) {
	cfg, err := awsenv.Load(ctx, getenv)
	if err != nil {
		return nil, err
	}
	db, err := mysql.Open(ctx, cfg.SQL.DSN, mysql.Options{MaxOpenConns: cfg.SQL.MaxOpenConns, ConnMaxLifetime: cfg.SQL.ConnMaxLifetime}, nil)
	if err != nil {
		return nil, err
	}
	vec, err := milvus.Open(ctx, milvus.Options{Addr: cfg.Vector.MilvusAddr, Token: cfg.Vector.MilvusToken, Collection: cfg.Vector.Collection,
		Dim: cfg.Vector.Dim, CallTimeout: cfg.Vector.CallTimeout})
	if err != nil {
		return nil, err
	}
	blobs, err := s3.New(ctx, s3.Options{Bucket: cfg.Blob.Bucket, Region: cfg.Blob.Region, Endpoint: cfg.Blob.Endpoint, UsePathStyle: cfg.Blob.UsePathStyle})
	if err != nil {
		return nil, err
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	emb, err := embedder(cfg)
	if err != nil {
		return nil, err
	}
	st := &ingest.Stages{Records: db, Vectors: vec, Blobs: blobs, Embedder: emb, Log: awsenv.Logger(),
		Limits:   extract.Limits{MaxFileBytes: cfg.Server.MaxBodyBytes},
		Chunking: chunk.Options{ChildChars: cfg.Chunking.ChildChars, Overlap: cfg.Chunking.Overlap, ParentChars: cfg.Chunking.ParentChars}}
	return &ingest.Workflow{Stages: st, Leases: db, Events: db, Objects: awsenv.Objects{S3: awsenv.S3Client(ac, cfg)},
		BatchSize: max(cfg.Embeddings.BatchSize, 1) * 16}, nil
}

// embedder is the configured provider: an OpenAI-compatible API, or the offline embedder.
func embedder(cfg config.Config) (ingest.Embedder, error) {
	if cfg.Embeddings.Provider == "openai" {
		return embed.NewOpenAI(embed.OpenAIOptions{BaseURL: cfg.Embeddings.BaseURL, APIKey: cfg.Embeddings.APIKey,
			Model: cfg.Embeddings.Model, Dim: cfg.Vector.Dim, BatchSize: cfg.Embeddings.BatchSize})
	}
	return embed.NewOffline(cfg.Vector.Dim), nil
}
