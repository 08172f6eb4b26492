package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/llm/llmtest"
)

// The meter counts every call of a request: reported usage when the provider sent it, an estimate from
// the text when the stream was cut before its usage chunk (the client's stop button), tool calls too.
func TestMeterCountsEveryCall(t *testing.T) {
	long := "Project Falcon's launch code word is written in the handbook on page twelve of the second part."
	fake := llmtest.New(t, func(c llmtest.Call) llmtest.Reply {
		switch c.Last() {
		case "stop me":
			return llmtest.Reply{Content: long, Gap: 20 * time.Millisecond}
		case "tools":
			return llmtest.Reply{Content: "ok"}
		case "refused 401":
			return llmtest.Reply{Status: 401}
		case "refused 400":
			return llmtest.Reply{Status: 400}
		case "refused 500":
			return llmtest.Reply{Status: 500}
		}
		return llmtest.Reply{Content: "a short answer"}
	})
	o := NewOpenAI(fake.URL, "sk-test", nil)
	req := func(q string) Request {
		return Request{Model: "m", Messages: []Message{{Role: "system", Content: "You answer."}, {Role: "user", Content: q}}}
	}
	nop := func(string) error { return nil }

	t.Run("reported", func(t *testing.T) {
		m := &Meter{}
		if _, err := o.Stream(WithMeter(context.Background(), m), req("full"), nop); err != nil {
			t.Fatal(err)
		}
		if got := m.Tokens(); got != 110 { // llmtest reports 100 + 10 per stream
			t.Errorf("a finished stream: %d tokens, want the reported 110", got)
		}
		if _, err := o.CallTools(WithMeter(context.Background(), m), req("tools"), nil); err != nil {
			t.Fatal(err)
		}
		if got := m.Tokens(); got != 110+55 {
			t.Errorf("plus a tool call: %d tokens, want 165", got)
		}
	})
	t.Run("stopped by the caller", func(t *testing.T) {
		m := &Meter{}
		ctx, cancel := context.WithCancel(WithMeter(context.Background(), m))
		defer cancel()
		n := 0
		_, err := o.Stream(ctx, req("stop me"), func(string) error {
			if n++; n == 4 {
				return errors.New("stop") // what a gone client's write error does
			}
			return nil
		})
		if err == nil {
			t.Fatal("a stopped stream returned no error")
		}
		// no usage chunk arrived: the prompt and the four words received are estimated
		if got := m.Tokens(); got < 5 || got >= 110 {
			t.Errorf("a stream stopped after 4 words: %d tokens, want an estimate between 5 and 110", got)
		}
	})
	t.Run("refused by the provider", func(t *testing.T) {
		// a call the provider refused before generating anything was not billed: a wrong key or an outage
		// must not use up users' budgets while they get the offline answer
		o := NewOpenAI(fake.URL, "sk-test", nil)
		o.RetryDelay = time.Millisecond
		for _, q := range []string{"refused 401", "refused 400", "refused 500"} {
			m := &Meter{}
			if _, err := o.Stream(WithMeter(context.Background(), m), req(q), nop); err == nil {
				t.Fatalf("%s: no error", q)
			}
			if got := m.Tokens(); got != 0 {
				t.Errorf("%s: %d tokens charged, want 0", q, got)
			}
		}
	})
	t.Run("accepted, then broken before any text", func(t *testing.T) {
		// the provider took the call (200, the stream began) and bills it, though no text arrived before
		// the stream broke: estimated from the prompt, for each attempt
		broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n")
			io.WriteString(w, "data: {not json\n\n")
		}))
		defer broken.Close()
		o := NewOpenAI(broken.URL, "sk-test", nil)
		o.RetryDelay = time.Millisecond
		m := &Meter{}
		if _, err := o.Stream(WithMeter(context.Background(), m), req("a question the provider began"), nop); err == nil {
			t.Fatal("a broken stream returned no error")
		}
		if got := m.Tokens(); got < 5 {
			t.Errorf("an accepted call that broke before any text: %d tokens charged, want the prompt's estimate", got)
		}
	})
	t.Run("no meter, nothing kept", func(t *testing.T) {
		if _, err := o.Stream(context.Background(), req("full"), nop); err != nil {
			t.Fatal(err)
		}
		var m *Meter
		if m.Tokens() != 0 {
			t.Error("a nil meter counts")
		}
	})
}
