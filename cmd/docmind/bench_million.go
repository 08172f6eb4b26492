package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"

	"github.com/docmind/docmind/shared/bench"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
	"github.com/docmind/docmind/shared/retrieve"
)

// benchLocal opens the million suite's stack under dir as `docmind serve` opens its own: the default
// configuration (offline embedder, SQLite, memvec with the int8 scan, BM25 rebuilt from SQLite) with dir
// as the data folder, the batch ingestion of `docmind ingest`, the retrieval chain of the chat and the
// checker of `docmind reconcile`. The bench measures what a user gets by default, whatever the caller's
// own configuration says.
func benchLocal(ctx context.Context, dir string) (*bench.Local, error) {
	cfg := config.Default()
	cfg.DataDir = dir
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, svc, err := openIngest(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	rt, err := retriever(cfg, s)
	if err != nil {
		s.Close()
		return nil, err
	}
	chk, err := newChecker(cfg, s, svc, log, false)
	if err != nil {
		s.Close()
		return nil, err
	}
	f := rag.Filter{Tenant: cfg.Tenant}
	return &bench.Local{
		Ingest: func(ctx context.Context, srcs []ingest.Source) []ingest.Report {
			return svc.IngestBatch(ctx, cfg.Tenant, srcs)
		},
		Retrieve: func(ctx context.Context, q string) (int, error) {
			res, err := rt.Retrieve(ctx, retrieve.Query{Text: q, Filter: f})
			if err != nil {
				return 0, err
			}
			return len(res.Evidence), nil
		},
		Reconcile: func(ctx context.Context) (int, int, int, error) {
			rep, err := chk.Run(ctx, reconcile.Options{})
			drift := 0
			for _, n := range rep.Drift {
				drift += n
			}
			return rep.Documents, rep.Vectors, drift, err
		},
		Close:  s.Close,
		Opened: s.Opened,
	}, nil
}

// benchFresh runs this program again as `docmind bench --measure-million <args>`.
func benchFresh(args ...string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	return exec.Command(self, append([]string{"bench", "--measure-million"}, args...)...)
}

// benchMillionChild is the million suite's measuring process: it prints bench.MillionResult as JSON.
func benchMillionChild(e env, args []string) int {
	res, err := bench.MeasureMillion(e.ctx, benchLocal, args)
	if err != nil {
		return fail(e, fmt.Errorf("measure: %w", err))
	}
	if err := json.NewEncoder(e.stdout).Encode(res); err != nil {
		return fail(e, err)
	}
	return exitOK
}
