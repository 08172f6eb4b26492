package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

// MaxMessageBytes bounds one stored message's content, sources and trace each (MEDIUMTEXT holds 16 MiB).
const MaxMessageBytes = 4 << 20

const convColumns = `id, tenant_id, user_id, kb_ids, title, summary, created_at, updated_at, summary_upto`

func scanConversation(row interface{ Scan(...any) error }) (rag.Conversation, error) {
	var c rag.Conversation
	var kbs string
	var created, updated, upto int64
	if err := row.Scan(&c.ID, &c.Tenant, &c.User, &kbs, &c.Title, &c.Summary, &created, &updated, &upto); err != nil {
		return c, err
	}
	c.CreatedAt, c.UpdatedAt = fromMS(created), fromMS(updated)
	if upto != 0 {
		c.SummaryUpto = fromMS(upto)
	}
	if err := json.Unmarshal([]byte(kbs), &c.KBIDs); err != nil {
		return c, err
	}
	return c, nil
}

// CreateConversation inserts a conversation for tenant and user; an empty ID is generated and the title
// is cut to 200 characters.
func (s *DB) CreateConversation(ctx context.Context, c *rag.Conversation) error {
	const op = "sqldb.CreateConversation"
	if c.ID == "" {
		c.ID = rag.NewID("conv")
	}
	if err := validIDs(op, "tenant", c.Tenant, "user", c.User, "conversation id", c.ID); err != nil {
		return err
	}
	if err := rag.ValidateIDs("kb id", c.KBIDs); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	if c.KBIDs == nil {
		c.KBIDs = []string{}
	}
	if !utf8.ValidString(c.Title) {
		c.Title = strings.ToValidUTF8(c.Title, "")
	}
	if r := []rune(c.Title); len(r) > 200 {
		c.Title = string(r[:200])
	}
	kbs, _ := json.Marshal(c.KBIDs)
	now := s.now()
	c.CreatedAt, c.UpdatedAt = fromMS(ms(now)), fromMS(ms(now))
	_, err := s.db.ExecContext(ctx, `INSERT INTO conversations (`+convColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)`,
		c.ID, c.Tenant, c.User, string(kbs), c.Title, c.Summary, ms(now), ms(now))
	return s.classify(op, err)
}

// GetConversation returns the user's conversation; NotFound when it does not exist or belongs to another
// user or tenant.
func (s *DB) GetConversation(ctx context.Context, tenant, user, id string) (rag.Conversation, error) {
	const op = "sqldb.GetConversation"
	if err := validIDs(op, "tenant", tenant, "user", user, "conversation id", id); err != nil {
		return rag.Conversation{}, rag.E(op, rag.KindNotFound, err)
	}
	c, err := scanConversation(s.db.QueryRowContext(ctx, `SELECT `+convColumns+` FROM conversations WHERE tenant_id = ? AND user_id = ? AND id = ?`, tenant, user, id))
	return c, s.classify(op, err)
}

// ListConversations returns the user's conversations, most recently active first, at most limit (1-200).
func (s *DB) ListConversations(ctx context.Context, tenant, user string, limit int) ([]rag.Conversation, error) {
	const op = "sqldb.ListConversations"
	if err := validIDs(op, "tenant", tenant, "user", user); err != nil {
		return nil, err
	}
	limit = max(1, min(limit, 200))
	rows, err := s.db.QueryContext(ctx, `SELECT `+convColumns+` FROM conversations WHERE tenant_id = ? AND user_id = ?
		ORDER BY updated_at DESC, id LIMIT ?`, tenant, user, limit)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.Conversation{}
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, c)
	}
	return out, s.classify(op, rows.Err())
}

// MaxSummaryRunes bounds a stored conversation summary.
const MaxSummaryRunes = 2000

// SetConversationSummary stores the summary of the user's conversation covering the messages up to upto.
// It only moves forward: a summary covering less than the stored one is ignored (two answers racing).
func (s *DB) SetConversationSummary(ctx context.Context, tenant, user, id, summary string, upto time.Time) error {
	const op = "sqldb.SetConversationSummary"
	if err := validIDs(op, "tenant", tenant, "user", user, "conversation id", id); err != nil {
		return err
	}
	if !utf8.ValidString(summary) {
		summary = strings.ToValidUTF8(summary, "")
	}
	if r := []rune(summary); len(r) > MaxSummaryRunes {
		summary = string(r[:MaxSummaryRunes])
	}
	res, err := s.db.ExecContext(ctx, `UPDATE conversations SET summary = ?, summary_upto = ? WHERE tenant_id = ? AND user_id = ? AND id = ? AND summary_upto < ?`,
		summary, ms(upto), tenant, user, id, ms(upto))
	if err != nil {
		return s.classify(op, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := s.GetConversation(ctx, tenant, user, id); err != nil {
			return err // not the user's conversation
		}
	}
	return nil
}

// AppendMessage stores a message in the tenant's conversation and touches the conversation, in one
// transaction; NotFound when the conversation is not the tenant's.
func (s *DB) AppendMessage(ctx context.Context, m *rag.Message) error {
	const op = "sqldb.AppendMessage"
	if m.ID == "" {
		m.ID = rag.NewID("msg")
	}
	if err := validIDs(op, "tenant", m.Tenant, "conversation id", m.ConversationID, "message id", m.ID); err != nil {
		return err
	}
	if m.Role != "user" && m.Role != "assistant" {
		return rag.Errorf(op, rag.KindInvalid, "role must be user or assistant, got %q", m.Role)
	}
	if len(m.Content) > MaxMessageBytes || len(m.Sources) > MaxMessageBytes || len(m.Trace) > MaxMessageBytes {
		return rag.Errorf(op, rag.KindInvalid, "message larger than %d bytes", MaxMessageBytes)
	}
	for _, raw := range []json.RawMessage{m.Sources, m.Trace} {
		if len(raw) > 0 && !json.Valid(raw) {
			return rag.Errorf(op, rag.KindInvalid, "sources and trace must be JSON")
		}
	}
	orEmpty := func(r json.RawMessage, empty string) string {
		if len(r) == 0 {
			return empty
		}
		return string(r)
	}
	at := ms(s.now())
	return s.inTx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE conversations SET updated_at = ? WHERE tenant_id = ? AND id = ?`, at, m.Tenant, m.ConversationID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rag.Errorf(op, rag.KindNotFound, "no conversation %s", m.ConversationID)
		}
		// Messages of one conversation get strictly increasing times, so two written in the same
		// millisecond keep their order (the UPDATE above serialises writers of one conversation).
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(created_at) FROM messages WHERE tenant_id = ? AND conversation_id = ?`,
			m.Tenant, m.ConversationID).Scan(&last); err != nil {
			return err
		}
		if last.Valid && at <= last.Int64 {
			at = last.Int64 + 1
		}
		m.CreatedAt = fromMS(at)
		_, err = tx.ExecContext(ctx, `INSERT INTO messages (id, tenant_id, conversation_id, role, content, sources, trace, confidence, band,
			from_cache, is_fallback, prompt_tokens, completion_tokens, cost_usd, created_at) VALUES (`+placeholders(15)+`)`,
			m.ID, m.Tenant, m.ConversationID, m.Role, m.Content, orEmpty(m.Sources, "[]"), orEmpty(m.Trace, "[]"), m.Confidence, m.Band,
			m.FromCache, m.IsFallback, m.PromptTokens, m.CompletionTokens, m.CostUSD, at)
		return err
	})
}

// ListMessages returns the newest limit (1-500) messages of the tenant's conversation, oldest first.
func (s *DB) ListMessages(ctx context.Context, tenant, conversationID string, limit int) ([]rag.Message, error) {
	const op = "sqldb.ListMessages"
	if err := validIDs(op, "tenant", tenant, "conversation id", conversationID); err != nil {
		return nil, err
	}
	limit = max(1, min(limit, 500))
	rows, err := s.db.QueryContext(ctx, `SELECT id, conversation_id, role, content, sources, trace, confidence, band, from_cache, is_fallback,
		prompt_tokens, completion_tokens, cost_usd, created_at FROM messages WHERE tenant_id = ? AND conversation_id = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`, tenant, conversationID, limit)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.Message{}
	for rows.Next() {
		m := rag.Message{Tenant: tenant}
		var sources, trace string
		var created int64
		if err := rows.Scan(&m.ID, &m.ConversationID, &m.Role, &m.Content, &sources, &trace, &m.Confidence, &m.Band, &m.FromCache,
			&m.IsFallback, &m.PromptTokens, &m.CompletionTokens, &m.CostUSD, &created); err != nil {
			return nil, s.classify(op, err)
		}
		m.Sources, m.Trace, m.CreatedAt = json.RawMessage(sources), json.RawMessage(trace), fromMS(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.classify(op, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
