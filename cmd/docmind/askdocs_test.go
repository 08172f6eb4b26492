package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `docmind ask --doc` takes the selected-document path as the page's selection and the API's
// `documents` do: a summary question reads the selected document in order (SELECTED_DOC_READ), a
// specific one is answered from it alone (SELECTED_DOC); by id or file name, repeatable; scoped to the
// tenant, the --kb named and the --user's roles, with a clear error for an unknown or ambiguous name.
func TestAskSelectsDocuments(t *testing.T) {
	data, docs := t.TempDir(), t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, append(args, "--data", data, "--tenant", "team")...)
	}
	files := map[string]string{
		"handbook/leave.md":  "# Leave\n\nFull-time employees get 20 days of paid annual leave each year.\n\n## Booking\n\nAnnual leave is booked in the HR portal two weeks ahead.\n\n## Carry-over\n\nUp to five unused days carry over to the next year.\n",
		"handbook/travel.md": "# Travel\n\nTravel is booked through the travel desk. Economy class is the default for flights under six hours.\n",
		"board/minutes.md":   "# Board minutes\n\nThe acquisition code word is zqxsecretword. Annual leave for board members is decided by the chair.\n",
		"board/leave.md":     "# Board leave\n\nBoard members take annual leave when the chair agrees.\n",
	}
	for name, body := range files {
		p := filepath.Join(docs, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, kb := range []string{"handbook", "board"} {
		if code, _, errOut := cli("ingest", "--kb", kb, filepath.Join(docs, kb)); code != exitOK {
			t.Fatalf("ingest %s: %d %s", kb, code, errOut)
		}
	}
	cli("user", "create", "ben@team.example")
	if code, _, errOut := cli("kb", "grant", "handbook", "ben@team.example", "--role", "reader"); code != exitOK {
		t.Fatalf("grant: %d %s", code, errOut)
	}
	ask := func(args ...string) askResult {
		t.Helper()
		code, out, errOut := cli(append([]string{"ask", "--json"}, args...)...)
		var res askResult
		if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil {
			t.Fatalf("ask %v: exit %d, %v: %.300s %s", args, code, err, out, errOut)
		}
		return res
	}
	onlyFrom := func(what string, res askResult, want ...string) {
		t.Helper()
		if len(res.Sources) == 0 {
			t.Fatalf("%s: no sources: %+v", what, res.Answer)
		}
		for _, s := range res.Sources {
			if !strings.Contains(strings.Join(want, " "), s.FileName) {
				t.Fatalf("%s: source %s (%s), want only %v", what, s.FileName, s.DocumentID, want)
			}
		}
	}

	// a summary of one document (by file name, in the knowledge base named): read in order
	res := ask("--kb", "handbook", "--doc", "leave.md", "summarise this document")
	if res.Path != "SELECTED_DOC" || routingReason(t, res) != "SELECTED_DOC_READ" {
		t.Fatalf("summary: path %s, routing %s; want SELECTED_DOC_READ", res.Path, routingReason(t, res))
	}
	onlyFrom("summary", res, "leave.md")
	leaveID := res.Sources[0].DocumentID
	for i, s := range res.Sources {
		if s.DocumentID != leaveID || s.Part == nil || s.Part.Index != i+1 {
			t.Fatalf("summary source %d: %+v; want the handbook's leave.md in order", i, s)
		}
	}
	// a specific question over the same document by id: searched within it alone, the travel desk unseen
	res = ask("--doc", leaveID, "Where is leave booked and how is travel booked?")
	if res.Path != "SELECTED_DOC" || routingReason(t, res) != "SELECTED_DOC" {
		t.Fatalf("specific question: path %s, routing %s", res.Path, routingReason(t, res))
	}
	onlyFrom("by id", res, "leave.md")
	for _, s := range res.Sources {
		if s.DocumentID != leaveID {
			t.Fatalf("by id: source of %s; want %s alone", s.DocumentID, leaveID)
		}
	}
	// repeatable: two documents
	res = ask("--kb", "handbook", "--doc", "leave.md", "--doc", "travel.md", "How is travel booked?")
	onlyFrom("two documents", res, "leave.md", "travel.md")
	if !strings.Contains(res.Answer, "travel desk") {
		t.Fatalf("two documents: %q", res.Answer)
	}

	// failures: each says what is wrong, and is a usage error
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--doc", "nosuch.md"}, `no document "nosuch.md"`},
		{[]string{"--doc", "doc_nosuch"}, `no document "doc_nosuch"`},
		// the operator sees two leave.md: which one is not guessed
		{[]string{"--doc", "leave.md"}, `2 documents are named "leave.md"`},
		// a document of another knowledge base than the one named
		{[]string{"--kb", "handbook", "--doc", "minutes.md"}, `no document "minutes.md"`},
		// ben may not read the board's documents, by name or by id
		{[]string{"--user", "ben@team.example", "--doc", "minutes.md"}, `no document "minutes.md"`},
	} {
		code, out, errOut := cli(append(append([]string{"ask"}, c.args...), "What is the code word?")...)
		if code != exitConfig || !strings.Contains(errOut, c.want) || strings.Contains(out, "zqxsecretword") {
			t.Errorf("ask %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, exitConfig, c.want)
		}
	}
	boardID := ask("--kb", "board", "--doc", "minutes.md", "What is the acquisition code word?").Sources[0].DocumentID
	code, out, errOut := cli("ask", "--user", "ben@team.example", "--doc", boardID, "What is the acquisition code word?")
	if code != exitConfig || strings.Contains(out, "zqxsecretword") || !strings.Contains(errOut, "no document") {
		t.Errorf("ben asking the board's document by id: exit %d %.200s %s; want refused", code, out, errOut)
	}
	// ben's leave.md is the handbook's: the board's is not his to read, so the name is not ambiguous
	res = ask("--user", "ben@team.example", "--doc", "leave.md", "How many days of annual leave?")
	onlyFrom("ben's leave.md", res, "leave.md")
	if res.Sources[0].DocumentID != leaveID {
		t.Fatalf("ben's leave.md is %s; want the handbook's %s", res.Sources[0].DocumentID, leaveID)
	}
}

// routingReason is the routing event's reason in an ask --json result.
func routingReason(t *testing.T, res askResult) string {
	t.Helper()
	for _, e := range res.Events {
		if e.Name == "routing" {
			var r struct{ Reason string }
			if err := json.Unmarshal(e.Data, &r); err != nil {
				t.Fatal(err)
			}
			return r.Reason
		}
	}
	return ""
}
