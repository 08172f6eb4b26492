package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/sse"
)

// chatRequest is the body of POST /api/chat.
type chatRequest struct {
	Question string `json:"question"`
	// KBs names the knowledge bases to search, by id or name; empty searches the conversation's, or all
	// of the caller's.
	KBs []string `json:"kbs,omitempty"`
	// Documents limits the answer to these documents (ids), the SELECTED_DOC path.
	Documents []string `json:"documents,omitempty"`
	// ConversationID continues a conversation; empty starts one (when history is stored).
	ConversationID string `json:"conversation_id,omitempty"`
	// Filter restricts the answer's evidence to documents whose metadata passes it.
	Filter json.RawMessage `json:"filter,omitempty"`
}

// historyTurns is how many earlier messages a question loads (the prompt keeps the newest that fit).
const historyTurns = 20

// maxChatKBs bounds the knowledge bases one question may name.
const maxChatKBs = 32

// chat streams the answer as Server-Sent Events (DESIGN.md section 7). Errors found before the stream
// starts (bad body, unknown knowledge base) are plain JSON errors with their status; errors after it
// starts are an `error` event.
func (l *library) chat(w http.ResponseWriter, r *http.Request) {
	p, ok := l.h.principal(w, r)
	if !ok {
		return
	}
	tenant := p.Tenant
	var in chatRequest
	if err := decodeBody(w, r, &in, `{"question": ..., "kbs": [...]}`); err != nil {
		l.fail(w, r, err)
		return
	}
	req, err := l.question(r.Context(), p, in.Question, in.KBs, in.Documents)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	// limits before anything is stored: a refused request leaves no conversation or message behind
	admitted, limitsDown := l.h.admit(w, r, p)
	if !admitted {
		return
	}
	r, meter := metered(r)
	var done *answer.Done
	defer func() { l.h.charge(r.Context(), p, meter, done) }()
	// the knowledge bases are re-checked once the conversation's are known (a role may have been revoked
	// since), before the question is stored
	restrict := func() error {
		if err := l.restrictKBs(r.Context(), p, &req); err != nil {
			return err
		}
		return l.restrictByFilter(r.Context(), p, in.Filter, &req)
	}
	var conv *turn
	if l.h.d.Conversations != nil {
		conv, err = l.openConversation(r, in, &req, restrict)
	} else {
		err = restrict()
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	req.ConversationID, req.MessageID = conv.conversationID(), conv.messageID() // the cache names the turn it replays
	ctx, cancel := context.WithTimeout(r.Context(), l.h.d.ChatTimeout)
	defer cancel()
	if id := conv.conversationID(); id != "" {
		// named before the answer: a client that stops it (its done, which names it too, never comes)
		// still knows which conversation holds the question
		w.Header().Set("X-Docmind-Conversation", id)
	}
	stream, err := sse.Start(w)
	if err != nil {
		return // the client is gone
	}
	done, err = l.run(ctx, req, stream.Send)
	if err != nil && errors.Is(r.Context().Err(), context.Canceled) {
		// the client hung up (the page's stop button): the answer keeps what it was sent. A request
		// context past its deadline is not a stop: on Lambda, streamcap.Reserve ends it early so that the
		// stream still gets its terminal error event below (STR-05).
		l.keepStopped(conv, stream.Events)
	} else if err != nil {
		kind := rag.KindOf(err)
		if code := Status(kind); code >= 500 {
			l.h.d.Logger.Error("chat failed", "kind", kind.String(), "err", err)
		}
		_ = stream.Send(answer.EventError, answer.ErrorEvent{Code: kind.String(), Message: publicMessage(err)})
	} else {
		if limitsDown {
			// limits failed open: the answer says so in degraded, both as stored and as streamed
			addDegraded(done, "limits")
		}
		l.finish(ctx, conv, stream, done)
	}
	// One line per question: the span timeline of the same events the client saw and the trace stores.
	attrs := []any{"tenant", tenant, "conversation", conv.conversationID(), "message", conv.messageID(), "spans", sse.Spans(stream.Events)}
	if done != nil {
		attrs = append(attrs, "path", done.Path, "band", done.Confidence.Band, "answerer", done.Answerer, "degraded", done.Degraded)
	}
	l.h.d.Logger.Info("chat", attrs...)
}

// question builds the pipeline's request: every knowledge base named (by id or name) and every selected
// document must be one the caller may read in its tenant, and the request must pass the pipeline's
// checks. Callers then apply restrictKBs once the request's knowledge bases are final.
func (l *library) question(ctx context.Context, p rag.Principal, question string, kbs, documents []string) (answer.Request, error) {
	tenant := p.Tenant
	req := answer.Request{Tenant: tenant, User: p.UserID, Question: question}
	if len(kbs) > maxChatKBs || len(documents) > maxChatKBs {
		return req, rag.Errorf("httpapi", rag.KindInvalid, "at most %d knowledge bases and %d documents per question", maxChatKBs, maxChatKBs)
	}
	roles, err := l.h.roles(ctx, p)
	if err != nil {
		return req, err
	}
	for _, key := range kbs {
		kb, err := l.resolveKB(ctx, tenant, key)
		if err == nil {
			err = requireKB(roles, kb, rag.KBReader)
		}
		if err != nil {
			return req, err
		}
		req.KBIDs = append(req.KBIDs, kb.ID)
	}
	for _, id := range documents {
		doc, err := l.lib.GetDocument(ctx, tenant, id)
		if err == nil && (roles.Of(doc.KBID) < rag.KBReader || doc.Status == rag.StatusDeleted) {
			err = rag.E("httpapi", rag.KindNotFound, nil)
		}
		if err == nil {
			err = l.checkReadable(ctx, p, doc) // its source's access list
		}
		if err != nil {
			if rag.Is(err, rag.KindInvalid) || rag.Is(err, rag.KindNotFound) {
				err = rag.Errorf("httpapi", rag.KindNotFound, "no document %q", id)
			}
			return req, err
		}
		if len(kbs) > 0 && !slices.Contains(req.KBIDs, doc.KBID) {
			return req, rag.Errorf("httpapi", rag.KindInvalid, "document %q is not in the knowledge bases named", id)
		}
		req.DocumentIDs = append(req.DocumentIDs, doc.ID)
	}
	return req, l.h.d.Chat.Check(req)
}

// restrictKBs scopes a request to what the caller may read: a tenant admin keeps its knowledge bases
// (none named means every one); anyone else gets the named ones it may still read, or, with none named,
// every one it may read. Nothing readable is NotFound: an empty list would mean "the whole tenant".
func (l *library) restrictKBs(ctx context.Context, p rag.Principal, req *answer.Request) error {
	roles, err := l.h.roles(ctx, p)
	if err != nil || roles.All() {
		return err
	}
	all, err := l.lib.ListKBs(ctx, p.Tenant)
	if err != nil {
		return err
	}
	var ids []string
	for _, kb := range roles.Readable(all) {
		if len(req.KBIDs) == 0 || slices.Contains(req.KBIDs, kb.ID) {
			ids = append(ids, kb.ID)
		}
	}
	if len(ids) == 0 {
		return rag.Errorf("httpapi", rag.KindNotFound, "no knowledge base is shared with you yet; ask an owner to grant you one")
	}
	req.KBIDs = ids
	return nil
}

// run runs the pipeline; a panic becomes an Internal error (logged with its stack) so that the stream
// still ends with an error event and nothing else is affected.
func (l *library) run(ctx context.Context, req answer.Request, emit answer.Emit) (done *answer.Done, err error) {
	defer func() {
		if p := recover(); p != nil {
			l.h.d.Logger.Error("chat panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			done, err = nil, rag.Errorf("httpapi.chat", rag.KindInternal, "panic: %v", p)
		}
	}()
	return l.h.d.Chat.Run(ctx, req, emit)
}

// turn is where one question's answer is stored: the conversation and the assistant message's id.
type turn struct {
	tenant, user string // the asker's, as the request named them
	conv         rag.Conversation
	msgID        string
}

func (t *turn) conversationID() string {
	if t == nil {
		return ""
	}
	return t.conv.ID
}

func (t *turn) messageID() string {
	if t == nil {
		return ""
	}
	return t.msgID
}

// openConversation loads or creates the caller's conversation, loads its history into the request, runs
// gate once the request's knowledge bases are final (nothing is written when it fails) and stores the
// question; the answer is stored by finish.
func (l *library) openConversation(r *http.Request, in chatRequest, req *answer.Request, gate func() error) (*turn, error) {
	const op = "httpapi.chat"
	store := l.h.d.Conversations
	var conv rag.Conversation
	var err error
	if in.ConversationID != "" {
		if conv, err = store.GetConversation(r.Context(), req.Tenant, req.User, in.ConversationID); err != nil {
			if rag.Is(err, rag.KindNotFound) {
				return nil, rag.Errorf(op, rag.KindNotFound, "no conversation %q", in.ConversationID)
			}
			return nil, err
		}
		if len(req.KBIDs) == 0 {
			req.KBIDs = conv.KBIDs
		}
		earlier, err := store.ListMessages(r.Context(), req.Tenant, conv.ID, historyTurns)
		if err == nil {
			conv, earlier, err = l.visibleHistory(r, conv, earlier)
		}
		if err != nil {
			return nil, err
		}
		for _, m := range earlier {
			req.History = append(req.History, llm.Message{Role: m.Role, Content: m.Content})
			req.HistoryAt = append(req.HistoryAt, m.CreatedAt)
		}
		req.Summary, req.SummaryUpto = conv.Summary, conv.SummaryUpto
		if err := gate(); err != nil {
			return nil, err
		}
	} else {
		// the conversation keeps the knowledge bases asked for (none: whatever the caller may read at each
		// question), not this question's permitted set
		conv = rag.Conversation{Tenant: req.Tenant, User: req.User, KBIDs: slices.Clone(req.KBIDs), Title: strings.TrimSpace(req.Question)}
		if err := gate(); err != nil {
			return nil, err
		}
		if err := store.CreateConversation(r.Context(), &conv); err != nil {
			return nil, err
		}
	}
	if err := store.AppendMessage(r.Context(), &rag.Message{Tenant: req.Tenant, ConversationID: conv.ID, Role: "user", Content: req.Question}); err != nil {
		return nil, err
	}
	return &turn{tenant: req.Tenant, user: req.User, conv: conv, msgID: rag.NewID("msg")}, nil
}

// stoppedDone closes the stored trace of an answer the client stopped: done as far as the answer went,
// marked partial and stopped. It is stored only; nobody is left to send it to.
type stoppedDone struct {
	*answer.Done
	Stopped bool `json:"stopped"`
}

// keepStopped stores an answer the client stopped as the conversation's assistant message: the text and
// sources it was sent, its trace, and a closing done marked partial and stopped, so that the reopened
// conversation shows what arrived. Nothing is stored without a conversation.
func (l *library) keepStopped(t *turn, sent []sse.Event) {
	if t == nil {
		return
	}
	d := stoppedAnswer(sent)
	_ = l.store(context.Background(), t, withDone(sent, stoppedDone{Done: d, Stopped: true}), d) // a failure is logged by store
}

// stoppedAnswer rebuilds what a stopped answer had reached from the events sent: the path and sources of
// start and the text of the tokens. It has no confidence, claims or timings: the pipeline did not finish.
func stoppedAnswer(sent []sse.Event) *answer.Done {
	d := &answer.Done{Partial: true, Sources: []answer.Source{}, Degraded: []string{}, Recommendations: []answer.Recommendation{}, Claims: []answer.Claim{}}
	var text strings.Builder
	for _, e := range sent {
		switch e.Name {
		case answer.EventStart:
			var s answer.StartEvent
			if json.Unmarshal(e.Data, &s) == nil && s.Sources != nil {
				d.Path, d.Sources = s.Path, s.Sources
			}
		case answer.EventToken:
			var tok answer.TokenEvent
			if json.Unmarshal(e.Data, &tok) == nil {
				text.WriteString(tok.Text)
			}
		}
	}
	d.Answer = text.String()
	return d
}

// withDone is the trace to store: the events sent plus a closing done (sent right after, or never).
func withDone(sent []sse.Event, done any) []sse.Event {
	trace := append([]sse.Event(nil), sent...)
	if data, err := sse.Encode(done); err == nil {
		trace = append(trace, sse.Event{Name: answer.EventDone, Data: data})
	}
	return trace
}

// finish stores the answer (when the question belongs to a conversation) and then sends done, so that
// done says where the answer was stored. A failed store is reported in degraded ("history"), not fatal:
// the user still gets the answer.
func (l *library) finish(ctx context.Context, t *turn, stream *sse.Writer, done *answer.Done) {
	if t != nil {
		done.ConversationID, done.MessageID = t.conv.ID, t.msgID
		if err := l.store(ctx, t, withDone(stream.Events, done), done); err != nil {
			done.ConversationID, done.MessageID = "", ""
			addDegraded(done, "history")
		}
	}
	_ = stream.Send(answer.EventDone, done)
}

// store saves the answer as the conversation's assistant message, with its trace: every event sent so
// far plus the closing done (withDone), since only done carries the stage timings, usage and cost.
func (l *library) store(ctx context.Context, t *turn, trace []sse.Event, d *answer.Done) error {
	// The client leaving must not lose the answer it was sent.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	store := l.h.d.Conversations
	sources, err := json.Marshal(d.Sources)
	if err != nil {
		return err
	}
	traceJSON, err := json.Marshal(trace)
	if err != nil {
		return err
	}
	m := rag.Message{ID: t.msgID, Tenant: t.tenant, ConversationID: t.conv.ID, Role: "assistant", Content: d.Answer,
		Sources: sources, Trace: traceJSON, Confidence: d.Confidence.Score, Band: d.Confidence.Band, FromCache: d.FromCache,
		IsFallback: d.IsFallback, PromptTokens: d.Usage.PromptTokens, CompletionTokens: d.Usage.CompletionTokens, CostUSD: d.CostUSD}
	if err := store.AppendMessage(ctx, &m); err != nil {
		l.h.d.Logger.Error("chat: storing the answer failed", "conversation", t.conv.ID, "err", err)
		return err
	}
	if d.NewSummary != "" {
		// a lost summary only costs the small model a call on the next question
		if err := store.SetConversationSummary(ctx, t.tenant, t.user, t.conv.ID, d.NewSummary, d.NewSummaryUpto); err != nil {
			l.h.d.Logger.Warn("chat: storing the conversation summary failed", "conversation", t.conv.ID, "err", err)
		}
	}
	return nil
}

// caller returns the caller's tenant and user, or writes the error and returns false.
func (l *library) caller(w http.ResponseWriter, r *http.Request) (string, string, bool) {
	p, ok := l.h.principal(w, r)
	return p.Tenant, p.UserID, ok
}

func (l *library) listConversations(w http.ResponseWriter, r *http.Request) {
	tenant, user, ok := l.caller(w, r)
	if !ok {
		return
	}
	list, err := l.h.d.Conversations.ListConversations(r.Context(), tenant, user, 100)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"conversations": withoutSummaries(list)})
}

