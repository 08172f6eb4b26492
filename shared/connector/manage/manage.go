// Package manage runs the operations on connectors that `docmind connector`, the HTTP API (the page's
// knowledge-base settings) and `docmind serve` share: add (an operator's, or a member's with its
// credentials confined to its knowledge base), check, sync (now, in the background or as a dry run) and
// remove. Sources are built by shared/connector/sources, the one place that knows every connector type.
package manage

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/sources"
	"github.com/docmind/docmind/shared/rag"
)

// Store is the relational store as connectors use it (sqldb.DB).
type Store interface {
	connector.State
	connector.Documents
	connector.Leases
	connector.MetadataStore
	CreateConnector(ctx context.Context, c *rag.Connector) error
	ListConnectors(ctx context.Context, tenant string) ([]rag.Connector, error)
	SetConnectorInterval(ctx context.Context, tenant, name string, seconds int64) error
}

// Manager runs the operations on a tenant's connectors.
type Manager struct {
	Store   Store
	Indexer connector.Indexer // ingest.Service
	// Config gives the sources the allow list of DOCMIND_CONNECTOR_ALLOW_HOSTS and the response cap.
	Config config.Config
	// Getenv supplies credentials still missing after a connector's file or secret
	// (DOCMIND_CONNECTOR_<NAME>_<KEY>); Secrets reads Secrets Manager (nil locally).
	Getenv  func(string) string
	Secrets connector.SecretReader
	Log     *slog.Logger // nil: discarded
	// CredentialsDir is where connectors added by members (AddMember) keep their credentials files,
	// one folder per knowledge base id: <dir>/<kb id>/<file>. Empty: members name no credentials.
	CredentialsDir string

	mu     sync.Mutex
	bg     context.Context // background syncs run under it; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (m *Manager) engine() *connector.Engine {
	return &connector.Engine{Indexer: m.Indexer, Documents: m.Store, State: m.Store, Leases: m.Store, Metadata: m.Store, Log: m.log()}
}

func (m *Manager) log() *slog.Logger {
	if m.Log != nil {
		return m.Log
	}
	return slog.New(slog.DiscardHandler)
}

// List returns the tenant's connectors by name.
func (m *Manager) List(ctx context.Context, tenant string) ([]rag.Connector, error) {
	return m.Store.ListConnectors(ctx, tenant)
}

// Get returns one connector; NotFound when the tenant has none of that name.
func (m *Manager) Get(ctx context.Context, tenant, name string) (rag.Connector, error) {
	return m.Store.GetConnector(ctx, tenant, name)
}

// Add records a new connector of c.Tenant into c.KBID, once its name and settings are valid and its
// credentials load (and, with check, once the source answers: one request). Invalid naming the
// problem; Conflict when the tenant has a connector of that name; the source's own error (Permission,
// Unavailable, ...) when check fails.
func (m *Manager) Add(ctx context.Context, c *rag.Connector, check bool) error {
	return m.add(ctx, m.Getenv, m.Secrets, c, check)
}

// source builds the connector's Source with the manager's credentials sources.
func (m *Manager) source(ctx context.Context, c rag.Connector) (connector.Source, error) {
	return sources.Build(ctx, m.Config, c, m.Getenv, m.Secrets)
}

func (m *Manager) add(ctx context.Context, getenv func(string) string, secrets connector.SecretReader, c *rag.Connector, check bool) error {
	const op = "manage.Add"
	if err := rag.ValidateConnectorName(c.Name); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	src, err := sources.Build(ctx, m.Config, *c, getenv, secrets)
	if err != nil {
		return err
	}
	if check {
		if err := src.Validate(ctx); err != nil {
			return fmt.Errorf("connector %s does not answer: %w", c.Name, err)
		}
	}
	if err := m.Store.CreateConnector(ctx, c); err != nil {
		if rag.Is(err, rag.KindConflict) {
			return rag.Errorf(op, rag.KindConflict, "a connector named %q exists already", c.Name)
		}
		return err
	}
	return nil
}

// Credential keys of a connector's settings.
const (
	keyFile   = connector.KeyCredentialsFile
	keySecret = connector.KeyCredentialsSecret
)

// AddMember is Add for a knowledge base's editor, who is not an operator: a secret or a file anywhere
// on the server would let an editor send another team's credentials to a URL of the editor's choice.
// So a member's connector names no Secrets Manager secret, and its credentials_file is a bare file
// name in its own knowledge base's folder, <CredentialsDir>/<kb id>/, which an operator fills; the
// file must hold every key (variables are not read for it).
func (m *Manager) AddMember(ctx context.Context, c *rag.Connector, check bool) error {
	const op = "manage.AddMember"
	raw := map[string]json.RawMessage{}
	if c.Config != "" {
		if err := json.Unmarshal([]byte(c.Config), &raw); err != nil {
			return rag.Errorf(op, rag.KindInvalid, "settings must be a JSON object")
		}
	}
	if _, ok := raw[keySecret]; ok {
		return rag.Errorf(op, rag.KindInvalid, "%s is set by an operator (docmind connector add); name a file in this knowledge base's credentials folder with %s", keySecret, keyFile)
	}
	if f, ok := raw[keyFile]; ok {
		var name string
		if err := json.Unmarshal(f, &name); err != nil || !bareName(name) {
			return rag.Errorf(op, rag.KindInvalid, "%s must be a file name (no folder) in this knowledge base's credentials folder", keyFile)
		}
		if m.CredentialsDir == "" {
			return rag.Errorf(op, rag.KindInvalid, "credentials files are not enabled here")
		}
		path := filepath.Join(m.CredentialsDir, c.KBID, name)
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			// the server's path stays on the server: the operator knows where the folder is
			return rag.Errorf(op, rag.KindInvalid, "no credentials file %q in this knowledge base's credentials folder (an operator puts it there)", name)
		}
		quoted, _ := json.Marshal(path)
		raw[keyFile] = quoted
		conf, _ := json.Marshal(raw)
		c.Config = string(conf)
	}
	return m.add(ctx, nil, nil, c, check)
}

