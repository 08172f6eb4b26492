package sqldb

import (
	"context"
	"database/sql"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

// Identity: tenants, users, API keys, knowledge-base members and the audit log (issue 10). Every query
// names the tenant, except the two an operator or the authentication path needs before a tenant is known:
// LookupAPIKey (by the key's hash) and GetAPIKey (by id, for `docmind key revoke ID`).

// NormalizeEmail lowercases and trims an email address and checks its shape: one "@" with text on both
// sides, at most 320 bytes, no spaces or control characters.
func NormalizeEmail(email string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	local, domain, ok := strings.Cut(e, "@")
	if !ok || local == "" || domain == "" || strings.Contains(domain, "@") || len(e) > 320 || !utf8.ValidString(e) {
		return "", rag.Errorf("sqldb.NormalizeEmail", rag.KindInvalid, "%q is not an email address", truncateForError(email))
	}
	for _, r := range e {
		if r <= ' ' || r == 0x7f {
			return "", rag.Errorf("sqldb.NormalizeEmail", rag.KindInvalid, "an email address has no spaces or control characters")
		}
	}
	return e, nil
}

func truncateForError(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// EnsureTenant records the tenant if it is new; an existing tenant is left as it is.
func (s *DB) EnsureTenant(ctx context.Context, id string) error {
	_, err := s.CreateTenant(ctx, id)
	return err
}

// CreateTenant is EnsureTenant saying whether this call created the tenant (false: it existed), decided
// by the insert itself, so two concurrent creations cannot both report (and audit) a creation.
func (s *DB) CreateTenant(ctx context.Context, id string) (created bool, err error) {
	const op = "sqldb.CreateTenant"
	if err := validIDs(op, "tenant", id); err != nil {
		return false, err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)`, id, id, ms(s.now()))
	if err != nil && s.dialect.IsDuplicate != nil && s.dialect.IsDuplicate(err) {
		return false, nil
	}
	if err != nil {
		return false, s.classify(op, err)
	}
	return true, nil
}

const userColumns = `id, tenant_id, email, name, role, subject, created_at`

func scanUser(row interface{ Scan(...any) error }) (rag.User, error) {
	var u rag.User
	var created int64
	err := row.Scan(&u.ID, &u.Tenant, &u.Email, &u.Name, &u.Role, &u.Subject, &created)
	u.CreatedAt = fromMS(created)
	return u, err
}

func validRole(op, role string) error {
	if role != rag.RoleAdmin && role != rag.RoleMember {
		return rag.Errorf(op, rag.KindInvalid, "role must be %s or %s, not %q", rag.RoleAdmin, rag.RoleMember, role)
	}
	return nil
}

// CreateUser inserts a user (the tenant is recorded too). An empty ID is generated, an empty Role is
// member; the email is normalised. Conflict when the tenant has a user with that email.
func (s *DB) CreateUser(ctx context.Context, u *rag.User) error {
	const op = "sqldb.CreateUser"
	if u.ID == "" {
		u.ID = rag.NewID("usr")
	}
	if u.Role == "" {
		u.Role = rag.RoleMember
	}
	if err := validIDs(op, "tenant", u.Tenant, "user id", u.ID); err != nil {
		return err
	}
	if err := validRole(op, u.Role); err != nil {
		return err
	}
	email, err := NormalizeEmail(u.Email)
	if err != nil {
		return err
	}
	if len(u.Subject) > 255 || len(u.Name) > 255 {
		return rag.Errorf(op, rag.KindInvalid, "subject and name are at most 255 bytes")
	}
	if err := s.EnsureTenant(ctx, u.Tenant); err != nil {
		return err
	}
	u.Email, u.CreatedAt = email, fromMS(ms(s.now()))
	_, err = s.db.ExecContext(ctx, `INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		u.ID, u.Tenant, u.Email, u.Name, u.Role, u.Subject, ms(u.CreatedAt))
	return s.classify(op, err)
}

// GetUser returns one user of the tenant; NotFound otherwise.
func (s *DB) GetUser(ctx context.Context, tenant, id string) (rag.User, error) {
	const op = "sqldb.GetUser"
	if err := validIDs(op, "tenant", tenant, "user id", id); err != nil {
		return rag.User{}, err
	}
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE tenant_id = ? AND id = ?`, tenant, id))
	return u, s.classify(op, err)
}

// GetUserByEmail returns the tenant's user with that email (normalised); NotFound otherwise.
func (s *DB) GetUserByEmail(ctx context.Context, tenant, email string) (rag.User, error) {
	const op = "sqldb.GetUserByEmail"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return rag.User{}, err
	}
	e, err := NormalizeEmail(email)
	if err != nil {
		return rag.User{}, err
	}
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE tenant_id = ? AND email = ?`, tenant, e))
	return u, s.classify(op, err)
}

