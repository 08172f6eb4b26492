package sqldb

import (
	"context"
	"database/sql"

	"github.com/docmind/docmind/shared/rag"
)

// DeleteConversation removes the user's conversation and its messages in one transaction. NotFound when
// it does not exist or belongs to another user or tenant, so that a caller cannot tell someone else's
// conversation from a missing one.
func (s *DB) DeleteConversation(ctx context.Context, tenant, user, id string) error {
	const op = "sqldb.DeleteConversation"
	if err := validIDs(op, "tenant", tenant, "user", user, "conversation id", id); err != nil {
		return rag.E(op, rag.KindNotFound, err)
	}
	return s.inTx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE tenant_id = ? AND user_id = ? AND id = ?`, tenant, user, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rag.Errorf(op, rag.KindNotFound, "no conversation %s", id)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM messages WHERE tenant_id = ? AND conversation_id = ?`, tenant, id)
		return err
	})
}
