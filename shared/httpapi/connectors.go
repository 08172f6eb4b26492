package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/rag"
)

// Connectors runs the operations on a tenant's connectors (manage.Manager): a knowledge base's
// settings on the page list, add, check, sync and remove the connectors that feed it
// (docs/connectors.md).
type Connectors interface {
	List(ctx context.Context, tenant string) ([]rag.Connector, error)
	Get(ctx context.Context, tenant, name string) (rag.Connector, error)
	// AddMember records a connector added by a knowledge base's editor: no secret, credentials only
	// from a file in the knowledge base's own credentials folder; check asks the source once.
	AddMember(ctx context.Context, c *rag.Connector, check bool) error
	Check(ctx context.Context, tenant, name string) error
	// Start begins a sync and returns once its status reads running (Conflict when one is running).
	Start(ctx context.Context, tenant, name string) error
	Sync(ctx context.Context, tenant, name string, dry bool) (connector.Result, error)
	Remove(ctx context.Context, tenant, name string) (int, error)
	// SetInterval changes how often the schedule syncs it (rag.Connector.IntervalSeconds).
	SetInterval(ctx context.Context, tenant, name string, seconds int64) error
}

// connectorRoutes serves a knowledge base's connectors to its editors; a reader gets 403, a caller
// who may not read the knowledge base 404, like a connector of another knowledge base or tenant.
func (l *library) connectorRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/kbs/{kb}/connectors", l.listConnectors)
	mux.HandleFunc("POST /api/kbs/{kb}/connectors", l.addConnector)
	mux.HandleFunc("GET /api/kbs/{kb}/connectors/{name}", l.getConnector)
	mux.HandleFunc("DELETE /api/kbs/{kb}/connectors/{name}", l.removeConnector)
	mux.HandleFunc("PATCH /api/kbs/{kb}/connectors/{name}", l.patchConnector)
	mux.HandleFunc("POST /api/kbs/{kb}/connectors/{name}/check", l.checkConnector)
	mux.HandleFunc("POST /api/kbs/{kb}/connectors/{name}/sync", l.syncConnector)
}

// connectorView is a connector as the API shows it: its settings without where its credentials are
// kept (Credentials says only from what kind of place), its status and the counts of its last or
// running sync. LastError and Progress come from the source's answers: untrusted text.
type connectorView struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	KBID        string          `json:"kb_id"`
	Settings    json.RawMessage `json:"settings"`
	Credentials string          `json:"credentials"`
	Interval    string          `json:"interval"` // "default", "off" or a duration ("15m", "6h")
	Status      string          `json:"status"`
	Progress    json.RawMessage `json:"progress,omitempty"`
	LastError   string          `json:"last_error,omitempty"`
	StartedAt   time.Time       `json:"started_at,omitzero"`
	FinishedAt  time.Time       `json:"finished_at,omitzero"`
	SucceededAt time.Time       `json:"succeeded_at,omitzero"`
	CreatedAt   time.Time       `json:"created_at"`
}

func viewConnector(c rag.Connector) connectorView {
	v := connectorView{Name: c.Name, Type: c.Type, KBID: c.KBID, Settings: connector.PublicSettings(c.Config),
		Credentials: connector.CredentialSource(c.Type, c.Config), Interval: formatInterval(c.IntervalSeconds), Status: c.Status, LastError: c.LastError,
		StartedAt: c.StartedAt, FinishedAt: c.FinishedAt, SucceededAt: c.SucceededAt, CreatedAt: c.CreatedAt}
	if c.Progress != "" && json.Valid([]byte(c.Progress)) {
		v.Progress = json.RawMessage(c.Progress)
	}
	return v
}

// connectorKB resolves {kb} and requires the editor role on it.
func (l *library) connectorKB(w http.ResponseWriter, r *http.Request) (rag.Principal, rag.KnowledgeBase, bool) {
	return l.kbAccess(w, r, rag.KBEditor)
}

// connectorOf resolves {kb} (editor) and its connector {name}: NotFound for a connector of another
// knowledge base, as for a missing one.
func (l *library) connectorOf(w http.ResponseWriter, r *http.Request) (rag.Principal, rag.KnowledgeBase, rag.Connector, bool) {
	p, kb, ok := l.connectorKB(w, r)
	if !ok {
		return p, kb, rag.Connector{}, false
	}
	name := r.PathValue("name")
	c, err := l.h.d.Connectors.Get(r.Context(), p.Tenant, name)
	if err == nil && c.KBID != kb.ID {
		err = rag.E("httpapi", rag.KindNotFound, nil)
	}
	if err != nil {
		l.fail(w, r, notFoundAs(err, "no connector %q in this knowledge base", name))
		return p, kb, rag.Connector{}, false
	}
	return p, kb, c, true
}

