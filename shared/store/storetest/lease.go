package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// TestLeases runs the lease contract (AcquireLease / ReleaseLease). open returns a fresh, empty,
// unmigrated database.
func TestLeases(t *testing.T, open func(t *testing.T) *sqldb.DB) {
	migrated := func(t *testing.T) *sqldb.DB {
		db := open(t)
		if _, err := db.Migrate(ctxT(t)); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return db
	}
	acquire := func(t *testing.T, db *sqldb.DB, name, holder string, ttl time.Duration, want bool) {
		t.Helper()
		got, err := db.AcquireLease(ctxT(t), name, holder, ttl)
		if err != nil || got != want {
			t.Fatalf("AcquireLease(%q, %q, %s) = %v, %v; want %v", name, holder, ttl, got, err, want)
		}
	}

	t.Run("FreeLeaseIsTaken", func(t *testing.T) {
		db := migrated(t)
		acquire(t, db, "job:a", "h1", time.Hour, true)
	})

	t.Run("OtherHolderIsRefused", func(t *testing.T) {
		db := migrated(t)
		acquire(t, db, "job:a", "h1", time.Hour, true)
		acquire(t, db, "job:a", "h2", time.Hour, false)
	})

	t.Run("SameHolderRenews", func(t *testing.T) {
		db := migrated(t)
		acquire(t, db, "job:a", "h1", time.Hour, true)
		acquire(t, db, "job:a", "h1", time.Hour, true) // same millisecond or not
		acquire(t, db, "job:a", "h1", 2*time.Hour, true)
		acquire(t, db, "job:a", "h2", time.Hour, false)
	})

	t.Run("NamesAreIndependent", func(t *testing.T) {
		db := migrated(t)
		acquire(t, db, "job:a", "h1", time.Hour, true)
		acquire(t, db, "job:b", "h2", time.Hour, true)
		acquire(t, db, "JOB:A", "h2", time.Hour, true) // names are case-sensitive
	})

	t.Run("ReleaseByOtherHolderIsNoop", func(t *testing.T) {
		db := migrated(t)
		acquire(t, db, "job:a", "h1", time.Hour, true)
		must(t, db.ReleaseLease(ctxT(t), "job:a", "h2"))
		acquire(t, db, "job:a", "h2", time.Hour, false)
		must(t, db.ReleaseLease(ctxT(t), "job:never-taken", "h2"))
	})

	t.Run("ReleaseFreesTheLease", func(t *testing.T) {
		db := migrated(t)
		acquire(t, db, "job:a", "h1", time.Hour, true)
		must(t, db.ReleaseLease(ctxT(t), "job:a", "h1"))
		acquire(t, db, "job:a", "h2", time.Hour, true)
		acquire(t, db, "job:a", "h1", time.Hour, false)
	})

	t.Run("ExpiredLeaseIsTakenOver", func(t *testing.T) {
		db := migrated(t)
		acquire(t, db, "job:a", "h1", time.Millisecond, true)
		time.Sleep(20 * time.Millisecond) // only lets it expire: a loaded machine makes it more expired
		acquire(t, db, "job:a", "h2", time.Hour, true)
		acquire(t, db, "job:a", "h1", time.Hour, false) // the crashed holder came back too late
		// The late holder's release must not free the new holder's lease.
		must(t, db.ReleaseLease(ctxT(t), "job:a", "h1"))
		acquire(t, db, "job:a", "h3", time.Hour, false)
	})

	t.Run("ConcurrentContendersOneWins", func(t *testing.T) {
		db := migrated(t)
		const n = 12
		var wg sync.WaitGroup
		wins := make(chan string, n)
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := db.AcquireLease(ctxT(t), "job:race", fmt.Sprintf("h%d", i), time.Hour)
				if err != nil {
					errs <- err
				}
				if ok {
					wins <- fmt.Sprintf("h%d", i)
				}
			}()
		}
		wg.Wait()
		close(wins)
		close(errs)
		for err := range errs {
			t.Errorf("AcquireLease: %v", err)
		}
		var got []string
		for w := range wins {
			got = append(got, w)
		}
		if len(got) != 1 {
			t.Fatalf("winners = %v; want exactly one", got)
		}
	})

	t.Run("InvalidArguments", func(t *testing.T) {
		db := migrated(t)
		ctx := ctxT(t)
		for _, c := range []struct {
			name, holder string
			ttl          time.Duration
		}{
			{"", "h", time.Hour},
			{"n", "", time.Hour},
			{strings.Repeat("n", 256), "h", time.Hour},
			{"n", strings.Repeat("h", 256), time.Hour},
			{"n", "h", 0},
			{"n", "h", -time.Second},
		} {
			_, err := db.AcquireLease(ctx, c.name, c.holder, c.ttl)
			checkKind(t, fmt.Sprintf("AcquireLease(len %d, len %d, %s)", len(c.name), len(c.holder), c.ttl), rag.KindInvalid, err)
		}
		checkKind(t, "ReleaseLease(empty name)", rag.KindInvalid, db.ReleaseLease(ctx, "", "h"))
		checkKind(t, "ReleaseLease(empty holder)", rag.KindInvalid, db.ReleaseLease(ctx, "n", ""))
	})
}
