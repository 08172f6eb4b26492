package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// Connectors and their items (migration 0011, issue #23). Every query is scoped by tenant; a connector
// name is unique within its tenant.

func validConnector(op, tenant, name string) error {
	if err := validIDs(op, "tenant", tenant); err != nil {
		return err
	}
	if err := rag.ValidateConnectorName(name); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	return nil
}

// CreateConnector records a new connector (status idle, empty cursor). Invalid for a bad name, type or
// knowledge-base id; Conflict when the tenant has a connector of that name.
func (s *DB) CreateConnector(ctx context.Context, c *rag.Connector) error {
	const op = "sqldb.CreateConnector"
	if err := validConnector(op, c.Tenant, c.Name); err != nil {
		return err
	}
	if err := validIDs(op, "kb id", c.KBID); err != nil {
		return err
	}
	if !slices.Contains(rag.ConnectorTypes, c.Type) {
		return rag.Errorf(op, rag.KindInvalid, "connector type %q is not one of %v", c.Type, rag.ConnectorTypes)
	}
	if c.Config == "" {
		c.Config = "{}"
	}
	if err := rag.ValidateConnectorInterval(c.IntervalSeconds); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	c.CreatedAt = fromMS(ms(s.now()))
	c.SyncState = rag.SyncState{Status: rag.SyncIdle}
	_, err := s.db.ExecContext(ctx, `INSERT INTO connectors (tenant_id, name, kb_id, type, config, sync_cursor, status, progress,
		last_error, started_at, finished_at, succeeded_at, created_at, sync_interval_s) VALUES (?, ?, ?, ?, ?, '', ?, '', '', 0, 0, 0, ?, ?)`,
		c.Tenant, c.Name, c.KBID, c.Type, c.Config, rag.SyncIdle, ms(c.CreatedAt), c.IntervalSeconds)
	return s.classify(op, err)
}

const connectorCols = `name, kb_id, type, config, sync_cursor, status, progress, last_error, started_at, finished_at, succeeded_at, created_at, sync_interval_s`

func scanConnector(tenant string, sc interface{ Scan(...any) error }) (rag.Connector, error) {
	c := rag.Connector{Tenant: tenant}
	var started, finished, succeeded, created int64
	err := sc.Scan(&c.Name, &c.KBID, &c.Type, &c.Config, &c.Cursor, &c.Status, &c.Progress, &c.LastError,
		&started, &finished, &succeeded, &created, &c.IntervalSeconds)
	c.CreatedAt = fromMS(created)
	c.StartedAt, c.FinishedAt, c.SucceededAt = fromMSOrZero(started), fromMSOrZero(finished), fromMSOrZero(succeeded)
	return c, err
}

// GetConnector returns the tenant's connector by name; NotFound when there is none.
func (s *DB) GetConnector(ctx context.Context, tenant, name string) (rag.Connector, error) {
	const op = "sqldb.GetConnector"
	if err := validConnector(op, tenant, name); err != nil {
		return rag.Connector{}, err
	}
	row := s.db.QueryRowContext(ctx, `SELECT `+connectorCols+` FROM connectors WHERE tenant_id = ? AND name = ?`, tenant, name)
	c, err := scanConnector(tenant, row)
	return c, s.classify(op, err)
}

// ListConnectors returns the tenant's connectors by name; empty when none.
func (s *DB) ListConnectors(ctx context.Context, tenant string) ([]rag.Connector, error) {
	const op = "sqldb.ListConnectors"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+connectorCols+` FROM connectors WHERE tenant_id = ? ORDER BY name`, tenant)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.Connector{}
	for rows.Next() {
		c, err := scanConnector(tenant, rows)
		if err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, c)
	}
	return out, s.classify(op, rows.Err())
}

