package obs

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// streamWriter watches a response for Server-Sent Events. The chat stream writes one whole frame per
// Write ("event: NAME\ndata: JSON\n\n", shared/sse), so each Write is one event: a pipeline step's span
// ends when the step's event is sent (it started when the previous non-token event was), and the done
// event gains "trace_id" as its first field. Any other response passes through untouched.
type streamWriter struct {
	http.ResponseWriter
	ctx       context.Context
	tracer    trace.Tracer
	traceID   string
	status    int
	wrote     bool
	stepStart time.Time
	tokens    int
}

// Unwrap lets http.ResponseController reach the real writer (Flush, write deadlines).
func (s *streamWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *streamWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

var (
	eventPrefix = []byte("event: ")
	dataPrefix  = []byte("\ndata: {")
)

func (s *streamWriter) Write(p []byte) (int, error) {
	s.wrote = true
	name := eventName(p)
	if name == "" {
		return s.ResponseWriter.Write(p)
	}
	switch name {
	case "token":
		s.tokens++
	case "meta":
		s.stepStart = time.Now()
	default:
		s.step(name)
	}
	if name == "done" && s.traceID != "" {
		if out, ok := withTraceID(p, s.traceID); ok {
			if _, err := s.ResponseWriter.Write(out); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return s.ResponseWriter.Write(p)
}

// step records the span of the step that the event name closes.
func (s *streamWriter) step(name string) {
	now := time.Now()
	_, span := s.tracer.Start(s.ctx, "docmind.step."+name, trace.WithTimestamp(s.stepStart))
	if name == "done" || name == "error" {
		span.SetAttributes(attribute.Int("docmind.sse.tokens", s.tokens))
	}
	span.End(trace.WithTimestamp(now))
	s.stepStart = now
}

// eventName returns the event name of an SSE frame, or "".
func eventName(p []byte) string {
	if !bytes.HasPrefix(p, eventPrefix) {
		return ""
	}
	rest := p[len(eventPrefix):]
	i := bytes.IndexByte(rest, '\n')
	if i <= 0 || i > 32 {
		return ""
	}
	return string(rest[:i])
}

// withTraceID inserts "trace_id" as the first field of the frame's JSON object.
func withTraceID(p []byte, id string) ([]byte, bool) {
	i := bytes.Index(p, dataPrefix)
	if i < 0 {
		return nil, false
	}
	at := i + len(dataPrefix)
	field := `"trace_id":"` + id + `"`
	if at < len(p) && p[at] != '}' {
		field += ","
	}
	out := make([]byte, 0, len(p)+len(field))
	out = append(out, p[:at]...)
	out = append(out, field...)
	return append(out, p[at:]...), true
}
