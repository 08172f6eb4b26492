package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/sse"
	"github.com/docmind/docmind/shared/store/sqlite"
)

type scopeRecorder struct{ got []retrieve.Query }

func (s *scopeRecorder) Retrieve(_ context.Context, q retrieve.Query) (*retrieve.Result, error) {
	s.got = append(s.got, q)
	if strings.Contains(q.Text, "panic") {
		panic("retriever bug: index out of range")
	}
	if strings.Contains(q.Text, "explode") {
		return nil, rag.Errorf("retrieve", rag.KindUnavailable, "dial tcp 10.0.0.7:19530: secret internal detail")
	}
	kb := "kb_all"
	if len(q.Filter.KBIDs) > 0 {
		kb = q.Filter.KBIDs[0]
	}
	return &retrieve.Result{Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.9},
		Evidence: []rank.Evidence{{ChunkID: "c1", DocumentID: "doc_1", KBID: kb, FileName: "handbook.docx",
			Text: "Full-time employees receive 20 days of paid annual leave per year.", Score: 0.9}}}, nil
}

type sseEvent struct {
	name string
	data json.RawMessage
}

func readSSE(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		case line == "":
			out = append(out, cur)
			cur = sseEvent{}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return out
}

// chatFixture serves the handler over a SQLite store with two tenants' knowledge bases; the caller's
// tenant is "acme" and its user is the X-User header (default "alice").
type chatFixture struct {
	srv             *httptest.Server
	rec             *scopeRecorder
	mine, theirs    rag.KnowledgeBase
	myDoc, theirDoc rag.Document
	logs            *lockedBuffer
}

// lockedBuffer is a log sink the server goroutine writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newChatFixture(t *testing.T, history bool) *chatFixture {
	t.Helper()
	return newChatFixtureWith(t, history, nil)
}