func (l *library) listMessages(w http.ResponseWriter, r *http.Request) {
	p, ok := l.h.principal(w, r)
	if !ok {
		return
	}
	conv, err := l.h.d.Conversations.GetConversation(r.Context(), p.Tenant, p.UserID, r.PathValue("id"))
	if err != nil {
		l.fail(w, r, err)
		return
	}
	msgs, err := l.h.d.Conversations.ListMessages(r.Context(), p.Tenant, conv.ID, 500)
	var readable kbReadable
	if err == nil {
		readable, err = l.readableNow(r.Context(), p)
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	// answers drawn from knowledge bases the caller can no longer read are withheld (conversation_access.go)
	conv, shown := withholdUnreadable(conv, msgs, readable)
	WriteJSON(w, http.StatusOK, map[string]any{"conversation": conv, "messages": shown})
}

func (l *library) listMemories(w http.ResponseWriter, r *http.Request) {
	tenant, user, ok := l.caller(w, r)
	if !ok {
		return
	}
	list, err := l.h.d.Memories.List(r.Context(), tenant, user)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"memories": list})
}

func (l *library) forgetMemory(w http.ResponseWriter, r *http.Request) {
	tenant, user, ok := l.caller(w, r)
	if !ok {
		return
	}
	if err := l.h.d.Memories.Forget(r.Context(), tenant, user, r.PathValue("id")); err != nil {
		l.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func addDegraded(d *answer.Done, component string) {
	if !slices.Contains(d.Degraded, component) {
		d.Degraded = append(d.Degraded, component)
	}
}
