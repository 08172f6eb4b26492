package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/manage"
	"github.com/docmind/docmind/shared/connector/sources"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

const connectorUsage = `usage: docmind connector add NAME --kb KB --type web|confluence|sharepoint|gdrive [--url URL] [--config FILE] [--no-validate]
       (confluence: --config {"space":"KEY","credentials_file":"..."} --url https://SITE.atlassian.net/wiki, or DOCMIND_CONNECTOR_<NAME>_EMAIL/_TOKEN)
       (sharepoint: --config {"site_id":"...","folder":"..."}, credentials tenant_id, client_id, client_secret)
       (gdrive: --config {"folder_id":"...","credentials_file":"<service account key>.json"})
       docmind connector list [--json]
       docmind connector sync NAME [--dry-run] [--json]
       docmind connector remove NAME
  (--config here is the connector's JSON settings; docmind's own config file comes from DOCMIND_CONFIG)`

// cmdConnector manages connectors: sources outside the drop folder synced into a knowledge base
// (docs/connectors.md).
func cmdConnector(e env, args []string) int {
	var c common
	fs := newFlags("connector", e, &c)
	kbName := fs.String("kb", "", "knowledge base the connector feeds (connector add; created when missing)")
	typ := fs.String("type", "", "web, confluence, sharepoint or gdrive (connector add)")
	urlFlag := fs.String("url", "", "the site, wiki or start page (connector add; sets \"url\" in the settings)")
	dry := fs.Bool("dry-run", false, "list and fetch, change nothing, print what a sync would do (connector sync)")
	noValidate := fs.Bool("no-validate", false, "add without checking that the source answers (connector add)")
	fs.Usage = func() { fmt.Fprintln(e.stderr, connectorUsage); fs.PrintDefaults() }
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	want := map[string]int{"add": 2, "list": 1, "sync": 2, "remove": 2}
	if len(rest) == 0 || want[rest[0]] != len(rest) {
		fs.Usage()
		return exitConfig
	}
	settings := c.configFile
	c.configFile = "" // the flag names the connector's settings here
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	switch rest[0] {
	case "add":
		return connectorAdd(e, cfg, rest[1], *kbName, *typ, *urlFlag, settings, !*noValidate)
	case "list":
		return connectorList(e, cfg, c.json)
	case "sync":
		return connectorSync(e, cfg, rest[1], *dry, c.json)
	default:
		return connectorRemove(e, cfg, rest[1])
	}
}

func connectorAdd(e env, cfg config.Config, name, kbName, typ, urlFlag, settings string, validate bool) int {
	if kbName == "" || typ == "" {
		fmt.Fprintln(e.stderr, connectorUsage)
		return exitConfig
	}
	raw := map[string]any{}
	if settings != "" {
		b, err := os.ReadFile(settings)
		if err != nil {
			return fail(e, rag.Errorf("docmind", rag.KindInvalid, "connector settings: %v", err))
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			return fail(e, rag.Errorf("docmind", rag.KindInvalid, "connector settings %s: not a JSON object: %v", settings, err))
		}
	}
	if urlFlag != "" {
		raw["url"] = urlFlag
	}
	conf, _ := json.Marshal(raw)
	c := rag.Connector{Tenant: cfg.Tenant, Name: name, Type: typ, Config: string(conf)}
	if err := rag.ValidateConnectorName(name); err != nil {
		return fail(e, rag.E("docmind", rag.KindInvalid, err))
	}
	sched, secrets, err := connectorAWS(e.ctx, cfg)
	if err != nil {
		return fail(e, err)
	}
	src, err := connectorSource(e.ctx, cfg, c, e.getenv, secrets)
	if err != nil {
		return fail(e, err)
	}
	if validate {
		if err := src.Validate(e.ctx); err != nil {
			return fail(e, fmt.Errorf("connector %s does not answer (add --no-validate to add it anyway): %w", name, err))
		}
	}
	db, err := openSQL(e.ctx, cfg)
	if err != nil {
		return fail(e, err)
	}
	defer db.Close()
	if _, err := db.Migrate(e.ctx); err != nil {
		return fail(e, err)
	}
	// a connector is an operator channel, like `docmind ingest --kb`: it adds only to a knowledge base
	// no member created or owns
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: db}}}
	kb, err := svc.OperatorKB(e.ctx, cfg.Tenant, kbName, "connector")
	if err != nil {
		return fail(e, err)
	}
	c.KBID = kb.ID
	if err := db.CreateConnector(e.ctx, &c); err != nil {
		if rag.Is(err, rag.KindConflict) {
			return fail(e, rag.Errorf("docmind", rag.KindInvalid, "a connector named %q exists already", name))
		}
		return fail(e, err)
	}
	if sched != nil {
		if err := scheduleConnector(e, cfg, sched, c); err != nil {
			db.DeleteConnector(context.WithoutCancel(e.ctx), cfg.Tenant, name) // no connector without its schedule
			return fail(e, fmt.Errorf("connector %s not added: its schedule: %w", name, err))
		}
	}
	audit(e, db, cfg.Tenant, "connector.add", name, typ+" into "+kb.Name)
	fmt.Fprintf(e.stdout, "connector %s added (%s into knowledge base %s); run: docmind connector sync %s\n", name, typ, kb.Name, name)
	return exitOK
}

