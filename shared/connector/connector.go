// Package connector is the contract between docmind and a source of documents outside the drop folder
// (a web site, Confluence, SharePoint/OneDrive, Google Drive: issue #23), and the sync engine that feeds
// a source's items through the ordinary ingestion (ingest.Service: the same stages, content-hash
// idempotency, per-source leases and reconcile classes as an upload or a dropped file).
//
// A connector lists what changed since a cursor (the source's own change feed, or a full enumeration
// where the source has none), fetches one item with its metadata and permissions, reports deletions,
// and validates its credentials. The engine owns everything else: which documents exist, retries of
// failed items, the cursor, progress and status, the dry run.
package connector

import (
	"context"
	"errors"
	"time"
)

// Source is one configured connector. Implementations are safe for one sync at a time.
type Source interface {
	// Validate checks the configuration and credentials with one cheap call to the source. Permission
	// when the credentials are refused, Invalid for a bad configuration, Unavailable when the source
	// cannot be reached.
	Validate(ctx context.Context) error
	// Changes lists what changed since cursor ("" for a first sync: every item). known is every item
	// the engine holds from earlier syncs, for sources without a change feed (conditional requests, the
	// links of an unchanged page). The listing's Cursor is persisted only once every change in it has
	// been applied or recorded as failed.
	Changes(ctx context.Context, cursor string, known []Known) (Listing, error)
	// Fetch returns one item. An item that is gone at the source (deleted, trashed, 404/410) returns an
	// error wrapping ErrGone; prev carries the validators of the last fetch, and an unchanged item
	// may come back with NotModified set and no Data.
	Fetch(ctx context.Context, id string, prev Known) (Item, error)
}

// ErrGone marks an item that no longer exists at the source: the engine deletes its document.
var ErrGone = errors.New("connector: item is gone at the source")

// Known is what the engine remembers of one item from earlier syncs.
type Known struct {
	ID      string
	Version string // the source's version, ETag or modification stamp at the last fetch
	State   string // the connector's own JSON (validators, links), returned as it was stored
}

// Listing is one sync's changes.
type Listing struct {
	Changes []Change
	// Cursor is the change-feed position to resume from after these changes.
	Cursor string
	// Complete says Changes enumerates every live item (a crawl): a known item missing from it was
	// deleted at the source. Change feeds leave it false and report deletions as changes.
	Complete bool
	// Calls counts the requests made to the source while listing (the figure a sync reports).
	Calls int
}

// Change is one item that is new, changed or deleted.
type Change struct {
	ID      string
	Deleted bool
	// Item is set when listing already fetched the item (a crawl reads each page to find its links);
	// the engine then does not call Fetch.
	Item *Item
}

// Item is one fetched item.
type Item struct {
	ID string
	// Name is the file name the document shows in citations; its extension chooses the parser
	// (".html" for a web page, ".md" for a Confluence page's storage format converted, ".docx" ...).
	Name string
	// URL is the item's canonical address at the source, kept as metadata and shown with citations.
	URL  string
	Data []byte
	// Version changes whenever the content does (an ETag, a version number, a revision id).
	Version  string
	Modified time.Time
	// Metadata is the item's key/value fields at the source (author, labels, space, path, ...).
	Metadata map[string]string
	// Permissions are the principals the source lets read the item, as the source names them
	// (user:<email>, group:<name>, domain:<d>, anyone, or the source's own form). They are recorded
	// normalised with the item (ItemRecord) and enforced per document unless the connector sets
	// enforce_permissions to false (shared/access); nil is no list: every reader of the knowledge base.
	Permissions []string
	// State is the connector's own JSON to keep for the next sync (validators, links).
	State string
	// NotModified says the source answered that the item is unchanged since prev (HTTP 304): no Data.
	NotModified bool
	// Calls counts the requests this fetch made.
	Calls int
}

// LastOfEach keeps, of a change feed in which an item may appear more than once (Graph's delta,
// Drive's changes), each item's last occurrence, in feed order: its last change is its state.
func LastOfEach[T any](feed []T, id func(T) string) []T {
	last := make(map[string]int, len(feed))
	for i, x := range feed {
		last[id(x)] = i
	}
	kept := feed[:0:0]
	for i, x := range feed {
		if last[id(x)] == i {
			kept = append(kept, x)
		}
	}
	return kept
}
