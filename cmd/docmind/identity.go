package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// The identity commands (issue 10) act on the relational store directly, as the operator: they need
// access to the data directory or the database, not a key. Each change is written to the audit log with
// the actor "cli:<os user>".

// cliActor names the operator in the audit log.
func cliActor() string {
	u := os.Getenv("USER")
	if u == "" {
		u = "unknown"
	}
	return "cli:" + u
}

// openIdentity opens and migrates the relational store for an identity command.
func openIdentity(e env, c common) (*sqldb.DB, string, int) {
	cfg, ok := c.load(e, nil)
	if !ok {
		return nil, "", exitConfig
	}
	db, err := openSQL(e.ctx, cfg)
	if err != nil {
		return nil, "", fail(e, err)
	}
	if _, err := db.Migrate(e.ctx); err != nil {
		db.Close()
		return nil, "", fail(e, err)
	}
	return db, cfg.Tenant, exitOK
}

func audit(e env, db *sqldb.DB, tenant, action, target, detail string) {
	if err := db.AppendAudit(e.ctx, &rag.AuditEntry{Tenant: tenant, Actor: cliActor(), Action: action, Target: target, Detail: detail}); err != nil {
		fmt.Fprintf(e.stderr, "docmind: warning: the audit log was not written: %v\n", err)
	}
}

// auditOpening writes one audit entry for a command that no longer holds the relational store (kb delete
// closes it before the other stores open): it opens the store again for the entry alone.
func auditOpening(e env, cfg config.Config, action, target, detail string) {
	db, err := openSQL(e.ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "docmind: warning: the audit log was not written: %v\n", err)
		return
	}
	defer db.Close()
	audit(e, db, cfg.Tenant, action, target, detail)
}

// cmdUser: user create EMAIL [--role admin|member] [--name N] | user list.
func cmdUser(e env, args []string) int {
	var c common
	fs := newFlags("user", e, &c)
	role := fs.String("role", rag.RoleMember, "tenant role: admin (owns every knowledge base of the tenant) or member")
	name := fs.String("name", "", "display name")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: docmind user create EMAIL --tenant T [--role admin|member] [--name N] | user list --tenant T  [--data DIR] [--json]")
	}
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	if len(rest) == 0 || (rest[0] == "create" && len(rest) != 2) || (rest[0] == "list" && len(rest) != 1) || (rest[0] != "create" && rest[0] != "list") {
		fs.Usage()
		return exitConfig
	}
	db, tenant, code := openIdentity(e, c)
	if db == nil {
		return code
	}
	defer db.Close()
	if rest[0] == "list" {
		users, err := db.ListUsers(e.ctx, tenant)
		return printList(e, c, users, err, "no users in tenant "+tenant, func(u rag.User) string {
			return u.ID + "\t" + u.Email + "\t" + u.Role
		})
	}
	u := rag.User{Tenant: tenant, Email: rest[1], Name: *name, Role: *role}
	if err := db.CreateUser(e.ctx, &u); err != nil {
		if rag.Is(err, rag.KindConflict) {
			err = rag.Errorf("user create", rag.KindInvalid, "tenant %s already has a user %s", tenant, rest[1])
		}
		return fail(e, err)
	}
	audit(e, db, tenant, "user.create", u.ID, u.Email+" "+u.Role)
	if c.json {
		printJSON(e.stdout, u)
	} else {
		fmt.Fprintf(e.stdout, "created %s %s (%s) in tenant %s\n", u.Role, u.Email, u.ID, tenant)
	}
	return exitOK
}

