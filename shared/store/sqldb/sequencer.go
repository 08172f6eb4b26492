package sqldb

import (
	"context"
	"database/sql"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// Source events record, per source object, the newest S3 event seen, so that at-least-once, out-of-order
// delivery converges on the newest object state (ING-01, ING-02). The row outlives the document: after an
// ObjectRemoved it is the tombstone that makes a late ObjectCreated stale.

// Source event kinds.
const (
	SourcePut    = "put"
	SourceDelete = "delete"
)

// sequencerWidth is the padded width of a stored sequencer. S3 sequencers are hex strings of varying
// length (about 16-20 digits today); only after left-padding to one width does string order equal
// numeric order, and the column is VARCHAR(64).
const sequencerWidth = 64

// SequencerKey normalises an S3 sequencer to a fixed-width, upper-case hex string whose string order is
// its numeric order. Invalid when it is empty, not hex, or longer than 64 digits.
func SequencerKey(seq string) (string, error) {
	const op = "sqldb.SequencerKey"
	if seq == "" || len(seq) > sequencerWidth {
		return "", rag.Errorf(op, rag.KindInvalid, "sequencer must be 1-%d hex digits", sequencerWidth)
	}
	for _, c := range seq {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", rag.Errorf(op, rag.KindInvalid, "sequencer %q is not hex", seq)
		}
	}
	return strings.Repeat("0", sequencerWidth-len(seq)) + strings.ToUpper(seq), nil
}

// SourceEvent is the newest event recorded for one source.
type SourceEvent struct {
	Tenant    string `json:"tenant"`
	KBID      string `json:"kb_id"`
	SourceURI string `json:"source_uri"`
	Sequencer string `json:"sequencer"` // as given; stored padded
	VersionID string `json:"version_id,omitempty"`
	Event     string `json:"event"` // SourcePut or SourceDelete
}

// EventOrder says how an event compares with the one recorded before it.
type EventOrder int

const (
	// EventNewer: the event is newer than anything recorded (or the first); it is now the record.
	EventNewer EventOrder = iota + 1
	// EventSame: the same sequencer is recorded already (a duplicate delivery); nothing changed.
	EventSame
	// EventStale: a newer event is recorded; the event must be dropped.
	EventStale
)

func (o EventOrder) String() string {
	switch o {
	case EventNewer:
		return "newer"
	case EventSame:
		return "same"
	case EventStale:
		return "stale"
	}
	return "unknown"
}

func validSourceEvent(op string, ev SourceEvent) (string, error) {
	if err := validIDs(op, "tenant", ev.Tenant); err != nil {
		return "", err
	}
	// kb id is informational and may be empty: a removal for a knowledge base that no longer exists
	// still leaves its tombstone, or a late ObjectCreated would bring the document back.
	if ev.KBID != "" {
		if err := validIDs(op, "kb id", ev.KBID); err != nil {
			return "", err
		}
	}
	if ev.SourceURI == "" || len(ev.SourceURI) > 2048 || len(ev.VersionID) > 1024 {
		return "", rag.Errorf(op, rag.KindInvalid, "source uri must be 1-2048 bytes and version id at most 1024")
	}
	if ev.Event != SourcePut && ev.Event != SourceDelete {
		return "", rag.Errorf(op, rag.KindInvalid, "unknown source event %q", ev.Event)
	}
	return SequencerKey(ev.Sequencer)
}

// RecordSourceEvent stores ev as its source's newest event unless a newer one is recorded, in one
// conditional statement (so two racing deliveries cannot both win), and reports the order. Errors:
// Invalid for a bad event, Unavailable when the database cannot be reached.
func (s *DB) RecordSourceEvent(ctx context.Context, ev SourceEvent) (EventOrder, error) {
	const op = "sqldb.RecordSourceEvent"
	seq, err := validSourceEvent(op, ev)
	if err != nil {
		return 0, err
	}
	h, now := sourceHash(ev.SourceURI), ms(s.now())
	_, err = s.db.ExecContext(ctx, `INSERT INTO source_events (tenant_id, source_hash, kb_id, source_uri, sequencer, version_id, event, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, ev.Tenant, h, ev.KBID, ev.SourceURI, seq, ev.VersionID, ev.Event, now)
	if err == nil {
		return EventNewer, nil
	}
	if s.dialect.IsDuplicate == nil || !s.dialect.IsDuplicate(err) {
		return 0, s.classify(op, err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE source_events SET kb_id = ?, source_uri = ?, sequencer = ?, version_id = ?, event = ?, updated_at = ?
		WHERE tenant_id = ? AND source_hash = ? AND sequencer < ?`, ev.KBID, ev.SourceURI, seq, ev.VersionID, ev.Event, now, ev.Tenant, h, seq)
	if err != nil {
		return 0, s.classify(op, err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return EventNewer, nil
	}
	var cur string
	if err := s.db.QueryRowContext(ctx, `SELECT sequencer FROM source_events WHERE tenant_id = ? AND source_hash = ?`, ev.Tenant, h).Scan(&cur); err != nil {
		return 0, s.classify(op, err)
	}
	if cur == seq {
		return EventSame, nil
	}
	return EventStale, nil
}

// GetSourceEvent returns the newest event recorded for a source (Sequencer padded, as stored); NotFound
// when none is.
func (s *DB) GetSourceEvent(ctx context.Context, tenant, sourceURI string) (SourceEvent, error) {
	const op = "sqldb.GetSourceEvent"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return SourceEvent{}, err
	}
	ev := SourceEvent{Tenant: tenant}
	err := s.db.QueryRowContext(ctx, `SELECT kb_id, source_uri, sequencer, version_id, event FROM source_events
		WHERE tenant_id = ? AND source_hash = ?`, tenant, sourceHash(sourceURI)).Scan(&ev.KBID, &ev.SourceURI, &ev.Sequencer, &ev.VersionID, &ev.Event)
	if err == sql.ErrNoRows {
		return SourceEvent{}, rag.Errorf(op, rag.KindNotFound, "no event recorded for the source")
	}
	if err != nil {
		return SourceEvent{}, s.classify(op, err)
	}
	return ev, nil
}
