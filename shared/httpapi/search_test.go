package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/retrieve"
)

func TestSearchShowsTheStagesWithinTheCallersTenant(t *testing.T) {
	f := newChatFixture(t, false)
	do := func(body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/search", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := do(`{"query":"  annual leave ","kbs":["handbook"]}`)
	var res retrieve.Result
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&res) != nil {
		t.Fatalf("search = %d", resp.StatusCode)
	}
	if len(res.Evidence) != 1 || res.Evidence[0].FileName != "handbook.docx" || res.Grade.Tier == "" {
		t.Errorf("result = %+v, want the retriever's evidence and grade", res)
	}
	got := f.rec.got[len(f.rec.got)-1]
	if got.Text != "annual leave" || got.Filter.Tenant != "acme" || len(got.Filter.KBIDs) != 1 || got.Filter.KBIDs[0] != f.mine.ID {
		t.Errorf("query = %+v, want the trimmed text in acme's handbook", got)
	}
	calls := len(f.rec.got)
	for body, want := range map[string]int{
		`{"query":"x","kbs":["secrets"]}`:               http.StatusNotFound, // another tenant's, by name
		`{"query":"x","kbs":["` + f.theirs.ID + `"]}`:   http.StatusNotFound, // and by id
		`{"query":"   "}`:                               http.StatusBadRequest,
		`{"query":"` + strings.Repeat("长", 2001) + `"}`: http.StatusBadRequest,
		`{"query":"x","top":3}`:                         http.StatusBadRequest,
	} {
		if r := do(body); r.StatusCode != want {
			t.Errorf("%.60s: status %d, want %d", body, r.StatusCode, want)
		}
	}
	if len(f.rec.got) != calls {
		t.Errorf("refused searches reached the retriever %d times", len(f.rec.got)-calls)
	}
	if r := do(`{"query":"leave"}`); r.StatusCode != http.StatusOK || len(f.rec.got[len(f.rec.got)-1].Filter.KBIDs) != 0 {
		t.Errorf("no kbs: status %d, filter %+v; want every knowledge base of the tenant", r.StatusCode, f.rec.got[len(f.rec.got)-1].Filter)
	}
}

func TestDeleteConversationOnlyTheCallersOwn(t *testing.T) {
	f := newChatFixture(t, true)
	resp := f.post(t, `{"question":"How many days of annual leave?","kbs":["handbook"]}`, "Content-Type", "application/json")
	id := doneOf(t, readSSE(t, resp)).ConversationID
	if id == "" {
		t.Fatal("no conversation id")
	}
	del := func(id, user string) int {
		req, _ := http.NewRequest(http.MethodDelete, f.srv.URL+"/api/conversations/"+id, nil)
		req.Header.Set("X-User", user)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if got := del(id, "bob"); got != http.StatusNotFound {
		t.Errorf("bob deleting alice's conversation: %d, want 404", got)
	}
	if got := del(id, "alice"); got != http.StatusNoContent {
		t.Errorf("alice deleting her conversation: %d, want 204", got)
	}
	if got := del(id, "alice"); got != http.StatusNotFound {
		t.Errorf("deleting it again: %d, want 404", got)
	}
	r, err := http.Get(f.srv.URL + "/api/conversations/" + id + "/messages")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusNotFound {
		t.Errorf("messages of a deleted conversation: %d, want 404", r.StatusCode)
	}
}