// GetUserBySubject returns the tenant's user who signed in with this JWT subject; NotFound otherwise.
func (s *DB) GetUserBySubject(ctx context.Context, tenant, subject string) (rag.User, error) {
	const op = "sqldb.GetUserBySubject"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return rag.User{}, err
	}
	if subject == "" || len(subject) > 255 {
		return rag.User{}, rag.Errorf(op, rag.KindInvalid, "subject must be 1-255 bytes")
	}
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE tenant_id = ? AND subject = ?`, tenant, subject))
	return u, s.classify(op, err)
}

// SetUserSubject links a JWT subject to an existing user (a user created by email before first sign-in).
// Only a user without a subject is linked (or relinked to the same one): Conflict when another subject
// holds it, so two identities signing in at once cannot both become this user; NotFound for no such user.
func (s *DB) SetUserSubject(ctx context.Context, tenant, id, subject string) error {
	const op = "sqldb.SetUserSubject"
	if err := validIDs(op, "tenant", tenant, "user id", id); err != nil {
		return err
	}
	if subject == "" || len(subject) > 255 {
		return rag.Errorf(op, rag.KindInvalid, "subject must be 1-255 bytes")
	}
	res, err := s.db.ExecContext(ctx, `UPDATE users SET subject = ? WHERE tenant_id = ? AND id = ? AND (subject = '' OR subject = ?)`,
		subject, tenant, id, subject)
	if err != nil {
		return s.classify(op, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	u, err := s.GetUser(ctx, tenant, id)
	if err != nil {
		return err
	}
	if u.Subject == subject {
		return nil // already linked (some drivers count an unchanged row as unaffected)
	}
	return rag.Errorf(op, rag.KindConflict, "the user is linked to another subject")
}

// ListUsers returns the tenant's users ordered by email.
func (s *DB) ListUsers(ctx context.Context, tenant string) ([]rag.User, error) {
	const op = "sqldb.ListUsers"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+userColumns+` FROM users WHERE tenant_id = ? ORDER BY email, id`, tenant)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, u)
	}
	return out, s.classify(op, rows.Err())
}

const keyColumns = `id, tenant_id, user_id, key_hash, prefix, name, created_at, last_used_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (rag.APIKey, error) {
	var k rag.APIKey
	var created, used, revoked int64
	err := row.Scan(&k.ID, &k.Tenant, &k.UserID, &k.Hash, &k.Prefix, &k.Name, &created, &used, &revoked)
	k.CreatedAt = fromMS(created)
	if used > 0 {
		k.LastUsedAt = fromMS(used)
	}
	if revoked > 0 {
		k.RevokedAt = fromMS(revoked)
	}
	return k, err
}

// CreateAPIKey stores a key by its hash for an existing user of the tenant (NotFound otherwise). An empty
// ID is generated. Conflict when the hash is already stored.
func (s *DB) CreateAPIKey(ctx context.Context, k *rag.APIKey) error {
	const op = "sqldb.CreateAPIKey"
	if k.ID == "" {
		k.ID = rag.NewID("key")
	}
	if err := validIDs(op, "tenant", k.Tenant, "user id", k.UserID, "key id", k.ID); err != nil {
		return err
	}
	if len(k.Hash) != 64 || len(k.Prefix) == 0 || len(k.Prefix) > 16 || len(k.Name) > 255 {
		return rag.Errorf(op, rag.KindInvalid, "a key needs a 64-hex hash, a 1-16 byte prefix and a name of at most 255 bytes")
	}
	if _, err := s.GetUser(ctx, k.Tenant, k.UserID); err != nil {
		return err
	}
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = fromMS(ms(s.now())), time.Time{}, time.Time{}
	_, err := s.db.ExecContext(ctx, `INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0)`,
		k.ID, k.Tenant, k.UserID, k.Hash, k.Prefix, k.Name, ms(k.CreatedAt))
	return s.classify(op, err)
}