func connectorList(e env, cfg config.Config, asJSON bool) int {
	db, err := openSQL(e.ctx, cfg)
	if err != nil {
		return fail(e, err)
	}
	defer db.Close()
	if _, err := db.Migrate(e.ctx); err != nil {
		return fail(e, err)
	}
	list, err := db.ListConnectors(e.ctx, cfg.Tenant)
	if err != nil {
		return fail(e, err)
	}
	if asJSON {
		printJSON(e.stdout, list)
		return exitOK
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "no connectors")
	}
	for _, c := range list {
		last := "never synced"
		if !c.FinishedAt.IsZero() {
			last = "last sync " + c.FinishedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(e.stdout, "%s\t%s\tkb %s\t%s\t%s\t%s\n", c.Name, c.Type, c.KBID, c.Status, last, c.Progress)
		if c.LastError != "" {
			fmt.Fprintf(e.stdout, "\t%s\n", c.LastError)
		}
	}
	return exitOK
}

func connectorSync(e env, cfg config.Config, name string, dry, asJSON bool) int {
	s, svc, err := openIngest(e.ctx, cfg, nil)
	if err != nil {
		return fail(e, err)
	}
	defer s.Close()
	res, err := syncConnector(e.ctx, cfg, s.SQL, svc, name, dry, e.getenv, nil)
	if asJSON {
		printJSON(e.stdout, res)
	} else {
		printSync(e, res)
	}
	if err != nil {
		return fail(e, err)
	}
	if len(res.Failed) > 0 {
		return exitFail
	}
	return exitOK
}

func printSync(e env, r connector.Result) {
	verb := "synced"
	if r.DryRun {
		verb = "dry run"
		for _, it := range r.Items {
			fmt.Fprintf(e.stdout, "%-9s %s\t%s\n", it.Action, it.Name, it.ID)
		}
	}
	fmt.Fprintf(e.stdout, "%s %s: %d added, %d updated, %d deleted, %d failed (%d unchanged, %d not modified), %d calls, %d ms\n",
		r.Connector, verb, r.Added, r.Updated, r.Deleted, len(r.Failed), r.Unchanged, r.NotModified, r.Calls, r.ElapsedMS)
	for _, f := range r.Failed {
		fmt.Fprintf(e.stdout, "failed    %s: %s\n", f.ID, f.Error)
	}
}

