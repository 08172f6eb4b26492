package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/docmind/docmind/shared/answer"
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
	Events     []sse.Event     `json:"events"`
}

func cmdAsk(e env, args []string) int {
	var c common
	fs := newFlags("ask", e, &c)
	kbName := fs.String("kb", "", "knowledge base name (default: every knowledge base of the tenant)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	question := strings.TrimSpace(strings.Join(rest, " "))
	if question == "" {
		fmt.Fprintln(e.stderr, `usage: docmind ask [--kb NAME] [--data DIR] [--json] "question"`)
		return exitConfig
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	s, err := OpenStores(e.ctx, cfg)
	if err != nil {
		return fail(e, err)
	}
	defer s.Close()
	req := answer.Request{Tenant: cfg.Tenant, Question: question}
	if *kbName != "" {
		kb, err := s.SQL.GetKBByName(e.ctx, cfg.Tenant, *kbName)
		if err != nil {
			if rag.Is(err, rag.KindNotFound) {
				return fail(e, rag.Errorf("ask", rag.KindInvalid, "no knowledge base named %q", *kbName))
			}
			return fail(e, err)
		}
		req.KBIDs = []string{kb.ID}
	}
	chain, err := retriever(cfg, s)
	if err != nil {
		return fail(e, err)
	}
	p := wire.Chat(cfg, chain, s.SQL, s.KV)
	if err := p.Check(req); err != nil {
		return fail(e, err)
	}
	var events []sse.Event
	var failed error
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
	_ = emit("meta", map[string]int{"protocol": sse.Protocol})
	done, err := p.Run(e.ctx, req, emit)
	if err != nil {
		// The server sends this as an error event; so does ask, then reports it.
		failed = err
		_ = emit("error", map[string]string{"code": rag.KindOf(err).String(), "message": err.Error()})
	}
	if c.json {
		out := askResult{Sources: []answer.Source{}, Events: events}
		if done != nil {
			out.Answer, out.Sources, out.Confidence, out.Band, out.Path = done.Answer, done.Sources, done.Confidence.Score, done.Confidence.Band, done.Path
		}
		printJSON(e.stdout, out)
	}
	if failed != nil {
		return fail(e, failed)
	}
	return exitOK
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
	case "retrieval":
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
