package storetest

import (
	"fmt"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// TestSourceEvents runs the source-event contract (RecordSourceEvent / GetSourceEvent): the newest
// sequencer wins whatever the delivery order. open returns a fresh, empty, unmigrated database.
func TestSourceEvents(t *testing.T, open func(t *testing.T) *sqldb.DB) {
	migrated := func(t *testing.T) *sqldb.DB {
		db := open(t)
		if _, err := db.Migrate(ctxT(t)); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return db
	}
	ev := func(seq, kind string) sqldb.SourceEvent {
		return sqldb.SourceEvent{Tenant: "t1", KBID: "kb1", SourceURI: "inbox/kb/a b.md", Sequencer: seq, VersionID: "v" + seq, Event: kind}
	}
	record := func(t *testing.T, db *sqldb.DB, e sqldb.SourceEvent, want sqldb.EventOrder) {
		t.Helper()
		got, err := db.RecordSourceEvent(ctxT(t), e)
		if err != nil || got != want {
			t.Fatalf("RecordSourceEvent(%s %s) = %v, %v; want %v", e.Event, e.Sequencer, got, err, want)
		}
	}

	t.Run("FirstThenDuplicateThenOlder", func(t *testing.T) {
		db := migrated(t)
		record(t, db, ev("0055B0", sqldb.SourcePut), sqldb.EventNewer)
		record(t, db, ev("0055B0", sqldb.SourcePut), sqldb.EventSame)
		record(t, db, ev("0055b0", sqldb.SourcePut), sqldb.EventSame) // hex case does not matter
		record(t, db, ev("0055A0", sqldb.SourceDelete), sqldb.EventStale)
		got, err := db.GetSourceEvent(ctxT(t), "t1", "inbox/kb/a b.md")
		if err != nil || got.Event != sqldb.SourcePut || got.VersionID != "v0055B0" {
			t.Fatalf("GetSourceEvent = %+v, %v; want the put of 0055B0", got, err)
		}
	})

	// "FF" is shorter than "0100" but smaller: compared as strings without padding it would win.
	t.Run("DifferentLengthsCompareNumerically", func(t *testing.T) {
		db := migrated(t)
		record(t, db, ev("0100", sqldb.SourcePut), sqldb.EventNewer)
		record(t, db, ev("FF", sqldb.SourceDelete), sqldb.EventStale)
		record(t, db, ev("10000", sqldb.SourceDelete), sqldb.EventNewer)
		record(t, db, ev("FFFF", sqldb.SourcePut), sqldb.EventStale)
	})

	// ING-02 at the store: every order of put v1, put v2, delete leaves the highest sequencer recorded.
	t.Run("AllOrderingsHighestWins", func(t *testing.T) {
		events := []sqldb.SourceEvent{ev("1A0", sqldb.SourcePut), ev("1B00", sqldb.SourcePut), ev("1C00", sqldb.SourceDelete)}
		for _, perm := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
			t.Run(fmt.Sprint(perm), func(t *testing.T) {
				db := migrated(t)
				for _, i := range perm {
					for range 2 { // duplicates mixed in
						if _, err := db.RecordSourceEvent(ctxT(t), events[i]); err != nil {
							t.Fatal(err)
						}
					}
				}
				got, err := db.GetSourceEvent(ctxT(t), "t1", "inbox/kb/a b.md")
				if err != nil || got.Event != sqldb.SourceDelete || got.VersionID != "v1C00" {
					t.Fatalf("after %v: %+v, %v; want the delete 1C00", perm, got, err)
				}
			})
		}
	})

	t.Run("TenantsAreSeparate", func(t *testing.T) {
		db := migrated(t)
		record(t, db, ev("FF00", sqldb.SourcePut), sqldb.EventNewer)
		other := ev("01", sqldb.SourcePut)
		other.Tenant = "t2"
		record(t, db, other, sqldb.EventNewer)
		_, err := db.GetSourceEvent(ctxT(t), "t3", "inbox/kb/a b.md")
		checkKind(t, "GetSourceEvent(other tenant)", rag.KindNotFound, err)
	})

	t.Run("Invalid", func(t *testing.T) {
		db := migrated(t)
		for _, e := range []sqldb.SourceEvent{ev("", sqldb.SourcePut), ev("XYZ", sqldb.SourcePut), ev("01", "rename"),
			ev(fmt.Sprintf("%065d", 1), sqldb.SourcePut)} {
			_, err := db.RecordSourceEvent(ctxT(t), e)
			checkKind(t, fmt.Sprintf("RecordSourceEvent(%q, %q)", e.Sequencer, e.Event), rag.KindInvalid, err)
		}
	})
}