func connectorRemove(e env, cfg config.Config, name string) int {
	s, svc, err := openIngest(e.ctx, cfg, nil)
	if err != nil {
		return fail(e, err)
	}
	defer s.Close()
	// the schedule goes first: no sync starts while the documents are being deleted
	if sched, _, err := connectorAWS(e.ctx, cfg); err != nil {
		return fail(e, err)
	} else if sched != nil {
		if _, err := s.SQL.GetConnector(e.ctx, cfg.Tenant, name); err != nil {
			return fail(e, err)
		}
		if err := sched.Delete(e.ctx, cfg.Tenant, name); err != nil {
			return fail(e, fmt.Errorf("connector %s not removed: its schedule: %w", name, err))
		}
	}
	n, err := connectorManager(cfg, s.SQL, svc, e.getenv, nil).Remove(e.ctx, cfg.Tenant, name)
	if err != nil {
		return fail(e, err)
	}
	audit(e, s.SQL, cfg.Tenant, "connector.remove", name, fmt.Sprintf("%d documents deleted", n))
	fmt.Fprintf(e.stdout, "connector %s removed; %d documents deleted\n", name, n)
	return exitOK
}

// syncConnector runs one sync of the tenant's connector name (manage.Manager.Sync: the same code as
// the HTTP API's).
func syncConnector(ctx context.Context, cfg config.Config, db *sqldb.DB, svc *ingest.Service, name string, dry bool,
	getenv func(string) string, log *slog.Logger) (connector.Result, error) {
	return connectorManager(cfg, db, svc, getenv, log).Sync(ctx, cfg.Tenant, name, dry)
}

// connectorSource builds a connector's Source from its stored settings (sources.Build). secrets reads
// Secrets Manager where a connector names a secret (nil locally).
func connectorSource(ctx context.Context, cfg config.Config, c rag.Connector, getenv func(string) string, secrets connector.SecretReader) (connector.Source, error) {
	return sources.Build(ctx, cfg, c, getenv, secrets)
}

// connectorLoop keeps serve's schedule (connector.Ticker, the local connector.Scheduler): each
// connector of the tenant synced on its own timer at its own interval (manage.Every: its interval,
// else def, DOCMIND_CONNECTOR_SYNC_INTERVAL), one sync at a time. The connectors are read again every
// manage.ScheduleTick, so one added, removed or re-timed by `docmind connector` or the HTTP API in
// another process is scheduled, dropped or re-timed; a sync that fails is logged (never its
// credentials) and retried at its next tick.
func (m *Main) connectorLoop(ctx context.Context, def time.Duration) {
	t := &connector.Ticker{Sync: func(ctx context.Context, tenant, name string) { m.syncOne(ctx, name) }}
	defer t.Close()
	tick := time.NewTicker(manage.ScheduleTick(def))
	defer tick.Stop()
	for {
		m.scheduleConnectors(ctx, t, def)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// scheduleConnectors brings the ticker in line with the connectors table.
func (m *Main) scheduleConnectors(ctx context.Context, t *connector.Ticker, def time.Duration) {
	list, err := m.Stores.SQL.ListConnectors(ctx, m.Config.Tenant)
	if err != nil {
		m.Logger.Warn("connector schedule: list failed", "err", err)
		return
	}
	live := map[string]bool{}
	for _, c := range list {
		every := manage.Every(c, def)
		if every <= 0 {
			continue // off: not scheduled (dropped below if it was)
		}
		live[c.Name] = true
		if err := t.Upsert(ctx, c, every); err != nil {
			m.Logger.Warn("connector schedule failed", "connector", c.Name, "err", err)
		}
	}
	for name := range t.Scheduled(m.Config.Tenant) {
		if !live[name] {
			t.Delete(ctx, m.Config.Tenant, name)
		}
	}
}

// syncOne runs one scheduled sync and logs its result.
func (m *Main) syncOne(ctx context.Context, name string) {
	res, err := syncConnector(ctx, m.Config, m.Stores.SQL, m.Ingest, name, false, os.Getenv, m.Logger)
	if err != nil {
		m.Logger.Warn("connector sync failed", "connector", name, "err", err)
		return
	}
	m.Logger.Info("connector synced", "connector", name, "status", res.Status, "added", res.Added, "updated", res.Updated,
		"deleted", res.Deleted, "failed", len(res.Failed), "not_modified", res.NotModified, "calls", res.Calls, "ms", res.ElapsedMS)
}