// cmdKey: key create --user EMAIL [--name N] | key list | key revoke ID.
func cmdKey(e env, args []string) int {
	var c common
	fs := newFlags("key", e, &c)
	user := fs.String("user", "", "email of the key's user (key create)")
	name := fs.String("name", "", "a name to recognise the key by (key create)")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: docmind key create --tenant T --user EMAIL [--name N] | key list --tenant T | key revoke ID  [--data DIR] [--json]")
	}
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	valid := len(rest) > 0 && ((rest[0] == "create" && len(rest) == 1 && *user != "") || (rest[0] == "list" && len(rest) == 1) ||
		(rest[0] == "revoke" && len(rest) == 2))
	if !valid {
		fs.Usage()
		return exitConfig
	}
	db, tenant, code := openIdentity(e, c)
	if db == nil {
		return code
	}
	defer db.Close()
	switch rest[0] {
	case "create":
		u, err := db.GetUserByEmail(e.ctx, tenant, *user)
		if err != nil {
			if rag.Is(err, rag.KindNotFound) {
				err = rag.Errorf("key create", rag.KindInvalid, "tenant %s has no user %s; create it with docmind user create", tenant, *user)
			}
			return fail(e, err)
		}
		k, err := httpapi.CreateKey(e.ctx, db, tenant, u.ID, *name)
		if err != nil {
			return fail(e, err)
		}
		k.User = u.Email
		audit(e, db, tenant, "key.create", k.ID, "for "+u.ID+" prefix "+k.Prefix)
		if c.json {
			printJSON(e.stdout, k)
		} else {
			fmt.Fprintf(e.stdout, "%s\n\nAPI key %s for %s in tenant %s. This is the only time it is shown: store it now.\n"+
				"Send it as: Authorization: Bearer <key>\n", k.Key, k.ID, u.Email, tenant)
		}
	case "list":
		keys, err := db.ListAPIKeys(e.ctx, tenant, "")
		return printList(e, c, keys, err, "no keys in tenant "+tenant, func(k rag.APIKey) string {
			state := "active"
			if !k.RevokedAt.IsZero() {
				state = "revoked " + k.RevokedAt.UTC().Format("2006-01-02 15:04")
			}
			used := "never used"
			if !k.LastUsedAt.IsZero() {
				used = "used " + k.LastUsedAt.UTC().Format("2006-01-02 15:04")
			}
			return strings.Join([]string{k.ID, k.Prefix + "...", k.UserID, k.Name, state, used}, "\t")
		})
	case "revoke":
		// the key's own tenant: an operator revoking a leaked key may not know it
		k, err := db.GetAPIKey(e.ctx, rest[1])
		if err != nil {
			if rag.Is(err, rag.KindNotFound) || rag.Is(err, rag.KindInvalid) {
				err = rag.Errorf("key revoke", rag.KindInvalid, "no key %s", rest[1])
			}
			return fail(e, err)
		}
		if err := db.RevokeAPIKey(e.ctx, k.Tenant, k.ID); err != nil {
			return fail(e, err)
		}
		audit(e, db, k.Tenant, "key.revoke", k.ID, "")
		if c.json {
			printJSON(e.stdout, map[string]string{"revoked": k.ID, "tenant": k.Tenant})
		} else {
			fmt.Fprintf(e.stdout, "revoked key %s (%s...) of tenant %s\n", k.ID, k.Prefix, k.Tenant)
		}
	}
	return exitOK
}

// kbMember grants or revokes a role on a knowledge base (by name or id) for a user (by email).
func kbMember(e env, c common, verb, kbKey, email, roleName string) int {
	db, tenant, code := openIdentity(e, c)
	if db == nil {
		return code
	}
	defer db.Close()
	kb, err := db.GetKBByName(e.ctx, tenant, kbKey)
	if rag.Is(err, rag.KindNotFound) || rag.Is(err, rag.KindInvalid) {
		if byID, err2 := db.GetKB(e.ctx, tenant, kbKey); err2 == nil {
			kb, err = byID, nil
		}
	}
	if err != nil {
		if rag.Is(err, rag.KindNotFound) || rag.Is(err, rag.KindInvalid) {
			err = rag.Errorf("kb "+verb, rag.KindInvalid, "tenant %s has no knowledge base %q", tenant, kbKey)
		}
		return fail(e, err)
	}
	u, err := db.GetUserByEmail(e.ctx, tenant, email)
	if err != nil {
		if rag.Is(err, rag.KindNotFound) || rag.Is(err, rag.KindInvalid) {
			err = rag.Errorf("kb "+verb, rag.KindInvalid, "tenant %s has no user %s; create it with docmind user create", tenant, email)
		}
		return fail(e, err)
	}
	if verb == "revoke" {
		if err := db.RemoveMember(e.ctx, tenant, kb.ID, u.ID); err != nil {
			if rag.Is(err, rag.KindNotFound) {
				err = rag.Errorf("kb revoke", rag.KindInvalid, "%s has no role on %s", u.Email, kb.Name)
			}
			return fail(e, err)
		}
		audit(e, db, tenant, "kb.revoke", kb.ID, u.ID)
		if c.json {
			printJSON(e.stdout, map[string]string{"kb": kb.ID, "user": u.ID, "revoked": "true"})
		} else {
			fmt.Fprintf(e.stdout, "%s has no role on %s any more\n", u.Email, kb.Name)
		}
		return exitOK
	}
	role, ok := rag.ParseKBRole(roleName)
	if !ok {
		fmt.Fprintf(e.stderr, "docmind: --role must be reader, editor or owner, not %q\n", roleName)
		return exitConfig
	}
	if err := db.SetMember(e.ctx, tenant, kb.ID, u.ID, role); err != nil {
		return fail(e, err)
	}
	audit(e, db, tenant, "kb.grant", kb.ID, u.ID+" "+role.String())
	if c.json {
		printJSON(e.stdout, rag.Member{KBID: kb.ID, UserID: u.ID, Email: u.Email, Role: role.String()})
	} else {
		fmt.Fprintf(e.stdout, "%s is %s of %s\n", u.Email, role, kb.Name)
	}
	return exitOK
}

// printList prints a listing: the JSON array with --json, else one line per item (or the empty message).
func printList[T any](e env, c common, items []T, err error, empty string, line func(T) string) int {
	if err != nil {
		return fail(e, err)
	}
	if c.json {
		printJSON(e.stdout, items)
		return exitOK
	}
	if len(items) == 0 {
		fmt.Fprintln(e.stdout, empty)
	}
	for _, it := range items {
		fmt.Fprintln(e.stdout, line(it))
	}
	return exitOK
}