// LookupAPIKey finds an unrevoked key by its hash, with its user. NotFound for an unknown or revoked key
// (one answer for both, so a caller learns nothing about revoked keys).
func (s *DB) LookupAPIKey(ctx context.Context, hash string) (rag.APIKey, rag.User, error) {
	const op = "sqldb.LookupAPIKey"
	if len(hash) != 64 {
		return rag.APIKey{}, rag.User{}, rag.E(op, rag.KindNotFound, nil)
	}
	k, err := scanKey(s.db.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE key_hash = ? AND revoked_at = 0`, hash))
	if err != nil {
		return rag.APIKey{}, rag.User{}, s.classify(op, err)
	}
	u, err := s.GetUser(ctx, k.Tenant, k.UserID)
	if err != nil {
		return rag.APIKey{}, rag.User{}, err
	}
	return k, u, nil
}

// GetAPIKey returns a key by id, in any tenant: the operator's `docmind key revoke ID` needs it. HTTP
// paths use ListAPIKeys and RevokeAPIKey, which are scoped by tenant.
func (s *DB) GetAPIKey(ctx context.Context, id string) (rag.APIKey, error) {
	const op = "sqldb.GetAPIKey"
	if err := validIDs(op, "key id", id); err != nil {
		return rag.APIKey{}, err
	}
	k, err := scanKey(s.db.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, id))
	return k, s.classify(op, err)
}

// TouchAPIKey records a use of the key, at most once a minute per key (a write on every request would
// make every read a write).
func (s *DB) TouchAPIKey(ctx context.Context, tenant, id string) error {
	const op = "sqldb.TouchAPIKey"
	if err := validIDs(op, "tenant", tenant, "key id", id); err != nil {
		return err
	}
	now := ms(s.now())
	_, err := s.db.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ? WHERE tenant_id = ? AND id = ? AND last_used_at < ?`,
		now, tenant, id, now-60_000)
	return s.classify(op, err)
}

// ListAPIKeys returns the tenant's keys (revoked ones too), newest first; user "" lists every user's.
func (s *DB) ListAPIKeys(ctx context.Context, tenant, user string) ([]rag.APIKey, error) {
	const op = "sqldb.ListAPIKeys"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	q, args := `SELECT `+keyColumns+` FROM api_keys WHERE tenant_id = ?`, []any{tenant}
	if user != "" {
		if err := validIDs(op, "user id", user); err != nil {
			return nil, err
		}
		q, args = q+` AND user_id = ?`, append(args, user)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY created_at DESC, id`, args...)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, k)
	}
	return out, s.classify(op, rows.Err())
}

// RevokeAPIKey revokes the tenant's key and reports whether this call revoked it (false: it was revoked
// already, and keeps its first revocation time, so callers audit one revocation, not two); NotFound when
// the tenant has no such key.
func (s *DB) RevokeAPIKey(ctx context.Context, tenant, id string) (bool, error) {
	const op = "sqldb.RevokeAPIKey"
	if err := validIDs(op, "tenant", tenant, "key id", id); err != nil {
		return false, err
	}
	changed := false
	err := s.inTx(ctx, op, func(tx *sql.Tx) error {
		var revoked int64
		if err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM api_keys WHERE tenant_id = ? AND id = ?`, tenant, id).Scan(&revoked); err != nil {
			return s.classify(op, err)
		}
		if revoked > 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE tenant_id = ? AND id = ?`, ms(s.now()), tenant, id)
		changed = err == nil
		return err
	})
	return changed, err
}

// SetUserRole changes a user's tenant role (admin or member); NotFound when the tenant has no such user.
// It takes effect on the user's next request: keys and tokens are checked against SQL each time.
func (s *DB) SetUserRole(ctx context.Context, tenant, id, role string) error {
	const op = "sqldb.SetUserRole"
	if err := validIDs(op, "tenant", tenant, "user id", id); err != nil {
		return err
	}
	if err := validRole(op, role); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE users SET role = ? WHERE tenant_id = ? AND id = ?`, role, tenant, id)
	if err != nil {
		return s.classify(op, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	_, err = s.GetUser(ctx, tenant, id) // an unchanged row counts as unaffected on some drivers
	return err
}

// DeleteUser removes a user of the tenant: every key of theirs is revoked (the rows stay, for the audit
// trail and `key list`), every knowledge-base role removed, and the user row deleted, in one transaction.
// It returns how many keys it revoked; NotFound when the tenant has no such user. Conversations and
// memories stay under the old user id, which nobody can sign in as again (a later JWT sign-in with the
// same subject provisions a new member without grants).
func (s *DB) DeleteUser(ctx context.Context, tenant, id string) (int, error) {
	const op = "sqldb.DeleteUser"
	if err := validIDs(op, "tenant", tenant, "user id", id); err != nil {
		return 0, err
	}
	revoked := 0
	err := s.inTx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM users WHERE tenant_id = ? AND id = ?`, tenant, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rag.E(op, rag.KindNotFound, nil)
		}
		res, err = tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE tenant_id = ? AND user_id = ? AND revoked_at = 0`, ms(s.now()), tenant, id)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		revoked = int(n)
		_, err = tx.ExecContext(ctx, `DELETE FROM kb_members WHERE tenant_id = ? AND user_id = ?`, tenant, id)
		return err
	})
	return revoked, err
}