// newChatFixtureWith is newChatFixture with a last change to the handler's dependencies.
func newChatFixtureWith(t *testing.T, history bool, mod func(*Deps)) *chatFixture {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	f := &chatFixture{rec: &scopeRecorder{}, mine: rag.KnowledgeBase{Tenant: "acme", Name: "handbook"}, theirs: rag.KnowledgeBase{Tenant: "other", Name: "secrets"}}
	for _, kb := range []*rag.KnowledgeBase{&f.mine, &f.theirs} {
		if err := db.CreateKB(ctx, kb); err != nil {
			t.Fatal(err)
		}
	}
	f.myDoc = rag.Document{Tenant: "acme", KBID: f.mine.ID, SourceURI: "inbox/handbook/leave.md"}
	f.theirDoc = rag.Document{Tenant: "other", KBID: f.theirs.ID, SourceURI: "inbox/secrets/plan.md"}
	for _, d := range []*rag.Document{&f.myDoc, &f.theirDoc} {
		if err := db.CreateDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	f.logs = &lockedBuffer{}
	d := Deps{Library: db, Logger: slog.New(slog.NewTextHandler(f.logs, nil)), Tenant: func(*http.Request) (string, error) { return "acme", nil },
		Chat: &answer.Pipeline{Retriever: f.rec, Calibration: answer.Calibrations{}}} // uncalibrated: these tests pin the bands of toy answers
	if history {
		d.Conversations = db
		d.User = func(r *http.Request) (string, error) {
			if u := r.Header.Get("X-User"); u != "" {
				return u, nil
			}
			return "alice", nil
		}
	}
	if mod != nil {
		mod(&d)
	}
	f.srv = httptest.NewServer(New(d))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *chatFixture) post(t *testing.T, body string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/chat", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func doneOf(t *testing.T, events []sseEvent) answer.Done {
	t.Helper()
	var done answer.Done
	if last := events[len(events)-1]; last.name != "done" || json.Unmarshal(last.data, &done) != nil {
		t.Fatalf("last event %s %s", last.name, last.data)
	}
	return done
}

func TestChat(t *testing.T) {
	f := newChatFixture(t, false)
	rec, mine, theirs := f.rec, f.mine, f.theirs
	post := func(body string) *http.Response { return f.post(t, body) }

	resp := post(`{"question":"How many days of annual leave?","kbs":["handbook"]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readSSE(t, resp)
	var names []string
	for _, e := range events {
		names = append(names, e.name)
	}
	seq := strings.Join(names, " ")
	if !strings.HasPrefix(seq, "meta understanding routing retrieval grader rerank start token") || !strings.HasSuffix(seq, " done") {
		t.Fatalf("event sequence %q", seq)
	}
	var done answer.Done
	if err := json.Unmarshal(events[len(events)-1].data, &done); err != nil {
		t.Fatal(err)
	}
	// One log line per question carries the span timeline of the same events.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(f.logs.String(), "msg=chat ") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if l := f.logs.String(); !regexp.MustCompile(`msg=chat tenant=acme .*spans="meta@\d+ understanding@\d+ routing@\d+ .*done@\d+" path=STANDARD`).MatchString(l) {
		t.Fatalf("chat log line: %s", l)
	}
	var streamed strings.Builder
	for _, e := range events {
		if e.name == "token" {
			var tok struct{ Text string }
			_ = json.Unmarshal(e.data, &tok)
			streamed.WriteString(tok.Text)
		}
	}
	if streamed.String() != done.Answer || !strings.Contains(done.Answer, "20 days") || !done.Sources[0].Cited {
		t.Fatalf("streamed %q, done %+v", streamed.String(), done)
	}
	if q := rec.got[0]; q.Filter.Tenant != "acme" || len(q.Filter.KBIDs) != 1 || q.Filter.KBIDs[0] != mine.ID {
		t.Fatalf("retrieval scope %+v", q.Filter)
	}

	// Rejected before the stream starts: JSON errors with a status, and nothing retrieved.
	n := len(rec.got)
	for body, code := range map[string]int{
		`{"question":"q","kbs":["secrets"]}`:                             404, // another tenant's KB is invisible
		`{"question":"q","kbs":["` + theirs.ID + `"]}`:                   404,
		`{"question":"q","kbs":["nope"]}`:                                404,
		`{"question":"   "}`:                                             400,
		`{"question":"q","extra":1}`:                                     400,
		`not json`:                                                       400,
		`{"question":"q","kbs":[` + strings.Repeat(`"a",`, 40) + `"a"]}`: 400,
	} {
		resp := post(body)
		var e struct {
			Error struct{ Code, Message string }
		}
		if resp.StatusCode != code || json.NewDecoder(resp.Body).Decode(&e) != nil || e.Error.Code == "" {
			t.Errorf("%s: status %d, error %+v", body, resp.StatusCode, e)
		}
	}
	if len(rec.got) != n {
		t.Fatalf("rejected requests reached retrieval: %+v", rec.got[n:])
	}

	// A failure after the stream started is an error event without internal detail.
	events = readSSE(t, post(`{"question":"please explode","kbs":["handbook"]}`))
	last := events[len(events)-1]
	if last.name != "error" || strings.Contains(string(last.data), "10.0.0.7") || !strings.Contains(string(last.data), "unavailable") {
		t.Fatalf("error event %s %s", last.name, last.data)
	}
	// A panic inside the pipeline ends that stream with an internal error event; the server goes on.
	events = readSSE(t, post(`{"question":"please panic","kbs":["handbook"]}`))
	last = events[len(events)-1]
	if last.name != "error" || !strings.Contains(string(last.data), `"code":"Internal"`) || strings.Contains(string(last.data), "index out of range") {
		t.Fatalf("after a panic: %s %s", last.name, last.data)
	}
	if events := readSSE(t, post(`{"question":"How many days of annual leave?","kbs":["handbook"]}`)); events[len(events)-1].name != "done" {
		t.Fatal("the server stopped answering after a panic")
	}
}

func TestChatConversations(t *testing.T) {
	f := newChatFixture(t, true)
	done := doneOf(t, readSSE(t, f.post(t, `{"question":"How many days of annual leave?","kbs":["handbook"]}`)))
	if !strings.HasPrefix(done.ConversationID, "conv_") || !strings.HasPrefix(done.MessageID, "msg_") {
		t.Fatalf("done %+v: the stored answer's ids must be in done", done)
	}
	// Continuing without kbs keeps the conversation's scope.
	done2 := doneOf(t, readSSE(t, f.post(t, `{"question":"And unused leave?","conversation_id":"`+done.ConversationID+`"}`)))
	if done2.ConversationID != done.ConversationID || f.rec.got[1].Filter.KBIDs[0] != f.mine.ID {
		t.Fatalf("continued: %+v, scope %+v", done2, f.rec.got[1].Filter)
	}
	// A question about the conversation is answered from its stored history.
	meta := doneOf(t, readSSE(t, f.post(t, `{"question":"What did I ask so far?","conversation_id":"`+done.ConversationID+`"}`)))
	if meta.ShortCircuit != answer.ShortMetaConversation || !strings.Contains(meta.Answer, "1. How many days of annual leave?\n2. And unused leave?") {
		t.Fatalf("meta conversation: %+v", meta)
	}
	var got struct {
		Conversation rag.Conversation
		Messages     []rag.Message
	}
	resp, err := http.Get(f.srv.URL + "/api/conversations/" + done.ConversationID + "/messages")
	if err != nil || resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&got) != nil {
		t.Fatalf("messages: %v %v", resp, err)
	}
	resp.Body.Close()
	if len(got.Messages) != 6 || got.Messages[0].Role != "user" || got.Messages[1].ID != done.MessageID || got.Conversation.Title != "How many days of annual leave?" {
		t.Fatalf("messages %+v", got)
	}
	a := got.Messages[1]
	var trace []sse.Event
	if err := json.Unmarshal(a.Trace, &trace); err != nil || len(trace) < 8 || trace[0].Name != "meta" || trace[len(trace)-1].Name != "done" {
		t.Fatalf("trace %s: the stored trace is the streamed events, done included", a.Trace)
	}
	var stored answer.Done
	if err := json.Unmarshal(trace[len(trace)-1].Data, &stored); err != nil || stored.MessageID != done.MessageID || stored.StageMS == nil || stored.Answer != done.Answer {
		t.Fatalf("stored done %+v: it must be the done the client got, timings included", stored)
	}
	if a.Content != done.Answer || a.Band != done.Confidence.Band || !strings.Contains(string(a.Sources), "handbook.docx") {
		t.Fatalf("assistant message %+v", a)
	}
	// Another user of the same tenant sees none of it.
	if resp := f.post(t, `{"question":"q","conversation_id":"`+done.ConversationID+`"}`, "X-User", "bob"); resp.StatusCode != 404 {
		t.Fatalf("bob continued alice's conversation: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/api/conversations", nil)
	req.Header.Set("X-User", "bob")
	var list struct{ Conversations []rag.Conversation }
	if resp, err := http.DefaultClient.Do(req); err != nil || json.NewDecoder(resp.Body).Decode(&list) != nil || len(list.Conversations) != 0 {
		t.Fatalf("bob lists %+v", list)
	}
	if resp, _ := http.Get(f.srv.URL + "/api/conversations"); resp != nil {
		json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if len(list.Conversations) != 1 || list.Conversations[0].ID != done.ConversationID {
			t.Fatalf("alice lists %+v", list)
		}
	}
}

func TestChatSelectedDocuments(t *testing.T) {
	f := newChatFixture(t, false)
	events := readSSE(t, f.post(t, `{"question":"How many days of annual leave?","kbs":["handbook"],"documents":["`+f.myDoc.ID+`"]}`))
	if done := doneOf(t, events); done.Path != answer.PathSelectedDoc {
		t.Fatalf("path %s", done.Path)
	}
	if q := f.rec.got[0]; len(q.Filter.DocumentIDs) != 1 || q.Filter.DocumentIDs[0] != f.myDoc.ID || q.Filter.Tenant != "acme" {
		t.Fatalf("filter %+v", q.Filter)
	}
	for body, code := range map[string]int{
		`{"question":"q","kbs":["handbook"],"documents":["` + f.theirDoc.ID + `"]}`: 404, // another tenant's document
		`{"question":"q","kbs":["handbook"],"documents":["doc_' OR 1=1"]}`:          404,
		`{"question":"q","kbs":["handbook"],"documents":["doc_missing"]}`:           404,
	} {
		if resp := f.post(t, body); resp.StatusCode != code {
			t.Errorf("%s: %d, want %d", body, resp.StatusCode, code)
		}
	}
	if len(f.rec.got) != 1 {
		t.Fatalf("rejected requests reached retrieval: %d", len(f.rec.got))
	}
}

// The pipeline is what the handler's small interfaces describe (asserted here, not in the package, so
// that a binary which never builds a pipeline does not link one).
var (
	_ Chatter  = (*answer.Pipeline)(nil)
	_ Searcher = (*answer.Pipeline)(nil)
)

// refusingAnswers is a conversation store that keeps questions but refuses to store answers.
type refusingAnswers struct{ Conversations }

func (r refusingAnswers) AppendMessage(ctx context.Context, m *rag.Message) error {
	if m.Role == "assistant" {
		return rag.Errorf("test", rag.KindUnavailable, "disk full")
	}
	return r.Conversations.AppendMessage(ctx, m)
}

// TestChatStoreFailure: the handler stores the answer before it sends done; when storing fails the user
// still gets done, flagged "history" and without the ids of a message that does not exist.
func TestChatStoreFailure(t *testing.T) {
	f := newChatFixtureWith(t, true, func(d *Deps) { d.Conversations = refusingAnswers{d.Conversations} })
	events := readSSE(t, f.post(t, `{"question":"How many days of annual leave?","kbs":["handbook"]}`))
	done := doneOf(t, events)
	if !slices.Contains(done.Degraded, "history") || done.ConversationID != "" || done.MessageID != "" || done.Answer == "" {
		t.Fatalf("done %+v: a failed store must be flagged, not fatal", done)
	}
	if n := len(events); events[n-1].name != "done" || events[n-2].name == "done" {
		t.Fatalf("done must be sent once, last: %v", events)
	}
}
