package storetest

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// TestConnectors runs the connector contract (CreateConnector, GetConnector, ListConnectors,
// SaveSyncState, DeleteConnector and the connector items). open returns a fresh, empty, unmigrated
// database.
func TestConnectors(t *testing.T, open func(t *testing.T) *sqldb.DB) {
	migrated := func(t *testing.T) *sqldb.DB {
		db := open(t)
		if _, err := db.Migrate(ctxT(t)); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return db
	}
	create := func(t *testing.T, db *sqldb.DB, tenant, name string) rag.Connector {
		t.Helper()
		c := rag.Connector{Tenant: tenant, Name: name, KBID: "kb1", Type: "web", Config: `{"url":"https://docs.example.com/"}`}
		if err := db.CreateConnector(ctxT(t), &c); err != nil {
			t.Fatalf("CreateConnector(%s/%s): %v", tenant, name, err)
		}
		return c
	}

	t.Run("CreateGetList", func(t *testing.T) {
		db := migrated(t)
		create(t, db, "t1", "wiki")
		create(t, db, "t1", "docs")
		create(t, db, "t2", "wiki")
		got, err := db.GetConnector(ctxT(t), "t1", "wiki")
		if err != nil || got.Type != "web" || got.KBID != "kb1" || got.Status != rag.SyncIdle || got.Cursor != "" ||
			!strings.Contains(got.Config, "docs.example.com") || got.CreatedAt.IsZero() || !got.StartedAt.IsZero() {
			t.Fatalf("GetConnector = %+v, %v; want the idle web connector", got, err)
		}
		list, err := db.ListConnectors(ctxT(t), "t1")
		if err != nil || len(list) != 2 || list[0].Name != "docs" || list[1].Name != "wiki" {
			t.Fatalf("ListConnectors(t1) = %+v, %v; want docs, wiki", list, err)
		}
	})

	t.Run("DuplicateNameConflicts", func(t *testing.T) {
		db := migrated(t)
		create(t, db, "t1", "wiki")
		c := rag.Connector{Tenant: "t1", Name: "wiki", KBID: "kb2", Type: "confluence"}
		if err := db.CreateConnector(ctxT(t), &c); !rag.Is(err, rag.KindConflict) {
			t.Fatalf("second CreateConnector(wiki) = %v; want Conflict", err)
		}
	})

	t.Run("BadInputIsInvalid", func(t *testing.T) {
		db := migrated(t)
		for _, c := range []rag.Connector{
			{Tenant: "t1", Name: "wiki", KBID: "kb1", Type: "ftp"},
			{Tenant: "t1", Name: "a/b", KBID: "kb1", Type: "web"},
			{Tenant: "t1", Name: "-x", KBID: "kb1", Type: "web"},
			{Tenant: "t1", Name: "wiki", KBID: "", Type: "web"},
			{Tenant: "", Name: "wiki", KBID: "kb1", Type: "web"},
		} {
			if err := db.CreateConnector(ctxT(t), &c); !rag.Is(err, rag.KindInvalid) {
				t.Errorf("CreateConnector(%+v) = %v; want Invalid", c, err)
			}
		}
	})

	t.Run("TenantsAreIsolated", func(t *testing.T) {
		db := migrated(t)
		create(t, db, "t1", "wiki")
		if _, err := db.GetConnector(ctxT(t), "t2", "wiki"); !rag.Is(err, rag.KindNotFound) {
			t.Fatalf("GetConnector(t2, wiki) = %v; want NotFound", err)
		}
		if err := db.SaveSyncState(ctxT(t), "t2", "wiki", rag.SyncState{Status: rag.SyncOK}); !rag.Is(err, rag.KindNotFound) {
			t.Fatalf("SaveSyncState(t2, wiki) = %v; want NotFound", err)
		}
		if err := db.PutConnectorItem(ctxT(t), "t1", "wiki", rag.ConnectorItem{ID: "https://x/a", SourceURI: "connector/wiki/1"}); err != nil {
			t.Fatal(err)
		}
		if items, err := db.ListConnectorItems(ctxT(t), "t2", "wiki"); err != nil || len(items) != 0 {
			t.Fatalf("ListConnectorItems(t2, wiki) = %+v, %v; want none", items, err)
		}
	})

	t.Run("SyncStateRoundTrips", func(t *testing.T) {
		db := migrated(t)
		create(t, db, "t1", "wiki")
		at := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
		want := rag.SyncState{Cursor: "cursor-2", Status: rag.SyncPartial, Progress: `{"added":3}`, LastError: "one item failed",
			StartedAt: at, FinishedAt: at.Add(time.Second), SucceededAt: at.Add(time.Second)}
		for range 2 { // the second, identical write must not look like a missing row
			if err := db.SaveSyncState(ctxT(t), "t1", "wiki", want); err != nil {
				t.Fatalf("SaveSyncState: %v", err)
			}
		}
		got, err := db.GetConnector(ctxT(t), "t1", "wiki")
		if err != nil || got.SyncState != want {
			t.Fatalf("GetConnector after SaveSyncState = %+v, %v; want %+v", got.SyncState, err, want)
		}
		if err := db.SaveSyncState(ctxT(t), "t1", "gone", want); !rag.Is(err, rag.KindNotFound) {
			t.Fatalf("SaveSyncState(gone) = %v; want NotFound", err)
		}
	})

	t.Run("ProgressAddsUpConcurrently", func(t *testing.T) {
		db := migrated(t)
		create(t, db, "t1", "wiki")
		if err := db.SaveSyncState(ctxT(t), "t1", "wiki", rag.SyncState{Status: rag.SyncRunning, Progress: `{"listed":40}`}); err != nil {
			t.Fatal(err)
		}
		// the Map iterations of one sync report at once: none may lose another's count. The in-process
		// MySQL-protocol server (go-mysql-server's memory engine) does not isolate concurrent UPDATEs, so
		// there the writers take turns; real MySQL/MariaDB (DOCMIND_TEST_MYSQL_DSN, as in CI) and SQLite race
		var wg sync.WaitGroup
		var turns sync.Mutex
		serial := db.Dialect() == "mysql" && !mysqltest.Real()
		errs := make(chan error, 40)
		for w := range 4 {
			wg.Go(func() {
				if serial {
					turns.Lock()
					defer turns.Unlock()
				}
				for range 10 {
					errs <- db.AddSyncProgress(ctxT(t), "t1", "wiki", map[string]int{"done": 1, []string{"added", "failed"}[w%2]: 1})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("AddSyncProgress: %v", err)
			}
		}
		got, _ := db.GetConnector(ctxT(t), "t1", "wiki")
		var p map[string]int
		if err := json.Unmarshal([]byte(got.Progress), &p); err != nil || p["listed"] != 40 || p["done"] != 40 || p["added"] != 20 || p["failed"] != 20 {
			t.Fatalf("progress after 40 concurrent adds = %s (%v); want listed 40, done 40, added 20, failed 20", got.Progress, err)
		}
		// a late report after the sync ended changes nothing
		if err := db.SaveSyncState(ctxT(t), "t1", "wiki", rag.SyncState{Status: rag.SyncOK, Progress: `{"done":40}`}); err != nil {
			t.Fatal(err)
		}
		if err := db.AddSyncProgress(ctxT(t), "t1", "wiki", map[string]int{"done": 1}); err != nil {
			t.Fatalf("AddSyncProgress after the end: %v", err)
		}
		if got, _ := db.GetConnector(ctxT(t), "t1", "wiki"); got.Progress != `{"done":40}` {
			t.Fatalf("a report after the end changed progress to %s", got.Progress)
		}
		if err := db.AddSyncProgress(ctxT(t), "t2", "wiki", map[string]int{"done": 1}); !rag.Is(err, rag.KindNotFound) {
			t.Fatalf("another tenant's AddSyncProgress = %v; want NotFound", err)
		}
	})

	t.Run("IntervalRoundTrips", func(t *testing.T) {
		db := migrated(t)
		c := rag.Connector{Tenant: "t1", Name: "hourly", KBID: "kb_1", Type: "web", Config: "{}", IntervalSeconds: 3600}
		if err := db.CreateConnector(ctxT(t), &c); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.GetConnector(ctxT(t), "t1", "hourly"); got.IntervalSeconds != 3600 {
			t.Fatalf("created with 3600 s, read back %d", got.IntervalSeconds)
		}
		for _, v := range []int64{rag.IntervalNever, 0, 900} {
			if err := db.SetConnectorInterval(ctxT(t), "t1", "hourly", v); err != nil {
				t.Fatalf("SetConnectorInterval(%d): %v", v, err)
			}
			if list, _ := db.ListConnectors(ctxT(t), "t1"); len(list) != 1 || list[0].IntervalSeconds != v {
				t.Fatalf("after setting %d: %+v", v, list)
			}
		}
		// setting the value it has already still finds the row (engines that count changed rows say 0)
		if err := db.SetConnectorInterval(ctxT(t), "t1", "hourly", 900); err != nil {
			t.Fatalf("SetConnectorInterval to the same value: %v", err)
		}
		for _, bad := range []int64{1, 299, -2, 31 * 24 * 3600} {
			if err := db.SetConnectorInterval(ctxT(t), "t1", "hourly", bad); !rag.Is(err, rag.KindInvalid) {
				t.Errorf("SetConnectorInterval(%d) = %v; want Invalid", bad, err)
			}
		}
		if err := db.SetConnectorInterval(ctxT(t), "t2", "hourly", 900); !rag.Is(err, rag.KindNotFound) {
			t.Errorf("another tenant's SetConnectorInterval = %v; want NotFound", err)
		}
		if got, _ := db.GetConnector(ctxT(t), "t1", "hourly"); got.IntervalSeconds != 900 {
			t.Fatalf("after the refused changes: %d; want 900", got.IntervalSeconds)
		}
	})

	t.Run("ItemsPutReplaceDelete", func(t *testing.T) {
		db := migrated(t)
		create(t, db, "t1", "wiki")
		long := "https://docs.example.com/" + strings.Repeat("a", 1500)
		put := func(it rag.ConnectorItem) {
			t.Helper()
			if err := db.PutConnectorItem(ctxT(t), "t1", "wiki", it); err != nil {
				t.Fatalf("PutConnectorItem(%s): %v", it.ID, err)
			}
		}
		put(rag.ConnectorItem{ID: long, SourceURI: "connector/wiki/x", Version: `"e1"`, State: `{"etag":"e1"}`})
		put(rag.ConnectorItem{ID: "https://docs.example.com/b", SourceURI: "connector/wiki/b", Error: "fetch: 500"})
		put(rag.ConnectorItem{ID: long, SourceURI: "connector/wiki/x", Version: `"e2"`, State: `{"etag":"e2"}`, Metadata: `{"author":"ann"}`})
		items, err := db.ListConnectorItems(ctxT(t), "t1", "wiki")
		if err != nil || len(items) != 2 {
			t.Fatalf("ListConnectorItems = %+v, %v; want 2 items", items, err)
		}
		byID := map[string]rag.ConnectorItem{}
		for _, it := range items {
			byID[it.ID] = it
		}
		if got := byID[long]; got.Version != `"e2"` || got.State != `{"etag":"e2"}` || got.Metadata != `{"author":"ann"}` || got.UpdatedAt.IsZero() {
			t.Errorf("long item = %+v; want version e2 (replaced)", got)
		}
		if got := byID["https://docs.example.com/b"]; got.Error != "fetch: 500" {
			t.Errorf("failed item = %+v; want its error kept", got)
		}
		if got, err := db.GetConnectorItem(ctxT(t), "t1", "wiki", long); err != nil || got.ID != long || got.Version != `"e2"` || got.State != `{"etag":"e2"}` {
			t.Errorf("GetConnectorItem(long) = %+v, %v; want version e2", got, err)
		}
		if _, err := db.GetConnectorItem(ctxT(t), "t2", "wiki", long); !rag.Is(err, rag.KindNotFound) {
			t.Errorf("GetConnectorItem of another tenant = %v; want NotFound", err)
		}
		if err := db.DeleteConnectorItem(ctxT(t), "t1", "wiki", long); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteConnectorItem(ctxT(t), "t1", "wiki", long); err != nil {
			t.Fatalf("second DeleteConnectorItem = %v; want nil", err)
		}
		if items, _ := db.ListConnectorItems(ctxT(t), "t1", "wiki"); len(items) != 1 {
			t.Fatalf("after delete: %+v; want 1 item", items)
		}
	})

	t.Run("DeleteRemovesItems", func(t *testing.T) {
		db := migrated(t)
		create(t, db, "t1", "wiki")
		if err := db.PutConnectorItem(ctxT(t), "t1", "wiki", rag.ConnectorItem{ID: "a", SourceURI: "connector/wiki/a"}); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteConnector(ctxT(t), "t1", "wiki"); err != nil {
			t.Fatalf("DeleteConnector: %v", err)
		}
		if err := db.DeleteConnector(ctxT(t), "t1", "wiki"); !rag.Is(err, rag.KindNotFound) {
			t.Fatalf("second DeleteConnector = %v; want NotFound", err)
		}
		create(t, db, "t1", "wiki") // the name is free again, with no items left over
		if items, err := db.ListConnectorItems(ctxT(t), "t1", "wiki"); err != nil || len(items) != 0 {
			t.Fatalf("items after re-create = %+v, %v; want none", items, err)
		}
	})
}
