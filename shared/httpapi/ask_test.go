package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
)

func (f *chatFixture) ask(t *testing.T, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/ask", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestAsk: /api/ask returns the same done object the stream ends with, as one JSON body, scoped and
// refused exactly as /api/chat.
func TestAsk(t *testing.T) {
	f := newChatFixture(t, true)
	resp := f.ask(t, `{"question":"How many days of annual leave?","kbs":["handbook"]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var done answer.Done
	if err := json.NewDecoder(resp.Body).Decode(&done); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done.Answer, "20 days") || len(done.Sources) != 1 || done.ConversationID != "" {
		t.Errorf("done %+v, want the cited answer and no stored conversation", done)
	}
	if got := f.rec.got[len(f.rec.got)-1].Filter; got.Tenant != "acme" || len(got.KBIDs) != 1 || got.KBIDs[0] != f.mine.ID {
		t.Errorf("retrieval filter %+v, want acme's handbook only", got)
	}
	for body, want := range map[string]int{
		`{"question":"q","kbs":["secrets"]}`:                     http.StatusNotFound, // the other tenant's
		`{"question":"q","kbs":["` + f.theirs.ID + `"]}`:         http.StatusNotFound,
		`{"question":"q","documents":["` + f.theirDoc.ID + `"]}`: http.StatusNotFound,
		`{"question":""}`:                        http.StatusBadRequest,
		`{"question":"q","conversation_id":"c"}`: http.StatusBadRequest, // nothing is stored
		`{"question":"explode"}`:                 http.StatusServiceUnavailable,
	} {
		resp := f.ask(t, body)
		var e struct {
			Error struct{ Message string }
		}
		json.NewDecoder(resp.Body).Decode(&e)
		if resp.StatusCode != want || strings.Contains(e.Error.Message, "10.0.0.7") {
			t.Errorf("%s: %d %q, want %d without internal text", body, resp.StatusCode, e.Error.Message, want)
		}
	}
}

type fakeAsker struct{ got answer.Request }

func (a *fakeAsker) Ask(_ context.Context, req answer.Request) (*answer.Done, error) {
	a.got = req
	if req.Question == "fail" {
		return nil, rag.Errorf("sfn", rag.KindUnavailable, "execution failed: arn:aws:states:secret")
	}
	return &answer.Done{Answer: "from the state machine", Path: answer.PathStandard}, nil
}

// TestAskRunsAsker: with an Asker (the state machine) the pipeline is not run, and the request the Asker
// gets carries the caller's tenant and the knowledge bases it may read.
func TestAskRunsAsker(t *testing.T) {
	a := &fakeAsker{}
	f := newChatFixtureWith(t, false, func(d *Deps) { d.Asker = a })
	resp := f.ask(t, `{"question":"annual leave?","kbs":["handbook"]}`)
	var done answer.Done
	json.NewDecoder(resp.Body).Decode(&done)
	if resp.StatusCode != 200 || done.Answer != "from the state machine" || len(f.rec.got) != 0 {
		t.Fatalf("%d %+v, pipeline ran %d times", resp.StatusCode, done, len(f.rec.got))
	}
	if a.got.Tenant != "acme" || len(a.got.KBIDs) != 1 || a.got.KBIDs[0] != f.mine.ID {
		t.Errorf("asker got %+v", a.got)
	}
	if resp := f.ask(t, `{"question":"fail"}`); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("failed execution: %d, want 503", resp.StatusCode)
	}
}