// bareName accepts a plain file name: no folder, no parent, nothing hidden.
func bareName(s string) bool {
	return s != "" && len(s) <= 255 && !strings.ContainsAny(s, `/\`+"\x00") && !strings.HasPrefix(s, ".")
}

// Check builds the connector and asks its source one cheap question with its credentials: nil when
// it answers; Invalid for settings or credentials that cannot work; the source's error otherwise.
func (m *Manager) Check(ctx context.Context, tenant, name string) error {
	c, err := m.Store.GetConnector(ctx, tenant, name)
	if err != nil {
		return err
	}
	src, err := m.source(ctx, c)
	if err != nil {
		return err
	}
	return src.Validate(ctx)
}

// Sync runs one sync of the tenant's connector now and returns what it did (or, with dry, what it
// would do). See connector.Engine.Sync for the errors.
func (m *Manager) Sync(ctx context.Context, tenant, name string, dry bool) (connector.Result, error) {
	c, err := m.Store.GetConnector(ctx, tenant, name)
	if err != nil {
		return connector.Result{Connector: name}, err
	}
	src, err := m.source(ctx, c)
	if err != nil {
		return connector.Result{Connector: name}, err
	}
	return m.engine().Sync(ctx, tenant, name, src, connector.Options{DryRun: dry})
}

// Start begins a sync and returns once its status reads running; the sync goes on in the background
// until it ends or Close is called, and its outcome is the connector's status. Conflict when a sync
// of it is running already; NotFound, or Invalid for settings that cannot work, before anything runs.
func (m *Manager) Start(ctx context.Context, tenant, name string) error {
	c, err := m.Store.GetConnector(ctx, tenant, name)
	if err != nil {
		return err
	}
	src, err := m.source(ctx, c)
	if err != nil {
		return err
	}
	bg := m.background()
	if bg.Err() != nil {
		return rag.Errorf("manage.Start", rag.KindUnavailable, "the server is stopping")
	}
	run, err := m.engine().Begin(ctx, tenant, name, src, connector.Options{})
	if err != nil {
		return err
	}
	m.wg.Go(func() {
		res, err := run.Finish(bg)
		if err != nil {
			m.log().Warn("connector sync failed", "connector", name, "err", err)
			return
		}
		m.log().Info("connector synced", "connector", name, "status", res.Status, "added", res.Added, "updated", res.Updated,
			"deleted", res.Deleted, "failed", len(res.Failed), "not_modified", res.NotModified, "calls", res.Calls, "ms", res.ElapsedMS)
	})
	return nil
}

func (m *Manager) background() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bg == nil {
		m.bg, m.cancel = context.WithCancel(context.Background())
	}
	return m.bg
}

// Close cancels the background syncs and waits for them: each records status failed (the context
// ended) and releases its lease, so the next sync resumes from the stored cursor.
func (m *Manager) Close() {
	m.background()
	m.mu.Lock()
	m.cancel()
	m.mu.Unlock()
	m.wg.Wait()
}

// Remove deletes every document the connector indexed, then the connector; it returns how many
// documents were deleted. NotFound when there is none.
func (m *Manager) Remove(ctx context.Context, tenant, name string) (int, error) {
	return m.engine().Remove(ctx, tenant, name)
}

// Every is how often the schedule syncs c: its own interval (rag.Connector.IntervalSeconds), else def
// (DOCMIND_CONNECTOR_SYNC_INTERVAL); 0 when it is not synced by the schedule at all.
func Every(c rag.Connector, def time.Duration) time.Duration {
	switch {
	case c.IntervalSeconds == rag.IntervalNever:
		return 0
	case c.IntervalSeconds == 0:
		return max(def, 0)
	}
	return time.Duration(c.IntervalSeconds) * time.Second
}

// Due says whether the schedule should sync c now: every Every, counted from the start of its last
// sync, whatever its outcome; a connector never synced is due at once. A sync still running is left
// to its lease.
func Due(c rag.Connector, def time.Duration, now time.Time) bool {
	every := Every(c, def)
	if every <= 0 {
		return false
	}
	return c.StartedAt.IsZero() || !now.Before(c.StartedAt.Add(every))
}

// ScheduleTick is how often the schedule looks for due connectors: every minute, or at the default
// interval when that is shorter, so that per-connector intervals are kept to within a minute.
func ScheduleTick(def time.Duration) time.Duration {
	if def > 0 && def < time.Minute {
		return def
	}
	return time.Minute
}

// SetInterval changes how often the schedule syncs a connector (rag.Connector.IntervalSeconds).
// Invalid for an interval out of range; NotFound when there is no such connector.
func (m *Manager) SetInterval(ctx context.Context, tenant, name string, seconds int64) error {
	return m.Store.SetConnectorInterval(ctx, tenant, name, seconds)
}
