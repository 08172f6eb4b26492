package answer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
)

// RemoteTools are tools that other servers offer the agentic loop (the MCP servers of
// DOCMIND_MCP_SERVERS, mcp.Remote). The implementation bounds each call's time and size; everything a
// remote server returns, its tool descriptions included, is untrusted text.
type RemoteTools interface {
	// Tools lists the tools the agent may call (their names unique across servers); a server that cannot
	// be reached is left out.
	Tools(ctx context.Context) []llm.Tool
	// Call runs one tool with the model's JSON arguments. Errors: Invalid (an unknown tool, bad
	// arguments, a result too large), Unavailable (the server failed or timed out).
	Call(ctx context.Context, name string, args json.RawMessage) (RemoteResult, error)
}

// RemoteResult is one remote tool's answer.
type RemoteResult struct {
	Server, Tool string
	Text         string // the result's text content, already bounded by the implementation
}

// remoteTools adds the remote tools to the loop's own (never shadowing one) and names them; none for a
// question about chosen documents, which stays on them.
func (a *Agent) remoteTools(ctx context.Context, tools []llm.Tool, f rag.Filter) ([]llm.Tool, map[string]bool) {
	remote := map[string]bool{}
	if a.Remote == nil || len(f.DocumentIDs) > 0 {
		return tools, remote
	}
	for _, t := range a.Remote.Tools(ctx) {
		if !remote[t.Name] && !slices.ContainsFunc(tools, func(o llm.Tool) bool { return o.Name == t.Name }) {
			remote[t.Name] = true
			tools = append(tools, t)
		}
	}
	return tools, remote
}

// remoteTextRunes bounds what one remote result adds as evidence, like a web result.
const remoteTextRunes = 2000

// remoteCall runs a remote tool and returns its result as one piece of evidence, cited like a source
// ("mcp:<server>/<tool>"); calls past MaxRemoteCalls in one question are refused.
func (a *Agent) remoteCall(ctx context.Context, call llm.ToolCall, used *int) (string, []rank.Evidence, error) {
	const op = "answer.agent"
	args := strings.TrimSpace(call.Arguments)
	if args == "" {
		args = "{}"
	}
	q := lang.Truncate(lang.OneLine(args), 200)
	if !json.Valid([]byte(args)) || !utf8.ValidString(args) {
		return q, nil, rag.E(op, rag.KindInvalid, callError("arguments are not valid JSON"))
	}
	limit := a.MaxRemoteCalls
	if limit <= 0 {
		limit = 4
	}
	if *used >= limit {
		return q, nil, rag.E(op, rag.KindInvalid, callError(fmt.Sprintf("at most %d calls to other servers per question", limit)))
	}
	*used++
	res, err := a.Remote.Call(ctx, call.Name, json.RawMessage(args))
	if err != nil {
		return q, nil, err
	}
	text := lang.Truncate(lang.OneLine(res.Text), remoteTextRunes)
	if strings.TrimSpace(text) == "" {
		return q, nil, nil
	}
	id := "mcp:" + res.Server + "/" + res.Tool
	ev := rank.Evidence{ChunkID: fmt.Sprintf("%s#%d", id, *used), DocumentID: id, KBID: "mcp", FileName: id,
		Chapter: lang.Truncate(lang.OneLine(q), 200), Text: text, ChildText: text, Score: 0.5}
	return q, []rank.Evidence{ev}, nil
}
