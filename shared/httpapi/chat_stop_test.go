package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
)

// stallingChat sends start and two tokens, then waits for the request to end (a model still writing
// when the user presses stop).
type stallingChat struct{}

func (stallingChat) Check(answer.Request) error { return nil }

func (stallingChat) Run(ctx context.Context, _ answer.Request, emit answer.Emit) (*answer.Done, error) {
	src := []answer.Source{{N: 1, DocumentID: "doc_1", FileName: "handbook.docx"}}
	if err := emit(answer.EventStart, answer.StartEvent{Path: "STANDARD", Sources: src}); err != nil {
		return nil, err
	}
	for _, w := range []string{"Full-time employees ", "get 20 days [1]"} {
		if err := emit(answer.EventToken, answer.TokenEvent{Text: w}); err != nil {
			return nil, err
		}
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestChatStopKeepsWhatArrived: a client that hangs up mid-answer (the page's stop) leaves the answer as
// far as it was sent stored, with its trace closed by a done marked partial and stopped, so that the
// reopened conversation shows it.
func TestChatStopKeepsWhatArrived(t *testing.T) {
	f := newChatFixtureWith(t, true, func(d *Deps) { d.Chat = stallingChat{} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/api/chat", strings.NewReader(`{"question":"How many days of annual leave?","kbs":["handbook"]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// read until the second token has arrived, then stop
	sc := bufio.NewScanner(resp.Body)
	tokens := 0
	for tokens < 2 && sc.Scan() {
		if sc.Text() == "event: token" {
			tokens++
		}
	}
	if tokens < 2 {
		t.Fatalf("the stream ended before two tokens: %v", sc.Err())
	}
	cancel()
	resp.Body.Close()

	var conv []rag.Conversation
	var msgs []rag.Message
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var err error
		if conv, err = f.conversations(); err == nil && len(conv) == 1 {
			if msgs, err = f.messages(conv[0].ID); err == nil && len(msgs) == 2 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(msgs) != 2 || msgs[1].Role != "assistant" {
		t.Fatalf("messages %+v: the stopped answer must be stored after the question", msgs)
	}
	// the response named the conversation before the answer (the page adopts a stopped one by it)
	if got := resp.Header.Get("X-Docmind-Conversation"); got != conv[0].ID {
		t.Fatalf("X-Docmind-Conversation %q, want the conversation %q", got, conv[0].ID)
	}
	m := msgs[1]
	if m.Content != "Full-time employees get 20 days [1]" {
		t.Fatalf("stored answer %q, want the text that was sent", m.Content)
	}
	var trace []struct {
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(m.Trace, &trace); err != nil || len(trace) == 0 {
		t.Fatalf("trace %s: %v", m.Trace, err)
	}
	last := trace[len(trace)-1]
	var done struct {
		Answer  string          `json:"answer"`
		Sources []answer.Source `json:"sources"`
		Path    string          `json:"path"`
		Partial bool            `json:"partial"`
		Stopped bool            `json:"stopped"`
	}
	if last.Event != "done" || json.Unmarshal(last.Data, &done) != nil {
		t.Fatalf("the trace ends with %s %s, want done", last.Event, last.Data)
	}
	if !done.Partial || !done.Stopped || done.Answer != m.Content || done.Path != "STANDARD" || len(done.Sources) != 1 || done.Sources[0].FileName != "handbook.docx" {
		t.Fatalf("closing done %+v", done)
	}
	names := make([]string, len(trace))
	for i, e := range trace {
		names[i] = e.Event
	}
	if got := strings.Join(names, ","); got != "meta,start,token,token,done" {
		t.Fatalf("trace events %s", got)
	}
}

// conversations and messages read the caller's history through the API, as the page does.
func (f *chatFixture) conversations() ([]rag.Conversation, error) {
	var out struct {
		Conversations []rag.Conversation `json:"conversations"`
	}
	return out.Conversations, f.getJSON("/api/conversations", &out)
}

func (f *chatFixture) messages(id string) ([]rag.Message, error) {
	var out struct {
		Messages []rag.Message `json:"messages"`
	}
	return out.Messages, f.getJSON("/api/conversations/"+id+"/messages", &out)
}

func (f *chatFixture) getJSON(path string, v any) error {
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
