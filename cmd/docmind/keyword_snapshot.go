package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// keywordSnapshotPath is the BM25 snapshot's file: beside the SQLite database by default
// (docmind.db.bm25), keywords.bm25 in the data directory when the database is elsewhere (a DSN, MySQL);
// "" without a data directory (no snapshot: the index is built from SQL at every open).
func keywordSnapshotPath(cfg config.Config) string {
	if cfg.DataDir == "" {
		return ""
	}
	if cfg.SQL.Driver != "mysql" && cfg.SQL.DSN == "" {
		return bm25.SnapshotPath(cfg.SQLitePath())
	}
	return filepath.Join(cfg.DataDir, "keywords.bm25")
}

// openKeyword fills the keyword index from its snapshot plus what changed in SQL since it was written
// (or from SQL alone when it is missing or unusable) and starts the saver that keeps the file current
// (docs/retrieval.md, "The snapshot").
func openKeyword(ctx context.Context, cfg config.Config, db *sqldb.DB) (*bm25.Index, *bm25.Saver, bm25.LoadReport, error) {
	ix := bm25.New(cfg.Retrieval.BM25Params())
	path := keywordSnapshotPath(cfg)
	if path == "" {
		return ix, nil, bm25.LoadReport{Reason: "no data directory"}, ix.Load(ctx, db, cfg.Tenant)
	}
	logf := func(f string, a ...any) { slog.Warn(fmt.Sprintf(f, a...)) }
	rep, err := ix.LoadSnapshot(ctx, db, cfg.Tenant, path, logf)
	if err != nil {
		return ix, nil, rep, err
	}
	if rep.Snapshot {
		slog.Debug("bm25 snapshot loaded", "file", path, "kept", rep.Kept, "reindexed", rep.Reindexed, "removed", rep.Removed)
	}
	return ix, ix.StartSaver(db, cfg.Tenant, path, time.Minute, logf), rep, nil
}

// closeKeyword writes the snapshot if the index changed since it was last written. A failure is
// logged, not returned: the file is a cache of SQL, and the next start rebuilds what it lacks.
func closeKeyword(s *bm25.Saver) {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		slog.Warn("bm25: writing the snapshot at close failed; the next start re-indexes what changed", "err", err)
	}
}
