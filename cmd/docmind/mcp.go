package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/identity"
	"github.com/docmind/docmind/shared/mcp"
	"github.com/docmind/docmind/shared/rag"
)

// cmdMCP serves the Model Context Protocol on stdin and stdout, for a desktop assistant that starts
// docmind itself (Claude Desktop, an IDE): the same tools as /mcp on `docmind serve`, over the data
// directory opened by this process, which also runs the ingestion queue and the inbox watcher as serve
// does. Logs go to stderr (stdout is the protocol).
//
// Identity: the caller is who DOCMIND_API_KEY (an API key or a JWT) says, with that user's tenant,
// roles, limits and budget, exactly as over HTTP; with DOCMIND_AUTH=none (the local default) it is the
// local user, the tenant's admin, as the page is on a loopback server. With authentication on and no
// key the command refuses to start.
func cmdMCP(e env, args []string) int {
	var c common
	fs := newFlags("mcp", e, &c)
	noDemo := fs.Bool("no-demo", false, "do not install the demo knowledge base on first start")
	noWatch := fs.Bool("no-watch", false, "do not watch <data>/inbox")
	if fs.Parse(args) != nil {
		return exitConfig
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	key := e.getenv("DOCMIND_API_KEY")
	if m, err := identity.ParseMode(cfg.Auth.Mode); err == nil && !m.None() && key == "" {
		fmt.Fprintf(e.stderr, "docmind: DOCMIND_AUTH=%s: set DOCMIND_API_KEY to the API key (or token) the assistant acts with\n", cfg.Auth.Mode)
		return exitConfig
	}
	cfg.Server.Addr = "127.0.0.1:0" // nothing is served over HTTP; a running `docmind serve` keeps its port
	m := &Main{Config: cfg, Logger: newLogger(cfg, e.stderr), Version: version, NoDemo: *noDemo, NoWatch: *noWatch}
	if err := m.Open(e.ctx); err != nil {
		m.Close()
		return fail(e, err)
	}
	defer m.Close()
	m.ln.Close()
	svc := httpapi.NewService(m.deps)
	p, err := svc.Authenticate(e.ctx, "Bearer "+key)
	if err != nil {
		return fail(e, err)
	}
	stop := m.background(e.ctx)
	defer stop()
	m.Logger.Info("docmind mcp on stdio", "tenant", p.Tenant, "user", p.UserID, "data", cfg.DataDir, "version", version)
	if err := serveMCP(e.ctx, svc, p, m, os.Stdin, e.stdout); err != nil {
		return fail(e, err)
	}
	return exitOK
}

// serveMCP runs one MCP session over r and w until the client closes its end or ctx ends.
func serveMCP(ctx context.Context, svc mcp.Service, p rag.Principal, m *Main, r io.ReadCloser, w io.Writer) error {
	srv := mcp.NewServer(svc, p, mcp.Options{Version: m.Version, Logger: m.Logger, MaxIngestBytes: int(m.Config.Server.MaxBodyBytes)})
	err := srv.Run(ctx, &sdk.IOTransport{Reader: r, Writer: nopWriteCloser{w}})
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
