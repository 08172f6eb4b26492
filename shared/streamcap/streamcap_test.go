package streamcap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
)

// gappy sends its pieces with a pause before each, and honours cancellation as a real client does.
type gappy struct {
	pieces []string
	gap    time.Duration
}

func (g gappy) Stream(ctx context.Context, _ llm.Request, on func(string) error) (llm.Usage, error) {
	for _, p := range g.pieces {
		select {
		case <-time.After(g.gap):
		case <-ctx.Done():
			return llm.Usage{}, rag.E("fake", rag.KindUnavailable, ctx.Err())
		}
		if err := on(p); err != nil {
			return llm.Usage{}, err
		}
	}
	return llm.Usage{CompletionTokens: len(g.pieces)}, nil
}

func TestIdleGap(t *testing.T) {
	// every gap (20 ms) is under the cap (1 s), though the whole stream is longer than one cap would allow
	// if it were a wall-time limit: 60 pieces x 20 ms = 1.2 s
	pieces := make([]string, 60)
	for i := range pieces {
		pieces[i] = "w "
	}
	var got int
	u, err := (&IdleGap{Next: gappy{pieces, 20 * time.Millisecond}, Gap: time.Second}).Stream(context.Background(), llm.Request{}, func(string) error { got++; return nil })
	if err != nil || got != 60 || u.CompletionTokens != 60 {
		t.Fatalf("steady model: %d pieces, %v", got, err)
	}
	// a model silent for an hour is ended after the cap, with the cap's own error
	start := time.Now()
	_, err = (&IdleGap{Next: gappy{[]string{"a", "b"}, time.Hour}, Gap: 50 * time.Millisecond}).Stream(context.Background(), llm.Request{}, func(string) error { return nil })
	if !rag.Is(err, rag.KindUnavailable) || time.Since(start) > 10*time.Second {
		t.Fatalf("silent model: %v after %v", err, time.Since(start))
	}
	if want := "the model sent nothing for 50ms"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func TestReserve(t *testing.T) {
	var got time.Time
	var had bool
	h := Reserve(3*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got, had = r.Context().Deadline() }))
	deadline := time.Now().Add(10 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	if !had || !got.Equal(deadline.Add(-3*time.Second)) {
		t.Errorf("deadline %v (%v), want 3 s before %v", got, had, deadline)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if had {
		t.Errorf("a request without a deadline got one: %v", got)
	}
}
