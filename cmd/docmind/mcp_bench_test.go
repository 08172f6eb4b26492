package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkAsk compares one question answered through POST /api/ask with the same question through the
// MCP ask tool over Streamable HTTP (one client session, a progress token on every call), on the demo
// with the offline pipeline and the semantic cache off, so that every iteration runs the pipeline. The
// MCP run also reports the time from the call to its first progress notification (first-progress-ms).
// The difference of the two ns/op is MCP's overhead (JSON-RPC framing, the per-request server, schema
// validation of the output, the event stream).
//
//	go test -run '^$' -bench BenchmarkAsk -benchtime 30x ./cmd/docmind
func BenchmarkAsk(b *testing.B) {
	_, base := startServer(b, func(m *Main) { m.Config.Chat.CacheEnabled = false })
	waitDemo(b, base)
	question := "How many days of paid annual leave do full-time employees get?"
	b.Run("api", func(b *testing.B) {
		body, _ := json.Marshal(map[string]any{"question": question, "kbs": []string{"demo"}})
		for b.Loop() {
			resp, err := http.Post(base+"/api/ask", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	b.Run("mcp", func(b *testing.B) {
		c := httpMCP(b, base, "")
		var first time.Duration
		n := 0
		for b.Loop() {
			before := c.progress.Load()
			start := time.Now()
			p := &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"question": question, "kbs": []string{"demo"}}}
			p.SetProgressToken("bench")
			res, err := c.CallTool(b.Context(), p)
			if err != nil || res.IsError {
				b.Fatalf("ask: %v %+v", err, res)
			}
			if c.progress.Load() > before {
				first += time.Duration(c.firstAt.Load() - start.UnixNano())
				n++
			}
			c.progress.Store(0) // the next call's first notification sets firstAt again
		}
		if n > 0 {
			b.ReportMetric(float64(first.Microseconds())/float64(n)/1000, "first-progress-ms")
		}
	})
}
