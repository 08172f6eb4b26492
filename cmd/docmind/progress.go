package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/store/memvec"

	"github.com/docmind/docmind/shared/demo"
	"github.com/docmind/docmind/shared/rag"
)

// progress prints one start-up step for the person at the terminal.
func (m *Main) progress(format string, args ...any) {
	if m.Progress != nil {
		fmt.Fprintf(m.Progress, "docmind: "+format+"\n", args...)
	}
}

// URL is the page's address on the bound listener.
func (m *Main) URL() string { return "http://" + m.Addr() + "/" }

func migratedNote(applied []int) string {
	switch len(applied) {
	case 0:
		return "schema up to date"
	case 1:
		return "1 migration applied"
	}
	return fmt.Sprintf("%d migrations applied", len(applied))
}

// demoProgress reports the demo's ingestion ("ingesting 4 of 9") each time the count of finished
// documents changes, then one line saying it is ready and where to ask. It reads the same SQL rows
// GET /api/kbs/demo/documents shows; it stops at the end of the batch or of ctx.
func (m *Main) demoProgress(ctx context.Context, every time.Duration) {
	total, last := m.demoFiles, -1
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		done, failed := m.demoCounts(ctx)
		if done != last {
			last = done
			if done >= total {
				note := ""
				if failed > 0 {
					note = fmt.Sprintf(", %d failed (see %sapi/kbs/demo/documents)", failed, m.URL())
				}
				m.progress("demo: %d of %d documents ingested%s; ask at %s", done, total, note, m.URL())
				return
			}
			m.progress("demo: ingesting, %d of %d documents done", done, total)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// demoCounts counts the demo documents that finished (ready or failed) and the failed ones; before the
// watcher has created the knowledge base both are 0.
func (m *Main) demoCounts(ctx context.Context) (done, failed int) {
	kb, err := m.Stores.SQL.GetKBByName(ctx, m.Config.Tenant, demo.KB)
	if err != nil {
		return 0, 0
	}
	docs, err := m.Stores.SQL.ListDocuments(ctx, m.Config.Tenant, kb.ID, "")
	if err != nil {
		return 0, 0
	}
	for _, d := range docs {
		switch d.Status {
		case rag.StatusReady:
			done++
		case rag.StatusFailed:
			done++
			failed++
		}
	}
	return done, failed
}

// serverURLFile is where a running `docmind serve` writes its URL inside the data directory, so a
// command refused by the directory's lock can name the server to ask instead.
const serverURLFile = "server.url"

func (m *Main) recordURL() {
	if err := os.WriteFile(filepath.Join(m.Config.DataDir, serverURLFile), []byte(m.URL()+"\n"), 0o644); err != nil {
		m.Logger.Warn("server URL not recorded in the data directory", "err", err)
	}
}

func (m *Main) forgetURL() {
	if m.ln != nil {
		os.Remove(filepath.Join(m.Config.DataDir, serverURLFile))
	}
}

// heldHint tells the user of a command refused by a running server's lock on the data directory what
// to do next: ask that server (by the URL it recorded, else the configured address).
func heldHint(e env, cfg config.Config, err error) {
	if !errors.Is(err, memvec.ErrHeld) {
		return
	}
	url := "http://" + cfg.Server.Addr
	if b, rerr := os.ReadFile(filepath.Join(cfg.DataDir, serverURLFile)); rerr == nil && strings.HasPrefix(string(b), "http") {
		url = strings.TrimSuffix(strings.TrimSpace(string(b)), "/")
	}
	fmt.Fprintf(e.stderr, "docmind: a docmind server is running on this data directory; ask it instead: docmind ask --server %s \"question\"\n", url)
}
