package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector/manage"
	"github.com/docmind/docmind/shared/demo"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/mcp"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
	"github.com/docmind/docmind/shared/wire"
)

// Main is the local server: it owns the stores and the HTTP listener. End-to-end tests drive it
// directly: Open, then Serve in a goroutine, then Close.
type Main struct {
	Config  config.Config
	Logger  *slog.Logger
	Version string

	// NoDemo skips installing the demo knowledge base on first start; NoWatch skips the inbox watcher.
	NoDemo  bool
	NoWatch bool
	// Progress, when set, gets one plain line per start-up step for the person who ran the command
	// (opening and migrating, serving at URL, the demo's ingestion); the logger still gets the details.
	Progress io.Writer

	demoFiles int // demo documents copied at this start, whose ingestion Serve reports

	Stores *Stores
	Ingest *ingest.Service
	Chat   *answer.Pipeline // the question pipeline, built by Open
	// Connectors runs connector syncs for the schedule and the HTTP API (its background syncs end
	// with Serve).
	Connectors *manage.Manager
	queue      *ingest.Queue
	watcher    *ingest.Watcher
	ln         net.Listener
	srv        *http.Server
	deps       httpapi.Deps // what the HTTP handler was built with (docmind mcp serves the same operations on stdio)
}

// Open opens the stores (applying migrations) and binds the listener.
func (m *Main) Open(ctx context.Context) error {
	if m.Logger == nil {
		m.Logger = slog.New(slog.DiscardHandler)
	}
	m.progress("opening the stores under %s and migrating the database", m.Config.DataDir)
	s, err := OpenStores(ctx, m.Config)
	if err != nil {
		return err
	}
	m.Stores = s
	m.progress("database ready (%s)", migratedNote(s.Migrated))
	if m.Ingest, err = ingestService(m.Config, s, m.Logger); err != nil {
		return err
	}
	m.queue = &ingest.Queue{Service: m.Ingest, Log: m.Logger}
	m.Connectors = connectorManager(m.Config, s.SQL, m.Ingest, os.Getenv, m.Logger)
	inbox := filepath.Join(m.Config.DataDir, "inbox")
	if !m.NoDemo {
		if installed, err := demo.Install(m.Config.DataDir); err != nil {
			m.Logger.Warn("demo knowledge base not installed", "err", err)
		} else if installed {
			m.demoFiles = len(demo.Files())
			m.Logger.Info("demo knowledge base copied to the inbox; it is ingested in the background", "dir", filepath.Join(inbox, demo.KB))
		}
	}
	if !m.NoWatch {
		m.watcher = &ingest.Watcher{Service: m.Ingest, Tenant: m.Config.Tenant, Root: inbox, Log: m.Logger, MaxBytes: m.Config.Server.MaxBodyBytes}
	}
	ln, err := net.Listen("tcp", m.Config.Server.Addr)
	if err != nil {
		return rag.E("serve", rag.KindInvalid, fmt.Errorf("listen on %s: %w", m.Config.Server.Addr, err))
	}
	m.ln = ln
	m.recordURL()
	chain, err := retriever(m.Config, s)
	if err != nil {
		return err
	}
	chat := wire.Chat(m.Config, chain, s.SQL, s.KV)
	m.Chat = chat
	deps := httpapi.Deps{Version: m.Version, Logger: m.Logger, Checks: s.Checks(),
		Library: s.SQL, Ingester: uploads{m.queue, m.Ingest}, MaxUploadBytes: m.Config.Server.MaxBodyBytes,
		Chat: chat, Conversations: s.SQL, Connectors: m.Connectors, MCP: mcp.Handler(mcp.Options{Version: m.Version, Logger: m.Logger})}
	if err := m.identity(&deps); err != nil {
		return err
	}
	if mem := wire.Memory(m.Config, s.SQL, s.Memories, chain.Embedder, s.KV); mem != nil {
		chat.Memory, deps.Memories = mem, mem
	}
	m.deps = deps
	h := httpapi.New(deps)
	m.srv = &http.Server{
		Handler:           http.MaxBytesHandler(h, m.Config.Server.MaxBodyBytes),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       m.Config.Server.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
	}
	return nil
}

