package sqldb

import (
	"context"
	"database/sql"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// A lease is a named lock in SQL that expires on its own: a holder that crashes (a Lambda instance frozen
// or killed mid-run) stops blocking others after ttl, which an in-process mutex or a MySQL GET_LOCK tied
// to one connection cannot offer across instances. Times come from DB.now, so holders must have roughly
// synchronised clocks; ttl should exceed the work it guards by a margin far above clock skew.

func validLease(op, name, holder string, ttl time.Duration, needTTL bool) error {
	if name == "" || len(name) > 255 {
		return rag.Errorf(op, rag.KindInvalid, "lease name must be 1-255 bytes")
	}
	if holder == "" || len(holder) > 255 {
		return rag.Errorf(op, rag.KindInvalid, "lease holder must be 1-255 bytes")
	}
	if needTTL && ttl <= 0 {
		return rag.Errorf(op, rag.KindInvalid, "lease ttl must be positive, got %s", ttl)
	}
	return nil
}

// AcquireLease takes the named lease for holder until ttl passes; true when taken (or renewed by the
// same holder), false when another holder's unexpired lease stands. Errors: Invalid for an empty or
// over-long name or holder or a non-positive ttl; Unavailable when the database cannot be reached.
func (s *DB) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	const op = "sqldb.AcquireLease"
	if err := validLease(op, name, holder, ttl, true); err != nil {
		return false, err
	}
	now := ms(s.now())
	exp := now + ttl.Milliseconds()
	if ttl.Milliseconds() == 0 {
		exp = now + 1
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO leases (name, holder, expires_at, acquired_at) VALUES (?, ?, ?, ?)`,
		name, holder, exp, now)
	if err == nil {
		return true, nil
	}
	if s.dialect.IsDuplicate == nil || !s.dialect.IsDuplicate(err) {
		return false, s.classify(op, err)
	}
	// The row exists: take it over when it is ours or has expired. One conditional UPDATE, so two
	// contenders for an expired lease cannot both win (the second one's WHERE no longer matches).
	res, err := s.db.ExecContext(ctx, `UPDATE leases SET holder = ?, expires_at = ?, acquired_at = ?
		WHERE name = ? AND (holder = ? OR expires_at <= ?)`, holder, exp, now, name, holder, now)
	if err != nil {
		return false, s.classify(op, err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return true, nil
	}
	// Zero rows can also mean "matched but unchanged" on engines that count changed rows (a renewal within
	// the same millisecond): look before answering.
	var cur string
	var curExp int64
	err = s.db.QueryRowContext(ctx, `SELECT holder, expires_at FROM leases WHERE name = ?`, name).Scan(&cur, &curExp)
	if err == sql.ErrNoRows {
		return false, nil // released between our two statements: the caller retries if it wants
	}
	if err != nil {
		return false, s.classify(op, err)
	}
	return cur == holder && curExp > now, nil
}

// ReleaseLease gives the lease up if holder has it; otherwise nothing happens. Errors: Invalid for an
// empty or over-long name or holder; Unavailable when the database cannot be reached.
func (s *DB) ReleaseLease(ctx context.Context, name, holder string) error {
	const op = "sqldb.ReleaseLease"
	if err := validLease(op, name, holder, 0, false); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder); err != nil {
		return s.classify(op, err)
	}
	return nil
}
