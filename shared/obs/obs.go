// Package obs is docmind's tracing at the edges: an OpenTelemetry span per HTTP request, one per
// pipeline step (cut from the chat stream's own events, so the answer pipeline needs no tracing code)
// and one per model call (model, tokens, cost). Spans are exported over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise nothing is recorded or sent, but every request still
// gets a trace id (W3C traceparent and AWS X-Ray's X-Amzn-Trace-Id honoured), which LogHandler puts in every log line and the stream
// wrapper puts in the done event.
package obs

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/docmind/docmind/shared/rag"
)

// Tracing owns the tracer of one process.
type Tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	exported bool
	prop     propagation.TextMapPropagator
	// current is the trace id of the request in flight, for log calls made without a context. A Lambda
	// execution environment serves one invocation at a time, so it is exact there; under concurrency
	// (docmind serve) a log call's own context wins when it carries a span.
	current atomic.Pointer[string]
}

// Options configure Setup.
type Options struct {
	Service, Version string
	// Exporter replaces the OTLP/HTTP exporter (tests pass an in-memory one).
	Exporter sdktrace.SpanExporter
}

// Setup returns the process's tracing: an OTLP/HTTP exporter when OTEL_EXPORTER_OTLP_ENDPOINT is set
// (the exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself), otherwise ids only.
func Setup(ctx context.Context, o Options, getenv func(string) string) (*Tracing, error) {
	exp := o.Exporter
	if exp == nil && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		var err error
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return nil, rag.E("obs.Setup", rag.KindInvalid, err)
		}
	}
	res := resource.NewSchemaless(attribute.String("service.name", o.Service), attribute.String("service.version", o.Version))
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if exp != nil {
		// A Lambda is frozen between invocations: Flush at the end of each request sends the batch.
		opts = append(opts, sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)))
	} else {
		// Not sampled: spans carry fresh ids but record nothing.
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return &Tracing{provider: tp, tracer: tp.Tracer("github.com/docmind/docmind"), exported: exp != nil,
		prop: Propagator()}, nil
}

// Propagator reads and writes both trace headers: W3C traceparent and AWS X-Ray's X-Amzn-Trace-Id.
// X-Ray's comes last, so it wins when a request carries both: on AWS the Function URL, Lambda's Invoke
// API and Step Functions all pass X-Amzn-Trace-Id, and a question is one trace in X-Ray only if every
// function continues that one. Without it (docmind serve, a browser's traceparent) W3C is honoured.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, xray.Propagator{})
}

// Propagator is the propagator t extracts with: the one for outgoing calls too. A nil t has none.
func (t *Tracing) Propagator() propagation.TextMapPropagator {
	if t == nil {
		return nil
	}
	return t.prop
}

// Exported reports whether spans leave the process.
func (t *Tracing) Exported() bool { return t.exported }

// Tracer is the tracer spans are started with.
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// Flush sends the spans ended so far (call before a Lambda invocation returns).
func (t *Tracing) Flush(ctx context.Context) error { return t.provider.ForceFlush(ctx) }

// Shutdown flushes and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// TraceID returns the trace id of ctx's span, or "" when it has none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// Middleware starts a server span per request (continuing an X-Amzn-Trace-Id or a W3C traceparent), sets the X-Trace-Id
// response header, makes the trace id current for logging, cuts one span per pipeline step from an
// event stream and adds trace_id to its done event, and flushes the spans when the request ends.
func (t *Tracing) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := t.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.tracer.Start(ctx, r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		id := TraceID(ctx)
		t.current.Store(&id)
		w.Header().Set("X-Trace-Id", id)
		sw := &streamWriter{ResponseWriter: w, ctx: ctx, tracer: t.tracer, traceID: id, stepStart: time.Now(), status: http.StatusOK}
		defer func() {
			span.SetAttributes(attribute.Int("http.response.status_code", sw.status), attribute.Int("docmind.sse.tokens", sw.tokens))
			span.End()
			empty := ""
			t.current.Store(&empty)
			if t.exported {
				fctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
				_ = t.Flush(fctx)
				cancel()
			}
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// lambdaTraceKey is the context key under which aws-lambda-go puts the invocation's X-Ray trace header
// (Lambda-Runtime-Trace-Id; it also sets _X_AMZN_TRACE_ID). The library uses this plain string key.
const lambdaTraceKey = "x-amzn-trace-id"

// LambdaTraceHeader is the X-Ray trace header of the Lambda invocation ctx belongs to ("" outside
// one): what a function passes on to an execution it starts (StartExecution's TraceHeader) when it
// serves no HTTP request.
func LambdaTraceHeader(ctx context.Context) string {
	h, _ := ctx.Value(lambdaTraceKey).(string)
	return h
}

// Extract returns ctx continuing the trace in carrier (X-Amzn-Trace-Id or traceparent); when carrier has
// none, the Lambda invocation's own trace header (what Step Functions and the Invoke API passed), so a
// function invoked without HTTP headers still joins its caller's trace.
func (t *Tracing) Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	out := t.prop.Extract(ctx, carrier)
	if trace.SpanContextFromContext(out).IsRemote() {
		return out
	}
	if h := LambdaTraceHeader(ctx); h != "" {
		return t.prop.Extract(ctx, propagation.MapCarrier{"X-Amzn-Trace-Id": h})
	}
	return out
}

// LogHandler adds trace_id to every record: the span of the log call's context, else the request in
// flight.
func (t *Tracing) LogHandler(next slog.Handler) slog.Handler { return &logHandler{next: next, t: t} }

type logHandler struct {
	next slog.Handler
	t    *Tracing
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *logHandler) Handle(ctx context.Context, rec slog.Record) error {
	id := TraceID(ctx)
	if id == "" {
		if p := h.t.current.Load(); p != nil {
			id = *p
		}
	}
	if id != "" {
		rec = rec.Clone()
		rec.AddAttrs(slog.String("trace_id", id))
	}
	return h.next.Handle(ctx, rec)
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{next: h.next.WithAttrs(as), t: h.t}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{next: h.next.WithGroup(name), t: h.t}
}