// Addr is the bound address (useful with port 0).
func (m *Main) Addr() string { return m.ln.Addr().String() }

// Serve serves until ctx ends, then shuts down gracefully within the configured timeout.
func (m *Main) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- m.srv.Serve(m.ln) }()
	defer m.background(ctx)()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.Config.Server.ShutdownTimeout)
	defer cancel()
	if err := m.srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// background runs the ingestion queue, the scheduled reconcile and the inbox watcher until the returned
// stop is called (it waits for them).
func (m *Main) background(ctx context.Context) (stop func()) {
	bg, stopBG := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { m.queue.Run(bg) })
	wg.Go(func() { m.finishDeletes(bg) })
	if every := m.Config.Server.ReconcileInterval; every > 0 {
		wg.Go(func() { m.reconcileLoop(bg, every) })
	}
	if m.demoFiles > 0 && m.watcher != nil && m.Progress != nil {
		wg.Go(func() { m.demoProgress(bg, time.Second) })
	}
	// always: a connector may have its own interval when the default is off
	wg.Go(func() { m.connectorLoop(bg, m.Config.Connectors.SyncInterval) })
	if m.watcher != nil {
		wg.Go(func() {
			if err := m.watcher.Run(bg); err != nil {
				m.Logger.Error("inbox watcher stopped", "err", err)
			}
		})
	}
	return func() { stopBG(); m.Connectors.Close(); wg.Wait() }
}

// Close releases the listener and the stores (the vector index is flushed to disk).
func (m *Main) Close() error {
	var errs []error
	m.forgetURL()
	if m.ln != nil {
		m.ln.Close()
	}
	if m.Stores != nil {
		errs = append(errs, m.Stores.Close())
	}
	return errors.Join(errs...)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// openSQL opens only the relational store (for commands that need nothing else).
func openSQL(ctx context.Context, cfg config.Config) (*sqldb.DB, error) {
	if cfg.SQL.Driver == "mysql" {
		return mysql.Open(ctx, cfg.SQL.DSN, mysql.Options{MaxOpenConns: cfg.SQL.MaxOpenConns, ConnMaxLifetime: cfg.SQL.ConnMaxLifetime}, nil)
	}
	return sqlite.OpenWith(cfg.SQLitePath(), nil, sqlite.Options{MmapMB: cfg.SQL.MmapMB})
}

// deleteKB removes a knowledge base from every store, sources and staging included, and renames its
// drop folder to inbox/.deleted-<kb>-<time> so the next scan does not re-create it (ingest.Service.DeleteKB).
func deleteKB(ctx context.Context, cfg config.Config, kb rag.KnowledgeBase) error {
	s, err := OpenStores(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	svc, err := ingestService(cfg, s, nil)
	if err != nil {
		return err
	}
	return svc.DeleteKB(ctx, kb.Tenant, kb.ID)
}

// identity wires authentication, knowledge-base roles, the identity endpoints, the audit log, limits and
// the browser-origin checks. In mode none every request is the local admin and the Host header must be a
// loopback name with the bound port (DNS rebinding).
func (m *Main) identity(d *httpapi.Deps) error {
	s := m.Stores
	a, err := wire.Authenticator(m.Config, s.SQL)
	if err != nil {
		return err
	}
	a.Log = m.Logger
	d.Auth, d.AuthMode = a, a.Mode.String()
	if a.Mode.JWT {
		d.OAuthIssuer = m.Config.Auth.Issuer // MCP clients discover it (RFC 9728)
	}
	d.Members, d.Admin, d.Audit = s.SQL, s.SQL, s.SQL
	d.AccessMap = wire.AccessMap(m.Config)
	if lim := wire.Limiter(m.Config, s.KV); lim != nil {
		d.Limits = lim.WithLogger(m.Logger)
	}
	d.Guard = httpapi.GuardOptions{AllowedOrigins: config.List(m.Config.Auth.AllowedOrigins), LoopbackOnly: a.Mode.None(),
		Port: func() string {
			_, p, _ := net.SplitHostPort(m.ln.Addr().String())
			return p
		}}
	return nil
}
