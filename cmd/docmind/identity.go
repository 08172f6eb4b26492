package main

import (
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// The identity commands (issue 10) act on the relational store directly, as the operator: they need
// access to the data directory or the database, not a key. Each change is written to the audit log with
// the actor "cli:<os user>".

// cliActor names the operator in the audit log: $USER, else the account the process runs as (cron,
// systemd and containers often leave $USER unset), else "unknown".
func cliActor() string {
	u := os.Getenv("USER")
	if u == "" {
		if cur, err := user.Current(); err == nil {
			u = cur.Username
		}
	}
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

// cmdUser: user create EMAIL [--role admin|member] [--name N] | user list | user set-role EMAIL --role R |
// user delete EMAIL.
func cmdUser(e env, args []string) int {
	var c common
	fs := newFlags("user", e, &c)
	role := fs.String("role", "", "tenant role: admin (owns every knowledge base of the tenant) or member (user create: member when unset)")
	name := fs.String("name", "", "display name")
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: docmind user create EMAIL --tenant T [--role admin|member] [--name N] | user list --tenant T |\n"+
			"       user set-role EMAIL --tenant T --role admin|member | user delete EMAIL --tenant T  [--data DIR] [--json]")
	}
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	arity := map[string]int{"create": 2, "list": 1, "set-role": 2, "delete": 2}
	if len(rest) == 0 || arity[rest[0]] != len(rest) || (rest[0] == "set-role" && *role == "") {
		fs.Usage()
		return exitConfig
	}
	db, tenant, code := openIdentity(e, c)
	if db == nil {
		return code
	}
	defer db.Close()
	switch rest[0] {
	case "list":
		users, err := db.ListUsers(e.ctx, tenant)
		return printList(e, c, users, err, "no users in tenant "+tenant, func(u rag.User) string {
			return u.ID + "\t" + u.Email + "\t" + u.Role
		})
	case "set-role":
		return userSetRole(e, c, db, tenant, rest[1], *role)
	case "delete":
		return userDelete(e, c, db, tenant, rest[1])
	}
	if *role == "" {
		*role = rag.RoleMember
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

// userByEmail finds the tenant's user, or an Invalid error naming what is missing.
func userByEmail(e env, db *sqldb.DB, verb, tenant, email string) (rag.User, error) {
	u, err := db.GetUserByEmail(e.ctx, tenant, email)
	if rag.Is(err, rag.KindNotFound) || rag.Is(err, rag.KindInvalid) {
		err = rag.Errorf("user "+verb, rag.KindInvalid, "tenant %s has no user %s", tenant, email)
	}
	return u, err
}

// userSetRole promotes or demotes a user. A token's admin group (DOCMIND_JWT_ADMIN_GROUP) still decides
// for JWT sign-ins when configured: see identity.Authenticator.
func userSetRole(e env, c common, db *sqldb.DB, tenant, email, role string) int {
	u, err := userByEmail(e, db, "set-role", tenant, email)
	if err == nil {
		err = db.SetUserRole(e.ctx, tenant, u.ID, role)
	}
	if err != nil {
		return fail(e, err)
	}
	audit(e, db, tenant, "user.set_role", u.ID, u.Email+" "+u.Role+" -> "+role)
	from := u.Role
	u.Role = role
	if c.json {
		printJSON(e.stdout, u)
	} else {
		fmt.Fprintf(e.stdout, "%s is %s of tenant %s (was %s)\n", u.Email, role, tenant, from)
	}
	return exitOK
}

// userDelete removes a user: keys revoked, knowledge-base roles removed, the user row deleted.
func userDelete(e env, c common, db *sqldb.DB, tenant, email string) int {
	u, err := userByEmail(e, db, "delete", tenant, email)
	if err != nil {
		return fail(e, err)
	}
	revoked, err := db.DeleteUser(e.ctx, tenant, u.ID)
	if err != nil {
		return fail(e, err)
	}
	audit(e, db, tenant, "user.delete", u.ID, fmt.Sprintf("%s, %d keys revoked", u.Email, revoked))
	if c.json {
		printJSON(e.stdout, map[string]any{"deleted": u.ID, "email": u.Email, "tenant": tenant, "keys_revoked": revoked})
	} else {
		fmt.Fprintf(e.stdout, "deleted %s (%s) from tenant %s: %d keys revoked, every knowledge-base role removed\n", u.Email, u.ID, tenant, revoked)
		if u.Subject != "" {
			fmt.Fprintln(e.stdout, "they signed in with a token: disable them at the identity provider too, or their next sign-in creates a new member (with no grants)")
		}
	}
	return exitOK
}

// cmdTenant: tenant list | tenant create T. Tenants are also created by the first user of a tenant (user
// create, or a JWT naming it); listing them is the operator's view of who is on this store.
func cmdTenant(e env, args []string) int {
	var c common
	fs := newFlags("tenant", e, &c)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "usage: docmind tenant list | tenant create T  [--data DIR] [--json]")
	}
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	if len(rest) == 0 || (rest[0] == "list" && len(rest) != 1) || (rest[0] == "create" && len(rest) != 2) || (rest[0] != "list" && rest[0] != "create") {
		fs.Usage()
		return exitConfig
	}
	db, _, code := openIdentity(e, c)
	if db == nil {
		return code
	}
	defer db.Close()
	if rest[0] == "create" {
		created, err := db.CreateTenant(e.ctx, rest[1])
		if err != nil {
			return fail(e, err)
		}
		existed := !created
		if !existed { // creating a tenant that exists changes nothing, so it is no audit event
			audit(e, db, rest[1], "tenant.create", rest[1], "")
		}
		if c.json {
			printJSON(e.stdout, map[string]any{"tenant": rest[1], "created": !existed})
		} else if existed {
			fmt.Fprintf(e.stdout, "tenant %s exists\n", rest[1])
		} else {
			fmt.Fprintf(e.stdout, "tenant %s created\n", rest[1])
		}
		return exitOK
	}
	tenants, err := db.ListTenants(e.ctx)
	return printList(e, c, tenants, err, "no tenants yet (the first user create makes one)", func(t sqldb.Tenant) string {
		return fmt.Sprintf("%s\t%d users\tsince %s", t.ID, t.Users, t.CreatedAt.UTC().Format("2006-01-02"))
	})
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
		emails := map[string]string{}
		if users, uerr := db.ListUsers(e.ctx, tenant); uerr == nil {
			for _, u := range users {
				emails[u.ID] = u.Email
			}
		}
		return printList(e, c, keys, err, "no keys in tenant "+tenant, func(k rag.APIKey) string {
			who := emails[k.UserID]
			if who == "" {
				who = k.UserID + " (deleted user)"
			}
			state := "active"
			if !k.RevokedAt.IsZero() {
				state = "revoked " + k.RevokedAt.UTC().Format("2006-01-02 15:04")
			}
			used := "never used"
			if !k.LastUsedAt.IsZero() {
				used = "used " + k.LastUsedAt.UTC().Format("2006-01-02 15:04")
			}
			return strings.Join([]string{k.ID, k.Prefix + "...", who, k.Name, state, used}, "\t")
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
		changed, err := db.RevokeAPIKey(e.ctx, k.Tenant, k.ID)
		if err != nil {
			return fail(e, err)
		}
		if !changed {
			// not a second revocation in the audit log, and not a silent success either
			return fail(e, rag.Errorf("key revoke", rag.KindConflict, "key %s was already revoked at %s", k.ID, k.RevokedAt.UTC().Format(time.RFC3339)))
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
		m, err := db.GetMember(e.ctx, tenant, kb.ID, u.ID)
		if err != nil {
			return fail(e, err)
		}
		printJSON(e.stdout, m)
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
