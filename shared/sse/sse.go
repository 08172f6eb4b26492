// Package sse writes docmind's chat event stream (DESIGN.md section 7): Server-Sent Events, each
// "event: NAME" plus one "data: JSON" line, flushed as it is written. The first event is always
// meta {"protocol":1}. JSON never contains a raw newline, so a hostile string cannot forge an event.
package sse

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Protocol is the stream's version, sent in the meta event.
const Protocol = 1

var eventName = regexp.MustCompile(`^[a-z][a-z_]{0,31}$`)

// Writer emits events on an HTTP response. Safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	closed bool
	start  time.Time
	// Events records every event written (the persisted trace is the same sequence).
	Events []Event
}

// Meta is the first event's payload: the protocol version a client checks before reading on.
type Meta struct {
	Protocol int `json:"protocol"`
}

// Event is one emitted event.
type Event struct {
	Name string          `json:"event"`
	Data json.RawMessage `json:"data"`
	// At is when the event was sent, from the start of the stream: the span timeline of the request
	// (logged, not part of the event's JSON).
	At time.Duration `json:"-"`
}

// Start sets the SSE headers, writes the meta event and returns the writer.
func Start(w http.ResponseWriter) (*Writer, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &Writer{w: w, rc: http.NewResponseController(w), start: time.Now()}
	return s, s.Send("meta", Meta{Protocol: Protocol})
}

// Send writes one event and flushes it. The lambdaurl writer cannot flush; that is not an error.
func (s *Writer) Send(name string, v any) error {
	if !eventName.MatchString(name) {
		return fmt.Errorf("sse: bad event name %q", name)
	}
	data, err := Encode(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("sse: stream closed")
	}
	s.Events = append(s.Events, Event{Name: name, Data: data, At: time.Since(s.start)})
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		s.closed = true
		return err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.closed = true
		return err
	}
	return nil
}

// Encode marshals v as single-line JSON with HTML escaped (the data line of an event).
func Encode(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v) // json.Marshal escapes control characters, so no newline survives
	if err != nil {
		return nil, fmt.Errorf("sse: encode: %w", err)
	}
	return b, nil
}

// Spans renders the events' timeline as "name@ms" pairs in order (runs of tokens fold into the first
// and the last), for one log line per stream.
func Spans(events []Event) string {
	var b strings.Builder
	for i, e := range events {
		if e.Name == "token" && i > 0 && i < len(events)-1 && events[i-1].Name == "token" && events[i+1].Name == "token" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s@%d", e.Name, e.At.Milliseconds())
	}
	return b.String()
}
