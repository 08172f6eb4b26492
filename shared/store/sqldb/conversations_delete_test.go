package sqldb_test

import (
	"context"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqlite"
)

func TestDeleteConversationIsScopedToTenantAndUser(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c := rag.Conversation{Tenant: "t1", User: "alice", Title: "leave"}
	if err := db.CreateConversation(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendMessage(ctx, &rag.Message{Tenant: "t1", ConversationID: c.ID, Role: "user", Content: "how many days?"}); err != nil {
		t.Fatal(err)
	}
	for _, who := range [][3]string{{"t1", "bob", c.ID}, {"t2", "alice", c.ID}, {"t1", "alice", "conv_missing"}, {"t1", "alice", "../x"}} {
		if err := db.DeleteConversation(ctx, who[0], who[1], who[2]); !rag.Is(err, rag.KindNotFound) {
			t.Errorf("DeleteConversation%v = %v, want NotFound", who, err)
		}
	}
	if _, err := db.GetConversation(ctx, "t1", "alice", c.ID); err != nil {
		t.Fatalf("a refused delete removed the conversation: %v", err)
	}
	if err := db.DeleteConversation(ctx, "t1", "alice", c.ID); err != nil {
		t.Fatalf("DeleteConversation by its owner = %v", err)
	}
	if _, err := db.GetConversation(ctx, "t1", "alice", c.ID); !rag.Is(err, rag.KindNotFound) {
		t.Errorf("GetConversation after delete = %v, want NotFound", err)
	}
	if msgs, err := db.ListMessages(ctx, "t1", c.ID, 10); err != nil || len(msgs) != 0 {
		t.Errorf("messages after delete = %d, %v; want none", len(msgs), err)
	}
	if err := db.DeleteConversation(ctx, "t1", "alice", c.ID); !rag.Is(err, rag.KindNotFound) {
		t.Errorf("second delete = %v, want NotFound", err)
	}
}
