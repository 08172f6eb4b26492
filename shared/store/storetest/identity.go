package storetest

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// TestIdentity is the contract of the identity tables (issue 10): users, API keys, knowledge-base
// members and the audit log, every read scoped by tenant.
func TestIdentity(t *testing.T, open func(t *testing.T) *sqldb.DB) {
	migrated := func(t *testing.T) *sqldb.DB {
		db := open(t)
		if _, err := db.Migrate(ctxT(t)); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return db
	}

	t.Run("Users", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		u := rag.User{Tenant: "t1", Email: "  Alice@Example.COM "}
		must(t, db.CreateUser(ctx, &u))
		if u.Email != "alice@example.com" || u.Role != rag.RoleMember || !strings.HasPrefix(u.ID, "usr_") {
			t.Fatalf("created user = %+v; want normalised email, member role, generated id", u)
		}
		dup := rag.User{Tenant: "t1", Email: "alice@example.com"}
		checkKind(t, "duplicate email", rag.KindConflict, db.CreateUser(ctx, &dup))
		other := rag.User{Tenant: "t2", Email: "alice@example.com", Role: rag.RoleAdmin}
		must(t, db.CreateUser(ctx, &other)) // the same email in another tenant is another user
		got, err := db.GetUserByEmail(ctx, "t1", "ALICE@example.com")
		if err != nil || got.ID != u.ID {
			t.Fatalf("GetUserByEmail = %+v, %v; want %s", got, err, u.ID)
		}
		checkKind(t, "user of another tenant", rag.KindNotFound, second(db.GetUser(ctx, "t2", u.ID)))
		checkKind(t, "bad role", rag.KindInvalid, db.CreateUser(ctx, &rag.User{Tenant: "t1", Email: "b@x.io", Role: "root"}))
		checkKind(t, "bad email", rag.KindInvalid, db.CreateUser(ctx, &rag.User{Tenant: "t1", Email: "not-an-email"}))
		must(t, db.SetUserSubject(ctx, "t1", u.ID, "cognito-sub-1"))
		must(t, db.SetUserSubject(ctx, "t1", u.ID, "cognito-sub-1")) // relinking the same subject is harmless
		checkKind(t, "a second subject for a linked user", rag.KindConflict, db.SetUserSubject(ctx, "t1", u.ID, "cognito-sub-2"))
		bySub, err := db.GetUserBySubject(ctx, "t1", "cognito-sub-1")
		if err != nil || bySub.ID != u.ID {
			t.Fatalf("GetUserBySubject = %+v, %v", bySub, err)
		}
		checkKind(t, "subject in another tenant", rag.KindNotFound, second(db.GetUserBySubject(ctx, "t2", "cognito-sub-1")))
		list, err := db.ListUsers(ctx, "t1")
		if err != nil || len(list) != 1 {
			t.Fatalf("ListUsers(t1) = %d users, %v; want 1", len(list), err)
		}
	})

	t.Run("APIKeys", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		u := rag.User{Tenant: "t1", Email: "a@x.io"}
		must(t, db.CreateUser(ctx, &u))
		k := rag.APIKey{Tenant: "t1", UserID: u.ID, Hash: strings.Repeat("ab", 32), Prefix: "dm_abcdefg", Name: "laptop"}
		must(t, db.CreateAPIKey(ctx, &k))
		checkKind(t, "key for a user of another tenant", rag.KindNotFound,
			db.CreateAPIKey(ctx, &rag.APIKey{Tenant: "t2", UserID: u.ID, Hash: strings.Repeat("cd", 32), Prefix: "dm_x"}))
		checkKind(t, "same hash twice", rag.KindConflict,
			db.CreateAPIKey(ctx, &rag.APIKey{Tenant: "t1", UserID: u.ID, Hash: k.Hash, Prefix: "dm_y"}))
		gotK, gotU, err := db.LookupAPIKey(ctx, k.Hash)
		if err != nil || gotK.ID != k.ID || gotU.ID != u.ID || gotK.Tenant != "t1" {
			t.Fatalf("LookupAPIKey = %+v, %+v, %v", gotK, gotU, err)
		}
		checkKind(t, "unknown hash", rag.KindNotFound, thirdErr(db.LookupAPIKey(ctx, strings.Repeat("00", 32))))
		must(t, db.TouchAPIKey(ctx, "t1", k.ID))
		keys, err := db.ListAPIKeys(ctx, "t1", "")
		if err != nil || len(keys) != 1 || keys[0].LastUsedAt.IsZero() {
			t.Fatalf("ListAPIKeys after touch = %+v, %v; want one key with last_used_at", keys, err)
		}
		if other, err := db.ListAPIKeys(ctx, "t2", ""); err != nil || len(other) != 0 {
			t.Fatalf("ListAPIKeys(t2) = %d keys, %v; want 0", len(other), err)
		}
		checkKind(t, "revoke from another tenant", rag.KindNotFound, db.RevokeAPIKey(ctx, "t2", k.ID))
		must(t, db.RevokeAPIKey(ctx, "t1", k.ID))
		must(t, db.RevokeAPIKey(ctx, "t1", k.ID)) // idempotent
		checkKind(t, "revoked key", rag.KindNotFound, thirdErr(db.LookupAPIKey(ctx, k.Hash)))
		byID, err := db.GetAPIKey(ctx, k.ID)
		if err != nil || byID.RevokedAt.IsZero() {
			t.Fatalf("GetAPIKey after revoke = %+v, %v; want revoked_at set", byID, err)
		}
	})

	t.Run("Members", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		kb := rag.KnowledgeBase{Tenant: "t1", Name: "handbook"}
		must(t, db.CreateKB(ctx, &kb))
		u := rag.User{Tenant: "t1", Email: "a@x.io"}
		must(t, db.CreateUser(ctx, &u))
		stranger := rag.User{Tenant: "t2", Email: "s@x.io"}
		must(t, db.CreateUser(ctx, &stranger))
		must(t, db.SetMember(ctx, "t1", kb.ID, u.ID, rag.KBReader))
		must(t, db.SetMember(ctx, "t1", kb.ID, u.ID, rag.KBEditor)) // replaces
		checkKind(t, "member from another tenant", rag.KindNotFound, db.SetMember(ctx, "t1", kb.ID, stranger.ID, rag.KBReader))
		checkKind(t, "grant on another tenant's kb", rag.KindNotFound, db.SetMember(ctx, "t2", kb.ID, stranger.ID, rag.KBReader))
		roles, err := db.MemberRoles(ctx, "t1", u.ID)
		if err != nil || len(roles) != 1 || roles[kb.ID] != rag.KBEditor {
			t.Fatalf("MemberRoles = %v, %v; want editor on %s", roles, err, kb.ID)
		}
		members, err := db.ListMembers(ctx, "t1", kb.ID)
		if err != nil || len(members) != 1 || members[0].Email != "a@x.io" || members[0].Role != "editor" {
			t.Fatalf("ListMembers = %+v, %v", members, err)
		}
		must(t, db.RemoveMember(ctx, "t1", kb.ID, u.ID))
		checkKind(t, "remove twice", rag.KindNotFound, db.RemoveMember(ctx, "t1", kb.ID, u.ID))
		must(t, db.SetMember(ctx, "t1", kb.ID, u.ID, rag.KBOwner))
		must(t, db.DeleteKB(ctx, "t1", kb.ID))
		if roles, err := db.MemberRoles(ctx, "t1", u.ID); err != nil || len(roles) != 0 {
			t.Fatalf("MemberRoles after the kb was deleted = %v, %v; want none", roles, err)
		}
	})

	t.Run("CreateKBOwnedBy", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		u := rag.User{Tenant: "t1", Email: "a@x.io"}
		must(t, db.CreateUser(ctx, &u))
		stranger := rag.User{Tenant: "t2", Email: "s@x.io"}
		must(t, db.CreateUser(ctx, &stranger))
		kb := rag.KnowledgeBase{Tenant: "t1", Name: "handbook", Description: "d"}
		must(t, db.CreateKBOwnedBy(ctx, &kb, u.ID))
		if got, err := db.GetKBByName(ctx, "t1", "handbook"); err != nil || got.ID != kb.ID || got.Description != "d" {
			t.Fatalf("GetKBByName = %+v, %v; want %s", got, err, kb.ID)
		}
		if members, err := db.ListMembers(ctx, "t1", kb.ID); err != nil || len(members) != 1 || members[0].UserID != u.ID || members[0].Role != "owner" {
			t.Fatalf("ListMembers = %+v, %v; want the creator as owner", members, err)
		}
		if by, err := db.KBCreator(ctx, "t1", kb.ID); err != nil || by != u.ID {
			t.Fatalf("KBCreator = %q, %v; want the member who created it, %s", by, err, u.ID)
		}
		plain := rag.KnowledgeBase{Tenant: "t1", Name: "operator's"}
		must(t, db.CreateKB(ctx, &plain))
		if by, err := db.KBCreator(ctx, "t1", plain.ID); err != nil || by != "" {
			t.Fatalf("KBCreator of CreateKB's = %q, %v; want empty (no member created it)", by, err)
		}
		checkKind(t, "KBCreator of another tenant's", rag.KindNotFound, second(db.KBCreator(ctx, "t2", kb.ID)))
		must(t, db.SetMember(ctx, "t1", kb.ID, u.ID, rag.KBEditor))
		if by, err := db.KBCreator(ctx, "t1", kb.ID); err != nil || by != u.ID {
			t.Fatalf("KBCreator after the creator is demoted = %q, %v; want still %s", by, err, u.ID)
		}
		same := rag.KnowledgeBase{Tenant: "t1", Name: "handbook"}
		checkKind(t, "a name in use", rag.KindConflict, db.CreateKBOwnedBy(ctx, &same, u.ID))
		foreign := rag.KnowledgeBase{Tenant: "t1", Name: "guide"}
		checkKind(t, "an owner of another tenant", rag.KindNotFound, db.CreateKBOwnedBy(ctx, &foreign, stranger.ID))
		checkKind(t, "nothing created without its owner", rag.KindNotFound, second(db.GetKBByName(ctx, "t1", "guide")))
		bad := rag.KnowledgeBase{Tenant: "t1", Name: "a/b"}
		checkKind(t, "a bad name", rag.KindInvalid, db.CreateKBOwnedBy(ctx, &bad, u.ID))
	})

	t.Run("Audit", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		for _, a := range []string{"key.create", "kb.grant", "kb.delete"} {
			must(t, db.AppendAudit(ctx, &rag.AuditEntry{Tenant: "t1", Actor: "usr_1", Action: a, Target: "x"}))
		}
		must(t, db.AppendAudit(ctx, &rag.AuditEntry{Tenant: "t2", Actor: "usr_2", Action: "key.create", Target: "y"}))
		checkKind(t, "no actor", rag.KindInvalid, db.AppendAudit(ctx, &rag.AuditEntry{Tenant: "t1", Action: "x"}))
		list, err := db.ListAudit(ctx, "t1", 10)
		if err != nil || len(list) != 3 || list[0].Action != "kb.delete" {
			t.Fatalf("ListAudit(t1) = %+v, %v; want 3 entries, newest (kb.delete) first", list, err)
		}
	})
}

func thirdErr[A, B any](_ A, _ B, err error) error { return err }
