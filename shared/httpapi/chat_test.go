package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store/sqlite"
)

type scopeRecorder struct{ got []retrieve.Query }

func (s *scopeRecorder) Retrieve(_ context.Context, q retrieve.Query) (*retrieve.Result, error) {
	s.got = append(s.got, q)
	if strings.Contains(q.Text, "explode") {
		return nil, rag.Errorf("retrieve", rag.KindUnavailable, "dial tcp 10.0.0.7:19530: secret internal detail")
	}
	return &retrieve.Result{Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.9},
		Evidence: []rank.Evidence{{ChunkID: "c1", DocumentID: "doc_1", KBID: q.Filter.KBIDs[0], FileName: "handbook.docx",
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

func TestChat(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	mine := rag.KnowledgeBase{Tenant: "acme", Name: "handbook"}
	theirs := rag.KnowledgeBase{Tenant: "other", Name: "secrets"}
	for _, kb := range []*rag.KnowledgeBase{&mine, &theirs} {
		if err := db.CreateKB(ctx, kb); err != nil {
			t.Fatal(err)
		}
	}
	rec := &scopeRecorder{}
	srv := httptest.NewServer(New(Deps{Library: db, Logger: nil2(), Tenant: func(*http.Request) (string, error) { return "acme", nil },
		Chat: &answer.Pipeline{Retriever: rec}}))
	defer srv.Close()
	post := func(body string) *http.Response {
		t.Helper()
		resp, err := http.Post(srv.URL+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

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
}