// listConnectors answers GET /api/kbs/{kb}/connectors: the knowledge base's connectors by name, and
// the types that may be added.
func (l *library) listConnectors(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := l.connectorKB(w, r)
	if !ok {
		return
	}
	all, err := l.h.d.Connectors.List(r.Context(), p.Tenant)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	out := []connectorView{}
	for _, c := range all {
		if c.KBID == kb.ID {
			out = append(out, viewConnector(c))
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"connectors": out, "types": rag.ConnectorTypes})
}

func (l *library) getConnector(w http.ResponseWriter, r *http.Request) {
	_, _, c, ok := l.connectorOf(w, r)
	if !ok {
		return
	}
	WriteJSON(w, http.StatusOK, viewConnector(c))
}

// addConnector answers POST /api/kbs/{kb}/connectors with {"name", "type", "settings": {...},
// "check": true}: the settings are validated as `docmind connector add` validates them (400 naming
// the problem), and unless "check" is false the source must answer one request with them (400 with
// its answer). 201 with the connector; 409 when the tenant has a connector of that name.
func (l *library) addConnector(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := l.connectorKB(w, r)
	if !ok {
		return
	}
	var in struct {
		Name     string          `json:"name"`
		Type     string          `json:"type"`
		Settings json.RawMessage `json:"settings"`
		Check    *bool           `json:"check"`
		Interval string          `json:"interval"`
	}
	if err := decodeBody(w, r, &in, `{"name": ..., "type": ..., "settings": {...}, "check": true, "interval": "default"}`); err != nil {
		l.fail(w, r, err)
		return
	}
	interval, err := parseInterval(in.Interval)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	settings := bytes.TrimSpace(in.Settings)
	if len(settings) == 0 || string(settings) == "null" {
		settings = []byte("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(settings, &obj); err != nil || obj == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "settings must be a JSON object"))
		return
	}
	c := rag.Connector{Tenant: p.Tenant, Name: in.Name, Type: in.Type, KBID: kb.ID, Config: string(settings), IntervalSeconds: interval}
	check := in.Check == nil || *in.Check
	if err := l.h.d.Connectors.AddMember(r.Context(), &c, check); err != nil {
		switch k := rag.KindOf(err); {
		case k == rag.KindConflict:
			err = rag.Errorf("httpapi", rag.KindConflict, "a connector named %q exists already", in.Name)
		case check && k != rag.KindInvalid && k != rag.KindInternal:
			// the source refused or could not be reached: its answer is what the editor needs
			err = rag.Errorf("httpapi", rag.KindInvalid, "%s (send \"check\": false to add it anyway)", callerText(err))
		}
		l.fail(w, r, err)
		return
	}
	l.h.audit(r.Context(), p, "connector.add", c.Name, fmt.Sprintf("%s into %s", c.Type, kb.ID))
	WriteJSON(w, http.StatusCreated, viewConnector(c))
}

// checkConnector answers POST .../connectors/{name}/check: 200 {"ok": true}, or {"ok": false,
// "error": {"code", "message"}} with the source's answer (its method, URL and status; never a
// credential).
func (l *library) checkConnector(w http.ResponseWriter, r *http.Request) {
	p, _, c, ok := l.connectorOf(w, r)
	if !ok {
		return
	}
	err := l.h.d.Connectors.Check(r.Context(), p.Tenant, c.Name)
	if err == nil {
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
		return
	}
	kind := rag.KindOf(err)
	msg := publicMessage(err)
	if kind != rag.KindInternal {
		msg = callerText(err)
	} else {
		l.h.d.Logger.Error("connector check failed", "connector", c.Name, "err", err)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": false, "error": map[string]string{"code": kind.String(), "message": msg}})
}

// syncConnector answers POST .../connectors/{name}/sync. Without a body, or with {"dry_run": false},
// the sync starts in the background: 202 with the connector, whose status already reads running (409
// when a sync of it is running). {"dry_run": true} lists and fetches, changes nothing, and answers 200
// with what a sync would do to each item (connector.Result).
func (l *library) syncConnector(w http.ResponseWriter, r *http.Request) {
	p, _, c, ok := l.connectorOf(w, r)
	if !ok {
		return
	}
	var in struct {
		DryRun bool `json:"dry_run"`
	}
	if r.ContentLength != 0 {
		if err := decodeBody(w, r, &in, `{"dry_run": true|false}`); err != nil {
			l.fail(w, r, err)
			return
		}
	}
	ops := l.h.d.Connectors
	if in.DryRun {
		res, err := ops.Sync(r.Context(), p.Tenant, c.Name, true)
		if err != nil {
			l.fail(w, r, syncError(err, c.Name))
			return
		}
		WriteJSON(w, http.StatusOK, res)
		return
	}
	if err := ops.Start(r.Context(), p.Tenant, c.Name); err != nil {
		l.fail(w, r, syncError(err, c.Name))
		return
	}
	l.h.audit(r.Context(), p, "connector.sync", c.Name, "started")
	now, err := ops.Get(r.Context(), p.Tenant, c.Name)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusAccepted, viewConnector(now))
}

// syncError puts a sync's refusal in the caller's terms.
func syncError(err error, name string) error {
	switch rag.KindOf(err) {
	case rag.KindConflict:
		return rag.Errorf("httpapi", rag.KindConflict, "a sync of %q is running already; its status shows its progress", name)
	case rag.KindPermission:
		// the source refused the credentials (a 403 would read as the caller's role): the settings
		// need fixing
		return rag.Errorf("httpapi", rag.KindInvalid, "%s", callerText(err))
	case rag.KindUnavailable:
		return rag.Errorf("httpapi", rag.KindUnavailable, "%s", callerText(err))
	}
	return err
}

// removeConnector answers DELETE .../connectors/{name}: every document the connector indexed is
// deleted, then the connector; 200 {"deleted": n}.
func (l *library) removeConnector(w http.ResponseWriter, r *http.Request) {
	p, _, c, ok := l.connectorOf(w, r)
	if !ok {
		return
	}
	n, err := l.h.d.Connectors.Remove(r.Context(), p.Tenant, c.Name)
	if err != nil {
		l.fail(w, r, notFoundAs(err, "no connector %q in this knowledge base", c.Name))
		return
	}
	l.h.audit(r.Context(), p, "connector.remove", c.Name, fmt.Sprintf("%d documents deleted", n))
	WriteJSON(w, http.StatusOK, map[string]int{"deleted": n})
}

// patchConnector answers PATCH /api/kbs/{kb}/connectors/{name} with {"interval": "default"|"off"|
// duration}: how often the schedule syncs it ("default": every DOCMIND_CONNECTOR_SYNC_INTERVAL;
// "off": only by hand; a duration from 5m to 720h). 200 with the connector; 400 naming the problem;
// audited.
func (l *library) patchConnector(w http.ResponseWriter, r *http.Request) {
	p, _, c, ok := l.connectorOf(w, r)
	if !ok {
		return
	}
	var in struct {
		Interval *string `json:"interval"`
	}
	if err := decodeBody(w, r, &in, `{"interval": "default" | "off" | "30m" | "6h"}`); err != nil {
		l.fail(w, r, err)
		return
	}
	if in.Interval == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, `the patch changes nothing: send {"interval": ...}`))
		return
	}
	secs, err := parseInterval(*in.Interval)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	if err := l.h.d.Connectors.SetInterval(r.Context(), p.Tenant, c.Name, secs); err != nil {
		if rag.Is(err, rag.KindNotFound) { // removed meanwhile
			err = rag.Errorf("httpapi", rag.KindNotFound, "no connector %q in this knowledge base", c.Name)
		}
		l.fail(w, r, err)
		return
	}
	l.h.audit(r.Context(), p, "connector.interval", c.Name, formatInterval(secs))
	now, err := l.h.d.Connectors.Get(r.Context(), p.Tenant, c.Name)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, viewConnector(now))
}

