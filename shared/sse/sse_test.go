package sse

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestStream(t *testing.T) {
	rec := httptest.NewRecorder()
	w, err := Start(rec)
	if err != nil {
		t.Fatal(err)
	}
	w.Send("token", map[string]string{"text": "line one\nevent: done\ndata: {}\n\n"})
	w.Send("done", map[string]bool{"ok": true})
	if err := w.Send("Bad Name", 1); err == nil {
		t.Fatal("bad event name accepted")
	}
	if rec.Header().Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatal(rec.Header())
	}
	var events []string
	sc := bufio.NewScanner(strings.NewReader(rec.Body.String()))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: ") {
			events = append(events, strings.TrimPrefix(sc.Text(), "event: "))
		}
	}
	if strings.Join(events, ",") != "meta,token,done" || len(w.Events) != 3 {
		t.Fatalf("events %v (a forged event inside data must not appear)", events)
	}
}

// FuzzSSEEncoder: whatever string goes in, each event is exactly two lines and the data line is valid
// JSON that decodes back to the same string.
func FuzzSSEEncoder(f *testing.F) {
	for _, s := range []string{"", "a\nb", "event: x\n\ndata: y", "\r\n\u2028\u2029", "<script>", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		rec := httptest.NewRecorder()
		w, _ := Start(rec)
		if err := w.Send("token", map[string]string{"text": s}); err != nil {
			t.Fatal(err)
		}
		body := rec.Body.String()
		if n := strings.Count(body, "\n\n"); n != 2 {
			t.Fatalf("%d event separators for 2 events: %q", n, body)
		}
		var eventLines, dataLines int
		for _, line := range strings.Split(body, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				eventLines++
			case strings.HasPrefix(line, "data: "):
				dataLines++
				var v map[string]any
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v); err != nil {
					t.Fatalf("data line is not JSON: %q: %v", line, err)
				}
				if text, ok := v["text"]; ok && text != s {
					t.Fatalf("data decodes to %q, sent %q", text, s)
				}
			case line != "":
				t.Fatalf("stray line %q in %q", line, body)
			}
		}
		if eventLines != 2 || dataLines != 2 {
			t.Fatalf("forged event: %d event lines, %d data lines in %q", eventLines, dataLines, body)
		}
	})
}

func TestSpans(t *testing.T) {
	ev := func(name string, ms int) Event { return Event{Name: name, At: time.Duration(ms) * time.Millisecond} }
	got := Spans([]Event{ev("meta", 0), ev("understanding", 120), ev("start", 300), ev("token", 310), ev("token", 320), ev("token", 330), ev("token", 900), ev("done", 905)})
	if want := "meta@0 understanding@120 start@300 token@310 token@900 done@905"; got != want {
		t.Fatalf("Spans = %q, want %q", got, want)
	}
	// The recorded times are the send times, in order, and never in the JSON.
	w, _ := Start(httptest.NewRecorder())
	w.Send("done", map[string]int{})
	b, _ := json.Marshal(w.Events)
	if w.Events[1].At < w.Events[0].At || strings.Contains(string(b), "At") || string(b) != `[{"event":"meta","data":{"protocol":1}},{"event":"done","data":{}}]` {
		t.Fatalf("events %s", b)
	}
}
