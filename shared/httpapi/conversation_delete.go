package httpapi

import (
	"context"
	"net/http"

	"github.com/docmind/docmind/shared/rag"
)

// conversationDeleter is the store's delete, when it has one (sqldb.DB does).
type conversationDeleter interface {
	DeleteConversation(ctx context.Context, tenant, user, id string) error
}

// deleteConversation removes the caller's conversation with its messages: 204, or 404 for anyone
// else's (indistinguishable from a missing one).
func (l *library) deleteConversation(w http.ResponseWriter, r *http.Request) {
	tenant, user, ok := l.caller(w, r)
	if !ok {
		return
	}
	del, ok := l.h.d.Conversations.(conversationDeleter)
	if !ok {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "deleting conversations is not enabled here"))
		return
	}
	if err := del.DeleteConversation(r.Context(), tenant, user, r.PathValue("id")); err != nil {
		l.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
