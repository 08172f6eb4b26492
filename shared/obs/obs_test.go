package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/docmind/docmind/shared/llm"
)

func TestWithTraceID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"event: done\ndata: {\"answer\":\"x\"}\n\n", "event: done\ndata: {\"trace_id\":\"abc\",\"answer\":\"x\"}\n\n"},
		{"event: done\ndata: {}\n\n", "event: done\ndata: {\"trace_id\":\"abc\"}\n\n"},
	} {
		got, ok := withTraceID([]byte(c.in), "abc")
		if !ok || string(got) != c.want {
			t.Errorf("%q -> %q, want %q", c.in, got, c.want)
		}
	}
	if _, ok := withTraceID([]byte("event: done\ndata: null\n\n"), "abc"); ok {
		t.Error("a non-object done was rewritten")
	}
}

type fakeModel struct{}

func (fakeModel) CallTools(context.Context, llm.Request, []llm.Tool) (llm.Reply, error) {
	return llm.Reply{ToolCalls: []llm.ToolCall{{Name: "search"}}, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}, nil
}

func (fakeModel) Stream(_ context.Context, _ llm.Request, on func(string) error) (llm.Usage, error) {
	on("hi")
	return llm.Usage{PromptTokens: 1000, CompletionTokens: 200}, nil
}

// TestSpans: a request span, one span per step event, a model-call span with tokens and cost, the
// trace id in the done event, the response header and the log line;
func TestSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := Setup(context.Background(), Options{Service: "t", Exporter: exp}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(tr.LogHandler(slog.NewJSONHandler(&logs, nil)))
	model := &Streamer{Next: fakeModel{}, Tracer: tr.Tracer(), PriceIn: 1, PriceOut: 10}
	h := tr.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{"meta", "retrieval", "rerank", "token", "token"} {
			w.Write([]byte("event: " + e + "\ndata: {}\n\n"))
		}
		model.Stream(r.Context(), llm.Request{Model: "gpt-x"}, func(string) error { return nil })
		(&ToolCaller{Next: fakeModel{}, Tracer: tr.Tracer()}).CallTools(r.Context(), llm.Request{Model: "agent-y"}, nil)
		log.Info("chat")
		w.Write([]byte("event: done\ndata: {\"answer\":\"a\"}\n\n"))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/api/chat", nil))
	id := rec.Header().Get("X-Trace-Id")
	if len(id) != 32 || !strings.Contains(rec.Body.String(), `data: {"trace_id":"`+id+`","answer":"a"}`) {
		t.Fatalf("trace id %q, body %s", id, rec.Body.String())
	}
	var line map[string]any
	json.Unmarshal(logs.Bytes(), &line)
	if line["trace_id"] != id {
		t.Errorf("log line %s, want trace_id %s", logs.String(), id)
	}
	got := map[string]map[string]any{}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() != id {
			t.Errorf("span %s in another trace", s.Name)
		}
		attrs := map[string]any{}
		for _, a := range s.Attributes {
			attrs[string(a.Key)] = a.Value.AsInterface()
		}
		got[s.Name] = attrs
	}
	for _, want := range []string{"POST /api/chat", "docmind.step.retrieval", "docmind.step.rerank", "docmind.step.done", "chat gpt-x", "chat agent-y"} {
		if _, ok := got[want]; !ok {
			t.Errorf("no span %q in %v", want, got)
		}
	}
	if m := got["chat gpt-x"]; m["gen_ai.usage.input_tokens"] != int64(1000) || m["docmind.cost_usd"] != 0.003 {
		t.Errorf("model span attributes %v, want 1000 input tokens and $0.003", m)
	}
	if m := got["chat agent-y"]; m["docmind.tool_calls"] != int64(1) || m["gen_ai.usage.output_tokens"] != int64(2) {
		t.Errorf("agent span attributes %v", m)
	}
	if got["docmind.step.done"]["docmind.sse.tokens"] != int64(2) {
		t.Errorf("done span %v, want 2 tokens", got["docmind.step.done"])
	}
}

// TestNoExporter: without an endpoint nothing is recorded, but ids still exist for logs and done.
func TestNoExporter(t *testing.T) {
	tr, err := Setup(context.Background(), Options{Service: "t"}, func(string) string { return "" })
	if err != nil || tr.Exported() {
		t.Fatalf("%v exported=%v", err, tr.Exported())
	}
	ctx, span := tr.Tracer().Start(context.Background(), "x")
	defer span.End()
	if span.IsRecording() || len(TraceID(ctx)) != 32 {
		t.Errorf("recording %v, id %q; want not recording with an id", span.IsRecording(), TraceID(ctx))
	}
}

// TestXRayHeader: a request carrying X-Amzn-Trace-Id (the Function URL and API Gateway add one) is
// served in that trace: its spans and the X-Trace-Id header carry the X-Ray root as a 32-hex trace id,
// and X-Ray wins over a traceparent on the same request. A request without headers continues the
// Lambda invocation's trace header from its context (Step Functions, Invoke).
func TestXRayHeader(t *testing.T) {
	const root, want = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", "5759e988bd862e3fe1be46a994272793"
	const w3c = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, c := range []struct {
		name    string
		headers map[string]string
		lambda  string
		want    string
	}{
		{"x-ray", map[string]string{"X-Amzn-Trace-Id": root}, "", want},
		{"x-ray over w3c", map[string]string{"X-Amzn-Trace-Id": root, "Traceparent": w3c}, "", want},
		{"w3c alone", map[string]string{"Traceparent": w3c}, "", "0af7651916cd43dd8448eb211c80319c"},
		{"lambda context", nil, root, want},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tr, err := Setup(context.Background(), Options{Service: "t", Exporter: exp}, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			var inner string
			h := tr.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { inner = TraceID(r.Context()) }))
			req := httptest.NewRequest("POST", "/api/chat", nil)
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			if c.lambda != "" {
				req = req.WithContext(context.WithValue(req.Context(), lambdaTraceKey, c.lambda)) //nolint:staticcheck // aws-lambda-go's own key
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if got := rec.Header().Get("X-Trace-Id"); got != c.want || inner != c.want {
				t.Errorf("X-Trace-Id %q, handler's trace %q; want %q", got, inner, c.want)
			}
			spans := exp.GetSpans()
			if len(spans) == 0 || spans[0].SpanContext.TraceID().String() != c.want {
				t.Errorf("spans %v, want trace %s", spans, c.want)
			}
		})
	}
}

// TestPropagatorWritesBoth: what a function sends on (Invoke, StartExecution) carries the trace in
// both formats, and reading it back gives the same trace id.
func TestPropagatorWritesBoth(t *testing.T) {
	p := Propagator()
	ctx := p.Extract(context.Background(), propagation.MapCarrier{"X-Amzn-Trace-Id": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"})
	out := propagation.MapCarrier{}
	p.Inject(ctx, out)
	if !strings.HasPrefix(out.Get("X-Amzn-Trace-Id"), "Root=1-5759e988-bd862e3fe1be46a994272793;") ||
		!strings.Contains(out.Get("traceparent"), "5759e988bd862e3fe1be46a994272793") {
		t.Errorf("injected %v, want both headers with the trace id", out)
	}
}
