package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/answer/inject"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/sse"
	"github.com/docmind/docmind/shared/wire"
)

// askResult is `docmind ask --json`: the answer, its sources in citation order ([1] first) and every
// event exactly as the chat endpoint streams it.
type askResult struct {
	Answer     string          `json:"answer"`
	Sources    []answer.Source `json:"sources"`
	Confidence float64         `json:"confidence"`
	Band       string          `json:"band"`
	Path       string          `json:"path"`
	// Abstained says the documents do not answer the question (the answer says so and cites nothing).
	Abstained bool `json:"abstained"`
	// InjectionFlags names the retrieved passages that instruct the assistant ([] when none does).
	InjectionFlags []inject.Flag `json:"injection_flags"`
	Events         []sse.Event   `json:"events"`
}

func cmdAsk(e env, args []string) int {
	var c common
	fs := newFlags("ask", e, &c)
	kbName := fs.String("kb", "", "knowledge base name (default: every knowledge base of the tenant)")
	server := fs.String("server", "", "ask a running docmind server at this URL (e.g. http://127.0.0.1:8080) instead of opening the data directory")
	key := fs.String("key", "", "API key for --server when it requires one (default DOCMIND_API_KEY)")
	user := fs.String("user", "", "ask as this user (email or id): only the knowledge bases the user may read, the user's memories")
	filter := fs.String("filter", "", `only documents whose metadata passes this JSON filter, e.g. {"key":"source","eq":"web"} (docs/metadata-filters.md)`)
	var docs docFlags
	fs.Var(&docs, "doc", "ask about this document (id, or file name; repeatable): the selected-document path, as the page's selection (with --server: ids)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	question := strings.TrimSpace(strings.Join(rest, " "))
	if question == "" {
		fmt.Fprintln(e.stderr, `usage: docmind ask [--kb NAME] [--doc ID|NAME]... [--filter JSON] [--data DIR] [--json] "question"`)
		return exitConfig
	}
	var events []sse.Event
	emit := func(name string, v any) error {
		data, err := sse.Encode(v)
		if err != nil {
			return err
		}
		events = append(events, sse.Event{Name: name, Data: data})
		if !c.json {
			timeline(e.stdout, e.stderr, name, data)
		}
		return nil
	}
	if *server != "" {
		if *key == "" {
			*key = e.getenv("DOCMIND_API_KEY")
		}
		return askServer(e, c.json, *server, *key, *kbName, *filter, docs, question, emit, &events)
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	s, err := OpenStores(e.ctx, cfg)
	if err != nil {
		code := fail(e, err)
		heldHint(e, cfg, err)
		return code
	}
	defer s.Close()
	req := answer.Request{Tenant: cfg.Tenant, Question: question}
	if req.KBIDs, err = kbScope(e, s, cfg.Tenant, *user, *kbName); err != nil {
		return fail(e, err)
	}
	if *user != "" {
		if u, err := userByKey(e, s, cfg.Tenant, *user); err == nil {
			req.User = u.ID
		}
	}
	f := rag.Filter{Tenant: cfg.Tenant, KBIDs: req.KBIDs}
	if none, err := metaRestrict(e.ctx, s.SQL, *filter, &f); err != nil || none {
		if err == nil { // as the server: a filter nothing passes is not an unrestricted question
			err = rag.Errorf("ask", rag.KindNotFound, "no document in the knowledge bases asked passes the filter")
		}
		return fail(e, err)
	}
	req.Restrict, req.Filter = f.DocumentIDs, f.Meta // the filter beside its documents, for Milvus
	if f.Meta != nil {
		req.FilterKeys = f.Meta.Keys()
	}
	if req.DocumentIDs, err = selectDocs(e, s, cfg.Tenant, req.KBIDs, docs); err != nil {
		return fail(e, err)
	}
	chain, err := retriever(cfg, s)
	if err != nil {
		return fail(e, err)
	}
	p := wire.Chat(cfg, chain, s.SQL, s.KV)
	if err := p.Check(req); err != nil {
		return fail(e, err)
	}
	var failed error
	_ = emit("meta", sse.Meta{Protocol: sse.Protocol})
	done, err := p.Run(e.ctx, req, emit)
	if err != nil {
		// The server sends this as an error event; so does ask, then reports it.
		failed = err
		_ = emit(answer.EventError, answer.ErrorEvent{Code: rag.KindOf(err).String(), Message: err.Error()})
	} else {
		_ = emit(answer.EventDone, done) // nothing is stored: done follows the answer directly
	}
	if c.json {
		printAsk(e.stdout, done, events)
	}
	if failed != nil {
		return fail(e, failed)
	}
	return exitOK
}

func printAsk(w io.Writer, done *answer.Done, events []sse.Event) {
	out := askResult{Sources: []answer.Source{}, InjectionFlags: []inject.Flag{}, Events: events}
	if done != nil {
		out.Answer, out.Sources, out.Confidence, out.Band, out.Path = done.Answer, done.Sources, done.Confidence.Score, done.Confidence.Band, done.Path
		out.Abstained = done.Abstained
		if done.InjectionFlags != nil {
			out.InjectionFlags = done.InjectionFlags
		}
	}
	printJSON(w, out)
}

// askServer asks a running server (its data directory is locked by it) and renders its stream the same way.
func askServer(e env, asJSON bool, base, key, kb, filter string, docs []string, question string, emit answer.Emit, events *[]sse.Event) int {
	const op = "ask"
	body := map[string]any{"question": question}
	if len(docs) > 0 {
		body["documents"] = docs // the server checks each id against the caller's roles
	}
	if kb != "" {
		body["kbs"] = []string{kb}
	}
	if strings.TrimSpace(filter) != "" {
		if !json.Valid([]byte(filter)) {
			return fail(e, rag.Errorf(op, rag.KindInvalid, "--filter is not JSON"))
		}
		body["filter"] = json.RawMessage(filter)
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/api/chat", bytes.NewReader(b))
	if err != nil {
		return fail(e, rag.Errorf(op, rag.KindInvalid, "--server: %v", err))
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return fail(e, rag.Errorf(op, rag.KindUnavailable, "%v", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var apiErr struct {
			Error struct{ Code, Message string }
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&apiErr)
		kind := rag.KindUnavailable
		if resp.StatusCode < 500 {
			kind = rag.KindInvalid
		}
		msg := fmt.Sprintf("server answered %s: %s", resp.Status, apiErr.Error.Message)
		if resp.StatusCode == http.StatusUnauthorized {
			msg += unauthorizedHint(key)
		}
		return fail(e, rag.Errorf(op, kind, "%s", msg))
	}
	var done *answer.Done
	var failed error
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		raw := json.RawMessage(data)
		_ = emit(name, raw)
		switch name {
		case "done":
			done = &answer.Done{}
			if err := json.Unmarshal(raw, done); err != nil {
				failed = rag.Errorf(op, rag.KindInternal, "unreadable done event: %v", err)
			}
		case "error":
			var ev struct{ Code, Message string }
			_ = json.Unmarshal(raw, &ev)
			if failed == nil && done == nil {
				failed = rag.Errorf(op, rag.KindUnavailable, "%s: %s", ev.Code, ev.Message)
			}
		}
	}
	if err := sc.Err(); err != nil && failed == nil {
		failed = rag.Errorf(op, rag.KindUnavailable, "reading the stream: %v", err)
	}
	if done != nil && done.Partial {
		failed = nil // the error event said the answer was cut; done carries what arrived
	}
	if asJSON {
		printAsk(e.stdout, done, *events)
	}
	if failed != nil {
		return fail(e, failed)
	}
	if done == nil {
		return fail(e, rag.Errorf(op, rag.KindUnavailable, "the stream ended without done"))
	}
	return exitOK
}

// unauthorizedHint is the next step after a 401: which flag or variable carries a key, or that the one
// sent was refused.
func unauthorizedHint(key string) string {
	if key == "" {
		return "; this server needs an API key: pass --key dm_... or set DOCMIND_API_KEY (an admin makes one with docmind key create --user EMAIL)"
	}
	return "; the key from --key or DOCMIND_API_KEY was refused (mistyped, revoked, or made for another server)"
}

// timeline prints one event for a terminal: tokens to out as they come, the rest to log as a line each.
func timeline(out, log io.Writer, name string, data json.RawMessage) {
	var d map[string]any
	_ = json.Unmarshal(data, &d)
	str := func(k string) string { return fmt.Sprint(d[k]) }
	switch name {
	case "token":
		fmt.Fprint(out, d["text"])
	case "understanding":
		u, _ := d["understanding"].(map[string]any)
		var parts []string
		for _, k := range []string{"intent", "complexity", "specificity"} {
			if v, _ := u[k].(string); v != "" {
				parts = append(parts, v)
			}
		}
		fmt.Fprintf(log, "· understanding (%v): %s\n", u["source"], strings.Join(parts, ", "))
	case "routing":
		fmt.Fprintf(log, "· routing: %s (%s)\n", str("path"), str("reason"))
	case "agent_step":
		fmt.Fprintf(log, "· agent round %v: %v new passages\n", d["round"], d["new_evidence"])
	case "cached":
		fmt.Fprintf(log, "· from cache: first answered %s for %q (%s)\n", str("answered_at"), str("question"), str("band"))
	case "retrieval":
		if r, ok := d["read"].(map[string]any); ok {
			fmt.Fprintf(log, "· read in order: %v of %v passages, %v of %v tokens\n", r["sampled"], r["passages"], r["tokens"], r["budget_tokens"])
			break
		}
		fmt.Fprintf(log, "· retrieval: %v keyword, %v vector hits -> %v passages\n", d["keyword"], d["vector"], d["evidence"])
	case "grader":
		fmt.Fprintf(log, "· grader: %s (%s)\n", str("tier"), str("reason"))
	case "start":
		fmt.Fprintln(log, "· answer:")
	case "confidence_warning", "error":
		fmt.Fprintf(out, "\n! %s\n", str("message"))
	case "done":
		var done answer.Done
		_ = json.Unmarshal(data, &done)
		fmt.Fprintln(out)
		for _, s := range done.Sources {
			where := s.FileName
			if s.Chapter != "" {
				where += " > " + s.Chapter
			}
			if s.Part != nil {
				where += fmt.Sprintf(" (part %d of %d)", s.Part.Index, s.Part.Of)
			}
			mark := " "
			if s.Cited {
				mark = "*"
			}
			fmt.Fprintf(out, "%s[%d] %s\n", mark, s.N, where)
		}
		if done.Confidence.Band != "" {
			fmt.Fprintf(log, "· confidence: %s %.2f · path %s · %s", done.Confidence.Band, done.Confidence.Score, done.Path, done.Answerer)
		} else {
			fmt.Fprintf(log, "· %s · %s", done.Path, done.Answerer)
		}
		if len(done.Degraded) > 0 {
			fmt.Fprintf(log, " · degraded: %s", strings.Join(done.Degraded, ", "))
		}
		fmt.Fprintln(log)
	}
}

// userByKey finds a user of the tenant by email or id.
func userByKey(e env, s *Stores, tenant, key string) (rag.User, error) {
	if strings.Contains(key, "@") {
		return s.SQL.GetUserByEmail(e.ctx, tenant, key)
	}
	return s.SQL.GetUser(e.ctx, tenant, key)
}