// parseInterval reads an interval as the API writes it: "" or "default" (0), "off"
// (rag.IntervalNever) or a Go duration of whole seconds within rag.ValidateConnectorInterval's range.
func parseInterval(s string) (int64, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "", "default":
		return 0, nil
	case "off", "never":
		return rag.IntervalNever, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d%time.Second != 0 {
		return 0, rag.Errorf("httpapi", rag.KindInvalid, `interval %q must be "default", "off" or a duration such as "30m" or "6h"`, s)
	}
	secs := int64(d / time.Second)
	if secs == 0 || secs == rag.IntervalNever {
		return 0, rag.Errorf("httpapi", rag.KindInvalid, "interval %q is too short", s)
	}
	if err := rag.ValidateConnectorInterval(secs); err != nil {
		return 0, rag.E("httpapi", rag.KindInvalid, err)
	}
	return secs, nil
}

// formatInterval writes an interval for the API: "default", "off", or "90m", "6h", "45s".
func formatInterval(secs int64) string {
	switch {
	case secs == 0:
		return "default"
	case secs == rag.IntervalNever:
		return "off"
	case secs%3600 == 0:
		return fmt.Sprintf("%dh", secs/3600)
	case secs%60 == 0:
		return fmt.Sprintf("%dm", secs/60)
	}
	return fmt.Sprintf("%ds", secs)
}