// Tenant is one row of the tenants table.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Users     int       `json:"users"`
}

// ListTenants returns every tenant with its number of users, ordered by id: the operator's view
// (`docmind tenant list`); no HTTP path calls it, a tenant admin sees only their own tenant.
func (s *DB) ListTenants(ctx context.Context) ([]Tenant, error) {
	const op = "sqldb.ListTenants"
	rows, err := s.db.QueryContext(ctx, `SELECT t.id, t.name, t.created_at, (SELECT COUNT(*) FROM users u WHERE u.tenant_id = t.id)
		FROM tenants t ORDER BY t.id`)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []Tenant{}
	for rows.Next() {
		var t Tenant
		var created int64
		if err := rows.Scan(&t.ID, &t.Name, &created, &t.Users); err != nil {
			return nil, s.classify(op, err)
		}
		t.CreatedAt = fromMS(created)
		out = append(out, t)
	}
	return out, s.classify(op, rows.Err())
}

// SetMember grants user the role on the tenant's knowledge base (replacing an earlier role). NotFound
// when the knowledge base or the user is not the tenant's.
func (s *DB) SetMember(ctx context.Context, tenant, kbID, userID string, role rag.KBRole) error {
	const op = "sqldb.SetMember"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID, "user id", userID); err != nil {
		return err
	}
	if role.String() == "" {
		return rag.Errorf(op, rag.KindInvalid, "role must be reader, editor or owner")
	}
	if _, err := s.GetKB(ctx, tenant, kbID); err != nil {
		return err
	}
	if _, err := s.GetUser(ctx, tenant, userID); err != nil {
		return err
	}
	return s.inTx(ctx, op, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM kb_members WHERE tenant_id = ? AND kb_id = ? AND user_id = ?`, tenant, kbID, userID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO kb_members (kb_id, user_id, tenant_id, role, created_at) VALUES (?, ?, ?, ?, ?)`,
			kbID, userID, tenant, role.String(), ms(s.now()))
		return err
	})
}

