package rag

import (
	"fmt"
	"time"
)

// Connector is a named source outside the drop folder (a web site, a Confluence space, a SharePoint or
// OneDrive drive, a Google Drive) that feeds one knowledge base (issue #23). Config is the connector's
// JSON settings; it never holds a credential.
type Connector struct {
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name"`
	KBID      string    `json:"kb_id"`
	Type      string    `json:"type"`
	Config    string    `json:"config"`
	CreatedAt time.Time `json:"created_at"`
	// IntervalSeconds is how often the schedule syncs it: 0 at the server's default interval,
	// IntervalNever never (only by hand), else every that many seconds.
	IntervalSeconds int64 `json:"interval_s"`
	SyncState
}

// IntervalNever is a connector synced only by hand.
const IntervalNever = -1

// MinConnectorInterval is the shortest interval a connector may have: a sync costs the source at
// least a listing.
const MinConnectorInterval = 5 * time.Minute

// ValidateConnectorInterval accepts 0 (the default), IntervalNever, or MinConnectorInterval to 30 days.
func ValidateConnectorInterval(seconds int64) error {
	if seconds == 0 || seconds == IntervalNever {
		return nil
	}
	if seconds < int64(MinConnectorInterval/time.Second) || seconds > 30*24*3600 {
		return fmt.Errorf("a connector's interval must be between %s and 720h, or off", MinConnectorInterval)
	}
	return nil
}

// SyncState is a connector's change-feed position and the status of its running or last sync.
type SyncState struct {
	Cursor      string    `json:"cursor,omitempty"` // the source's change-feed position after the last completed sync
	Status      string    `json:"status"`           // SyncIdle, SyncRunning, SyncOK, SyncPartial or SyncFailed
	Progress    string    `json:"progress,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	SucceededAt time.Time `json:"succeeded_at,omitzero"` // the last sync that ended ok or partial
}

// Sync statuses.
const (
	SyncIdle    = "idle"    // never synced
	SyncRunning = "running" // a sync is under way (or died: its lease says which)
	SyncOK      = "ok"      // the last sync applied every change
	SyncPartial = "partial" // the last sync finished with failed items, retried on the next one
	SyncFailed  = "failed"  // the last sync could not list the source (LastError says why)
)

// ConnectorTypes are the connector kinds docmind knows.
var ConnectorTypes = []string{"web", "confluence", "sharepoint", "gdrive"}

// ConnectorItem is one item a connector has delivered: its id at the source, the document's source URI,
// the version last indexed, the connector's own state (validators, links), the item's metadata and
// permissions at the source, and the last error.
type ConnectorItem struct {
	ID        string    `json:"id"`
	SourceURI string    `json:"source_uri"`
	Version   string    `json:"version,omitempty"`
	State     string    `json:"state,omitempty"`
	Metadata  string    `json:"metadata,omitempty"` // JSON: the item's metadata and permissions at the source
	Error     string    `json:"error,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ValidateConnectorName accepts 1-64 bytes of [A-Za-z0-9_-] starting with a letter or digit: the name
// appears in source URIs, lease names and the CLI.
func ValidateConnectorName(name string) error {
	if err := ValidateID("connector name", name); err != nil {
		return err
	}
	if len(name) > 64 {
		return fmt.Errorf("connector name is longer than 64 bytes")
	}
	if name[0] == '-' || name[0] == '_' {
		return fmt.Errorf("connector name %q must start with a letter or digit", name)
	}
	return nil
}