// SaveSyncState writes a connector's cursor and sync status. NotFound when the connector is gone (it
// was removed while it synced).
func (s *DB) SaveSyncState(ctx context.Context, tenant, name string, st rag.SyncState) error {
	const op = "sqldb.SaveSyncState"
	if err := validConnector(op, tenant, name); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE connectors SET sync_cursor = ?, status = ?, progress = ?, last_error = ?,
		started_at = ?, finished_at = ?, succeeded_at = ? WHERE tenant_id = ? AND name = ?`,
		st.Cursor, st.Status, st.Progress, st.LastError, msOrZero(st.StartedAt), msOrZero(st.FinishedAt),
		msOrZero(st.SucceededAt), tenant, name)
	if err != nil {
		return s.classify(op, err)
	}
	return s.mustExist(ctx, op, res, tenant, name)
}

// AddSyncProgress adds delta to the counts of a running sync's progress (a JSON object of counts;
// negative deltas move an item from one count to another). Concurrent callers (the Map iterations
// of one sync on AWS) never lose each other's counts: each write is a compare-and-swap on the progress
// it read, tried again when another wrote in between (one UPDATE is atomic in every engine, where row
// locks taken by a read are not portable). Nothing is written once the sync is no longer running (a
// late retry after the run ended); NotFound when the connector is gone; Conflict when the row kept
// changing under it for every attempt.
func (s *DB) AddSyncProgress(ctx context.Context, tenant, name string, delta map[string]int) error {
	const op = "sqldb.AddSyncProgress"
	if err := validConnector(op, tenant, name); err != nil {
		return err
	}
	for range 100 {
		var status, prog string
		err := s.db.QueryRowContext(ctx, `SELECT status, progress FROM connectors WHERE tenant_id = ? AND name = ?`, tenant, name).Scan(&status, &prog)
		if err == sql.ErrNoRows {
			return rag.Errorf(op, rag.KindNotFound, "connector %q not found", name)
		}
		if err != nil {
			return s.classify(op, err)
		}
		if status != rag.SyncRunning {
			return nil
		}
		counts := map[string]int{}
		// a progress that is not counts (never written so) starts again from zero
		if prog != "" && json.Unmarshal([]byte(prog), &counts) != nil {
			counts = map[string]int{}
		}
		for k, v := range delta {
			counts[k] += v
		}
		b, err := json.Marshal(counts)
		if err != nil {
			return rag.E(op, rag.KindInternal, err)
		}
		if string(b) == prog {
			return nil // nothing changes (and an engine counting changed rows would report 0)
		}
		res, err := s.db.ExecContext(ctx, `UPDATE connectors SET progress = ? WHERE tenant_id = ? AND name = ? AND status = ? AND progress = ?`,
			string(b), tenant, name, rag.SyncRunning, prog)
		if err != nil {
			return s.classify(op, err)
		}
		if n, err := res.RowsAffected(); err == nil && n > 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return rag.E(op, rag.KindUnavailable, err)
		}
	}
	return rag.Errorf(op, rag.KindConflict, "progress of %q kept changing; not added", name)
}

// SetConnectorInterval changes how often the schedule syncs a connector (rag.Connector.IntervalSeconds).
// Invalid for an interval out of range; NotFound when there is no such connector.
func (s *DB) SetConnectorInterval(ctx context.Context, tenant, name string, seconds int64) error {
	const op = "sqldb.SetConnectorInterval"
	if err := validConnector(op, tenant, name); err != nil {
		return err
	}
	if err := rag.ValidateConnectorInterval(seconds); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE connectors SET sync_interval_s = ? WHERE tenant_id = ? AND name = ?`, seconds, tenant, name)
	if err != nil {
		return s.classify(op, err)
	}
	return s.mustExist(ctx, op, res, tenant, name)
}