// RemoveMember revokes the user's role on the knowledge base; NotFound when there was none.
func (s *DB) RemoveMember(ctx context.Context, tenant, kbID, userID string) error {
	const op = "sqldb.RemoveMember"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID, "user id", userID); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM kb_members WHERE tenant_id = ? AND kb_id = ? AND user_id = ?`, tenant, kbID, userID)
	if err != nil {
		return s.classify(op, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return rag.E(op, rag.KindNotFound, nil)
	}
	return nil
}

// ListMembers returns the knowledge base's members with their emails, ordered by email.
func (s *DB) ListMembers(ctx context.Context, tenant, kbID string) ([]rag.Member, error) {
	const op = "sqldb.ListMembers"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT m.kb_id, m.user_id, COALESCE(u.email, ''), m.role, m.created_at
		FROM kb_members m LEFT JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
		WHERE m.tenant_id = ? AND m.kb_id = ? ORDER BY 3, m.user_id`, tenant, kbID)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.Member{}
	for rows.Next() {
		var m rag.Member
		var created int64
		if err := rows.Scan(&m.KBID, &m.UserID, &m.Email, &m.Role, &created); err != nil {
			return nil, s.classify(op, err)
		}
		m.CreatedAt = fromMS(created)
		out = append(out, m)
	}
	return out, s.classify(op, rows.Err())
}

// GetMember returns the user's role on the tenant's knowledge base, with the grant's time and the user's
// email; NotFound when the user has no role there.
func (s *DB) GetMember(ctx context.Context, tenant, kbID, userID string) (rag.Member, error) {
	const op = "sqldb.GetMember"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID, "user id", userID); err != nil {
		return rag.Member{}, err
	}
	var m rag.Member
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT m.kb_id, m.user_id, COALESCE(u.email, ''), m.role, m.created_at
		FROM kb_members m LEFT JOIN users u ON u.tenant_id = m.tenant_id AND u.id = m.user_id
		WHERE m.tenant_id = ? AND m.kb_id = ? AND m.user_id = ?`, tenant, kbID, userID).Scan(&m.KBID, &m.UserID, &m.Email, &m.Role, &created)
	m.CreatedAt = fromMS(created)
	return m, s.classify(op, err)
}

// MemberRoles returns the user's role on each knowledge base of the tenant where the user has one.
func (s *DB) MemberRoles(ctx context.Context, tenant, userID string) (map[string]rag.KBRole, error) {
	const op = "sqldb.MemberRoles"
	if err := validIDs(op, "tenant", tenant, "user id", userID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT kb_id, role FROM kb_members WHERE tenant_id = ? AND user_id = ?`, tenant, userID)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := map[string]rag.KBRole{}
	for rows.Next() {
		var kb, role string
		if err := rows.Scan(&kb, &role); err != nil {
			return nil, s.classify(op, err)
		}
		if r, ok := rag.ParseKBRole(role); ok {
			out[kb] = r
		}
	}
	return out, s.classify(op, rows.Err())
}

// AppendAudit writes one audit entry (CreatedAt is set).
func (s *DB) AppendAudit(ctx context.Context, e *rag.AuditEntry) error {
	const op = "sqldb.AppendAudit"
	if err := validIDs(op, "tenant", e.Tenant); err != nil {
		return err
	}
	if e.Actor == "" || e.Action == "" {
		return rag.Errorf(op, rag.KindInvalid, "an audit entry needs an actor and an action")
	}
	e.CreatedAt = fromMS(ms(s.now()))
	_, err := s.db.ExecContext(ctx, `INSERT INTO audit_log (tenant_id, actor, action, target, content_hash, detail, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, e.Tenant, clip(e.Actor, 128), clip(e.Action, 64), clip(e.Target, 255), clip(e.ContentHash, 64), e.Detail, ms(e.CreatedAt))
	return s.classify(op, err)
}

// ListAudit returns the tenant's newest audit entries first, at most limit (1-1000).
func (s *DB) ListAudit(ctx context.Context, tenant string, limit int) ([]rag.AuditEntry, error) {
	const op = "sqldb.ListAudit"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	if limit < 1 || limit > 1000 {
		limit = 1000
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, tenant_id, actor, action, target, content_hash, detail, created_at
		FROM audit_log WHERE tenant_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, tenant, limit)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.AuditEntry{}
	for rows.Next() {
		var e rag.AuditEntry
		var created int64
		if err := rows.Scan(&e.ID, &e.Tenant, &e.Actor, &e.Action, &e.Target, &e.ContentHash, &e.Detail, &created); err != nil {
			return nil, s.classify(op, err)
		}
		e.CreatedAt = fromMS(created)
		out = append(out, e)
	}
	return out, s.classify(op, rows.Err())
}

// clip cuts s to at most n bytes on a rune boundary (audit columns are bounded).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
