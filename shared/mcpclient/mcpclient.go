// Package mcpclient gives the agentic loop the tools of other MCP servers (DOCMIND_MCP_SERVERS), with the
// official Go SDK's client: only the tools the configuration allows, each call bounded in time and size,
// URLs reached through the hardened outbound client (netx), descriptions and results treated as the
// untrusted text they are (the agent neutralises results like retrieved passages; descriptions are
// neutralised here).
package mcpclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/netx"
	"github.com/docmind/docmind/shared/rag"
)

// Options bound the calls.
type Options struct {
	Timeout  time.Duration // one call, default 15 s
	MaxBytes int64         // one response (HTTP body or result text), default 256 KiB
	Logger   *slog.Logger
	// Allow lists non-global address ranges the HTTP client may reach (tests, on-premises servers).
	Allow []netip.Prefix
	// Getenv resolves "env:NAME" header values (default os.Getenv).
	Getenv func(string) string
}

// Remote is the agent's view of the configured MCP servers (answer.RemoteTools), with the official Go
// SDK's client: sessions are opened on first use and kept; a failed one is closed and opened again on the
// next call.
type Remote struct {
	servers []config.MCPServer
	o       Options
	client  *http.Client

	mu       sync.Mutex
	sessions map[string]*sdk.ClientSession
}

var _ answer.RemoteTools = (*Remote)(nil)

// New returns the servers' tools; nothing is connected until the agent first asks.
func New(servers []config.MCPServer, o Options) *Remote {
	o.Timeout = cmp.Or(o.Timeout, 15*time.Second)
	o.MaxBytes = cmp.Or(o.MaxBytes, 256<<10)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	nopts := netx.Options{Timeout: o.Timeout, MaxBytes: o.MaxBytes, Allow: o.Allow}
	return &Remote{servers: servers, o: o, client: netx.NewClient(nopts), sessions: map[string]*sdk.ClientSession{}}
}

// Close ends every session (stopping the servers started as commands).
func (r *Remote) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for name, s := range r.sessions {
		errs = append(errs, s.Close())
		delete(r.sessions, name)
	}
	return errors.Join(errs...)
}

// headers adds a server's configured headers to every request.
type headers struct {
	h    map[string]string
	next http.RoundTripper
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}

func (r *Remote) session(ctx context.Context, s config.MCPServer) (*sdk.ClientSession, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cs, ok := r.sessions[s.Name]; ok {
		return cs, nil
	}
	var t sdk.Transport
	if s.URL != "" {
		h := map[string]string{}
		for k, v := range s.Headers {
			if name, ok := strings.CutPrefix(v, "env:"); ok {
				if v = r.o.Getenv(name); v == "" {
					return nil, rag.Errorf("mcpclient", rag.KindUnavailable, "server %s: header %s names %s, which is not set", s.Name, k, name)
				}
			}
			h[k] = v
		}
		hc := *r.client
		hc.Transport = headers{h: h, next: r.client.Transport} // netx.NewClient always sets its own
		t = &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &hc, MaxRetries: -1, DisableStandaloneSSE: true,
			MaxEventSize: int(r.o.MaxBytes)}
	} else {
		t = &sdk.CommandTransport{Command: exec.Command(s.Command[0], s.Command[1:]...)}
	}
	cctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "docmind-agent", Version: "1"}, nil)
	cs, err := c.Connect(cctx, t, nil)
	if err != nil {
		return nil, rag.E("mcpclient", rag.KindUnavailable, fmt.Errorf("connect to %s: %w", s.Name, err))
	}
	r.sessions[s.Name] = cs
	return cs, nil
}

func (r *Remote) drop(name string, cs *sdk.ClientSession) {
	r.mu.Lock()
	if r.sessions[name] == cs {
		delete(r.sessions, name)
	}
	r.mu.Unlock()
	cs.Close()
}

// toolDescRunes bounds a remote tool's description in the agent's prompt.
const toolDescRunes = 300

// Tools lists the allowed tools of every reachable server, named "<server>__<tool>", their descriptions
// neutralised like any retrieved text (a server's description is untrusted: "tool poisoning").
func (r *Remote) Tools(ctx context.Context) []llm.Tool {
	var out []llm.Tool
	for _, s := range r.servers {
		cs, err := r.session(ctx, s)
		if err != nil {
			r.o.Logger.Warn("mcp server unavailable to the agent", "server", s.Name, "err", err)
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
		for t, err := range cs.Tools(lctx, nil) {
			if err != nil {
				r.o.Logger.Warn("listing an mcp server's tools failed", "server", s.Name, "err", err)
				r.drop(s.Name, cs)
				break
			}
			if !slices.Contains(s.Tools, t.Name) {
				continue
			}
			params, err := json.Marshal(t.InputSchema)
			if err != nil || t.InputSchema == nil {
				params = []byte(`{"type":"object"}`)
			}
			desc, _ := answer.Neutralise(truncateRunes(oneLine(t.Description), toolDescRunes))
			out = append(out, llm.Tool{Name: s.Name + "__" + t.Name, Description: fmt.Sprintf("%s (tool %s of %s): %s", t.Title, t.Name, s.Name, desc),
				Parameters: params})
		}
		cancel()
	}
	return out
}

// Call runs "<server>__<tool>" with args, within the timeout; the result's text content, at most
// MaxBytes (larger is an Invalid error: the HTTP client stops reading there too). A result the server
// marks as an error is Unavailable, its text withheld from the model (it is the server's, untrusted).
func (r *Remote) Call(ctx context.Context, name string, args json.RawMessage) (answer.RemoteResult, error) {
	const op = "mcpclient"
	server, tool, _ := strings.Cut(name, "__")
	i := slices.IndexFunc(r.servers, func(s config.MCPServer) bool { return s.Name == server })
	if i < 0 || !slices.Contains(r.servers[i].Tools, tool) {
		return answer.RemoteResult{}, rag.Errorf(op, rag.KindInvalid, "no tool %q", name)
	}
	s := r.servers[i]
	res := answer.RemoteResult{Server: s.Name, Tool: tool}
	cs, err := r.session(ctx, s)
	if err != nil {
		return res, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	out, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		if ctx.Err() == nil {
			r.drop(s.Name, cs) // a broken stream or a process that died: open afresh next time
		}
		// a response over MaxBytes ends here too: the HTTP client stops reading it, and the SDK reports a
		// request that ended without a response
		return res, rag.E(op, rag.KindUnavailable, fmt.Errorf("call %s: %w", name, err))
	}
	if out.IsError {
		r.o.Logger.Info("mcp tool reported an error", "tool", name, "text", errorText(out))
		return res, rag.Errorf(op, rag.KindUnavailable, "%s reported an error", name)
	}
	var b strings.Builder
	for _, c := range out.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
		if int64(b.Len()) > r.o.MaxBytes { // a command's server is not behind the HTTP client's cap
			return res, rag.Errorf(op, rag.KindInvalid, "the result of %s is larger than %d bytes", name, r.o.MaxBytes)
		}
	}
	if b.Len() == 0 && out.StructuredContent != nil {
		sc, _ := json.Marshal(out.StructuredContent)
		if int64(len(sc)) > r.o.MaxBytes {
			return res, rag.Errorf(op, rag.KindInvalid, "the result of %s is larger than %d bytes", name, r.o.MaxBytes)
		}
		b.Write(sc)
	}
	res.Text = b.String()
	return res, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func errorText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(truncateRunes(oneLine(tc.Text), 200))
		}
	}
	return b.String()
}