// mustExist turns an UPDATE that matched no row into NotFound, looking first: engines that count changed
// rows report 0 for an update that wrote the same values.
func (s *DB) mustExist(ctx context.Context, op string, res sql.Result, tenant, name string) error {
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return nil
	}
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM connectors WHERE tenant_id = ? AND name = ?`, tenant, name).Scan(&one)
	if err == sql.ErrNoRows {
		return rag.Errorf(op, rag.KindNotFound, "connector %q not found", name)
	}
	return s.classify(op, err)
}

// msOrZero stores "never" (the zero time) as 0.
func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

func fromMSOrZero(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromMS(v)
}

// DeleteConnector removes a connector and its item records (not its documents: the caller deletes
// those first). NotFound when there is none.
func (s *DB) DeleteConnector(ctx context.Context, tenant, name string) error {
	const op = "sqldb.DeleteConnector"
	if err := validConnector(op, tenant, name); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM connector_items WHERE tenant_id = ? AND connector = ?`, tenant, name); err != nil {
		return s.classify(op, err)
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM connectors WHERE tenant_id = ? AND name = ?`, tenant, name)
	if err != nil {
		return s.classify(op, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return rag.Errorf(op, rag.KindNotFound, "connector %q not found", name)
	}
	return nil
}

// PutConnectorItem records (inserts or replaces) one item of a connector.
func (s *DB) PutConnectorItem(ctx context.Context, tenant, connector string, it rag.ConnectorItem) error {
	const op = "sqldb.PutConnectorItem"
	if err := validConnector(op, tenant, connector); err != nil {
		return err
	}
	if it.ID == "" || len(it.ID) > 2048 || len(it.SourceURI) > 2048 {
		return rag.Errorf(op, rag.KindInvalid, "connector item id must be 1-2048 bytes and its source uri at most 2048")
	}
	if len(it.Version) > 255 {
		it.Version = it.Version[:255]
	}
	h := sourceHash(it.ID)
	now := ms(s.now())
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.classify(op, err)
	}
	defer tx.Rollback()
	// delete then insert in one transaction: portable across both engines (no upsert dialects)
	if _, err := tx.ExecContext(ctx, `DELETE FROM connector_items WHERE tenant_id = ? AND connector = ? AND item_hash = ?`, tenant, connector, h); err != nil {
		return s.classify(op, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO connector_items (tenant_id, connector, item_hash, item_id, source_uri, version, state, metadata, error, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, tenant, connector, h, it.ID, it.SourceURI, it.Version, it.State, it.Metadata, it.Error, now); err != nil {
		return s.classify(op, err)
	}
	return s.classify(op, tx.Commit())
}

// GetConnectorItem returns one item of a connector; NotFound when it is not recorded. The AWS sync
// workflow reads one item per Map iteration instead of listing them all.
func (s *DB) GetConnectorItem(ctx context.Context, tenant, connector, id string) (rag.ConnectorItem, error) {
	const op = "sqldb.GetConnectorItem"
	if err := validConnector(op, tenant, connector); err != nil {
		return rag.ConnectorItem{}, err
	}
	var it rag.ConnectorItem
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT item_id, source_uri, version, state, metadata, error, updated_at FROM connector_items
		WHERE tenant_id = ? AND connector = ? AND item_hash = ?`, tenant, connector, sourceHash(id)).
		Scan(&it.ID, &it.SourceURI, &it.Version, &it.State, &it.Metadata, &it.Error, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return it, rag.Errorf(op, rag.KindNotFound, "connector item not found")
	}
	if err != nil {
		return it, s.classify(op, err)
	}
	it.UpdatedAt = fromMS(at)
	return it, nil
}

// DeleteConnectorItem forgets one item; a missing item is not an error.
func (s *DB) DeleteConnectorItem(ctx context.Context, tenant, connector, id string) error {
	const op = "sqldb.DeleteConnectorItem"
	if err := validConnector(op, tenant, connector); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM connector_items WHERE tenant_id = ? AND connector = ? AND item_hash = ?`,
		tenant, connector, sourceHash(id))
	return s.classify(op, err)
}

// ListConnectorItems returns every item of a connector, by id; empty when none.
func (s *DB) ListConnectorItems(ctx context.Context, tenant, connector string) ([]rag.ConnectorItem, error) {
	const op = "sqldb.ListConnectorItems"
	if err := validConnector(op, tenant, connector); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT item_id, source_uri, version, state, metadata, error, updated_at FROM connector_items
		WHERE tenant_id = ? AND connector = ? ORDER BY item_id`, tenant, connector)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.ConnectorItem{}
	for rows.Next() {
		var it rag.ConnectorItem
		var at int64
		if err := rows.Scan(&it.ID, &it.SourceURI, &it.Version, &it.State, &it.Metadata, &it.Error, &at); err != nil {
			return nil, s.classify(op, err)
		}
		it.UpdatedAt = fromMS(at)
		out = append(out, it)
	}
	return out, s.classify(op, rows.Err())
}
