package storetest

import (
	"fmt"
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
		checkKind(t, "revoke from another tenant", rag.KindNotFound, second(db.RevokeAPIKey(ctx, "t2", k.ID)))
		if changed, err := db.RevokeAPIKey(ctx, "t1", k.ID); err != nil || !changed {
			t.Fatalf("RevokeAPIKey = %v, %v; want true (this call revoked it)", changed, err)
		}
		if changed, err := db.RevokeAPIKey(ctx, "t1", k.ID); err != nil || changed {
			t.Fatalf("RevokeAPIKey again = %v, %v; want false, no error (already revoked)", changed, err)
		}
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
		if m, err := db.GetMember(ctx, "t1", kb.ID, u.ID); err != nil || m.Role != "editor" || m.Email != "a@x.io" || m.CreatedAt.IsZero() {
			t.Fatalf("GetMember = %+v, %v; want editor with email and grant time", m, err)
		}
		checkKind(t, "GetMember from another tenant", rag.KindNotFound, second(db.GetMember(ctx, "t2", kb.ID, u.ID)))
		must(t, db.RemoveMember(ctx, "t1", kb.ID, u.ID))
		checkKind(t, "remove twice", rag.KindNotFound, db.RemoveMember(ctx, "t1", kb.ID, u.ID))
		must(t, db.SetMember(ctx, "t1", kb.ID, u.ID, rag.KBOwner))
		must(t, db.DeleteKB(ctx, "t1", kb.ID))
		if roles, err := db.MemberRoles(ctx, "t1", u.ID); err != nil || len(roles) != 0 {
			t.Fatalf("MemberRoles after the kb was deleted = %v, %v; want none", roles, err)
		}
	})

	t.Run("SetRoleAndDelete", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		kb := rag.KnowledgeBase{Tenant: "t1", Name: "handbook"}
		must(t, db.CreateKB(ctx, &kb))
		u := rag.User{Tenant: "t1", Email: "a@x.io", Role: rag.RoleAdmin}
		must(t, db.CreateUser(ctx, &u))
		keep := rag.User{Tenant: "t1", Email: "k@x.io"}
		must(t, db.CreateUser(ctx, &keep))
		must(t, db.SetUserRole(ctx, "t1", u.ID, rag.RoleMember))
		must(t, db.SetUserRole(ctx, "t1", u.ID, rag.RoleMember)) // unchanged is not NotFound
		if got, err := db.GetUser(ctx, "t1", u.ID); err != nil || got.Role != rag.RoleMember {
			t.Fatalf("after SetUserRole: %+v, %v; want member", got, err)
		}
		checkKind(t, "SetUserRole in another tenant", rag.KindNotFound, db.SetUserRole(ctx, "t2", u.ID, rag.RoleAdmin))
		checkKind(t, "SetUserRole to a bad role", rag.KindInvalid, db.SetUserRole(ctx, "t1", u.ID, "root"))
		for i, hash := range []string{strings.Repeat("ab", 32), strings.Repeat("cd", 32)} {
			must(t, db.CreateAPIKey(ctx, &rag.APIKey{Tenant: "t1", UserID: u.ID, Hash: hash, Prefix: fmt.Sprintf("dm_%d", i)}))
		}
		kept := rag.APIKey{Tenant: "t1", UserID: keep.ID, Hash: strings.Repeat("ef", 32), Prefix: "dm_k"}
		must(t, db.CreateAPIKey(ctx, &kept))
		must(t, db.SetMember(ctx, "t1", kb.ID, u.ID, rag.KBOwner))
		must(t, db.SetMember(ctx, "t1", kb.ID, keep.ID, rag.KBReader))
		checkKind(t, "DeleteUser in another tenant", rag.KindNotFound, second(db.DeleteUser(ctx, "t2", u.ID)))
		if n, err := db.DeleteUser(ctx, "t1", u.ID); err != nil || n != 2 {
			t.Fatalf("DeleteUser = %d keys revoked, %v; want 2", n, err)
		}
		checkKind(t, "the deleted user", rag.KindNotFound, second(db.GetUser(ctx, "t1", u.ID)))
		checkKind(t, "a deleted user's key", rag.KindNotFound, thirdErr(db.LookupAPIKey(ctx, strings.Repeat("ab", 32))))
		if roles, err := db.MemberRoles(ctx, "t1", u.ID); err != nil || len(roles) != 0 {
			t.Fatalf("MemberRoles of the deleted user = %v, %v; want none", roles, err)
		}
		if _, got, err := db.LookupAPIKey(ctx, kept.Hash); err != nil || got.ID != keep.ID {
			t.Fatalf("another user's key after the delete: %+v, %v", got, err)
		}
		if members, err := db.ListMembers(ctx, "t1", kb.ID); err != nil || len(members) != 1 || members[0].UserID != keep.ID {
			t.Fatalf("ListMembers after the delete = %+v, %v; want only the other user", members, err)
		}
		checkKind(t, "DeleteUser twice", rag.KindNotFound, second(db.DeleteUser(ctx, "t1", u.ID)))
	})

	t.Run("Tenants", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		if list, err := db.ListTenants(ctx); err != nil || len(list) != 0 {
			t.Fatalf("ListTenants on an empty store = %+v, %v; want none", list, err)
		}
		if created, err := db.CreateTenant(ctx, "t2"); err != nil || !created {
			t.Fatalf("creating t2: created %v, %v", created, err)
		}
		if created, err := db.CreateTenant(ctx, "t2"); err != nil || created {
			t.Fatalf("creating t2 again: created %v, %v; want an existing tenant left as it is", created, err)
		}
		must(t, db.EnsureTenant(ctx, "t2")) // an existing tenant is left as it is
		must(t, db.CreateUser(ctx, &rag.User{Tenant: "t1", Email: "a@x.io"}))
		must(t, db.CreateUser(ctx, &rag.User{Tenant: "t1", Email: "b@x.io"}))
		checkKind(t, "a bad tenant id", rag.KindInvalid, db.EnsureTenant(ctx, "a/b"))
		list, err := db.ListTenants(ctx)
		if err != nil || len(list) != 2 || list[0].ID != "t1" || list[0].Users != 2 || list[1].ID != "t2" || list[1].Users != 0 || list[0].CreatedAt.IsZero() {
			t.Fatalf("ListTenants = %+v, %v; want t1 (2 users), t2 (0), ordered by id, with creation times", list, err)
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
