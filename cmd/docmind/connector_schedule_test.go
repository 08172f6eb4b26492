package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// serve's schedule follows the connectors table: each connector gets a timer at the interval, one
// removed elsewhere (docmind connector remove in another process) loses its timer at the next read.
func TestServeSchedulesConnectors(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	m := &Main{Config: config.Config{Tenant: "default"}, Logger: slog.New(slog.DiscardHandler), Stores: &Stores{SQL: db}}
	for _, n := range []string{"wiki", "site"} {
		if err := db.CreateConnector(ctx, &rag.Connector{Tenant: "default", Name: n, KBID: "kb1", Type: "web", Config: "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	tk := &connector.Ticker{Sync: func(context.Context, string, string) {}}
	defer tk.Close()
	m.scheduleConnectors(ctx, tk, time.Hour)
	if got := tk.Scheduled("default"); len(got) != 2 || got["wiki"] != time.Hour || got["site"] != time.Hour {
		t.Fatalf("scheduled %v; want wiki and site every hour", got)
	}
	if err := db.DeleteConnector(ctx, "default", "site"); err != nil {
		t.Fatal(err)
	}
	m.scheduleConnectors(ctx, tk, time.Hour)
	if got := tk.Scheduled("default"); len(got) != 1 || got["wiki"] != time.Hour {
		t.Fatalf("after site was removed: %v; want wiki only", got)
	}
}
