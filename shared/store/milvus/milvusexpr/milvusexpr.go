// Package milvusexpr is what the Milvus adapter (shared/store/milvus) and its in-process test server
// (fakemilvus) share and the client library does not provide: the collection's field names, the filter
// expression built from a rag.Filter, and the classification of Milvus and gRPC errors into rag kinds.
package milvusexpr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/docmind/docmind/shared/rag"
)

// Field names of the collection.
const (
	FieldID     = "id"
	FieldTenant = "tenant"
	FieldKB     = "kb_id"
	FieldDoc    = "doc_id"
	FieldChunk  = "chunk_id"
	FieldTags   = "tags"
	FieldVector = "vector"
)

// MaxFilterIDs is the longest id list one expression carries; Milvus parses every literal, and a
// thousand keeps an expression far under its size limits.
const MaxFilterIDs = 1000

// MaxTopK is Milvus's limit on topk (and on offset + limit).
const MaxTopK = 16384

// Quote renders a validated id or tag as a Milvus string literal. Callers validate first: ids are
// [A-Za-z0-9_-] and tags carry no quote or backslash, so no escaping is needed and none is attempted.
func Quote(s string) string { return `"` + s + `"` }

// List renders validated values as a Milvus list literal.
func List(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Expr builds the filter expression for f. The tenant clause is always first and always present.
func Expr(f rag.Filter) (string, error) {
	if err := f.Validate(); err != nil {
		return "", err
	}
	if len(f.KBIDs) > MaxFilterIDs || len(f.DocumentIDs) > MaxFilterIDs || len(f.Tags) > MaxFilterIDs {
		return "", rag.Errorf("milvus.Expr", rag.KindInvalid, "a filter list is longer than %d", MaxFilterIDs)
	}
	parts := []string{FieldTenant + " == " + Quote(f.Tenant)}
	if len(f.KBIDs) > 0 {
		parts = append(parts, FieldKB+" in "+List(f.KBIDs))
	}
	if len(f.DocumentIDs) > 0 {
		parts = append(parts, FieldDoc+" in "+List(f.DocumentIDs))
	}
	if len(f.Tags) > 0 {
		parts = append(parts, "array_contains_any("+FieldTags+", "+List(f.Tags)+")")
	}
	return strings.Join(parts, " and "), nil
}

// Classify maps client and gRPC errors to kinds: transport failures, deadlines and rate limits are
// Unavailable (retry later); a missing collection is NotFound; the rest Internal. Milvus reports most
// failures in a response status rather than a gRPC code, so the message is matched as well.
func Classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return rag.E(op, rag.KindUnavailable, err)
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK && st.Code() != codes.Unknown {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Canceled, codes.Aborted:
			return rag.E(op, rag.KindUnavailable, err)
		case codes.NotFound:
			return rag.E(op, rag.KindNotFound, err)
		case codes.InvalidArgument:
			return rag.E(op, rag.KindInvalid, err)
		}
	}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "rate limit"), strings.Contains(msg, "service not ready"), strings.Contains(msg, "connection"),
		strings.Contains(msg, "not connected"), strings.Contains(msg, "unavailable"):
		return rag.E(op, rag.KindUnavailable, err)
	case strings.Contains(msg, "collection not found"), strings.Contains(msg, "can't find collection"):
		return rag.E(op, rag.KindNotFound, err)
	}
	return rag.E(op, rag.KindInternal, err)
}

// CheckUpsert validates a whole batch of records before anything is sent (Invalid names the first bad
// record) and refuses a cancelled context (Unavailable), as Upsert must.
func CheckUpsert(ctx context.Context, op string, dim int, recs []rag.VectorRecord) error {
	for i, r := range recs {
		if err := r.Validate(dim); err != nil {
			return rag.E(op, rag.KindInvalid, fmt.Errorf("record %d: %w", i, err))
		}
	}
	if err := ctx.Err(); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	return nil
}

// Options configure the adapter's connection to one collection (milvus.Options aliases this type).
type Options struct {
	// Addr is host:port, or an https:// URL for Zilliz Cloud (TLS, port 443 unless given; a path names
	// the database). Without https:// the connection is plain TCP.
	Addr       string
	Token      string // "user:password" or an API key; empty for an unauthenticated Milvus
	Collection string
	Dim        int
	// CallTimeout bounds every call (default 5 s); a dead server gives Unavailable after it.
	CallTimeout time.Duration
	// DialTimeout bounds connecting at start-up (default 3 s, LAM-01).
	DialTimeout time.Duration
	// StrongSearch searches at Strong consistency instead of Bounded (fresh within Milvus's graceful
	// time); Count is always Strong. A bool rather than a level: Strong is the protocol's zero value, so
	// an "unset means Bounded" level could never ask for Strong (the full adapter's could not, until
	// this was a bool).
	StrongSearch bool
	// Late is for the search side (the query function), which never creates or loads a collection: it
	// accepts one that does not exist or is not loaded yet. Until the collection is there every call
	// fails with the reason (NotFound, Unavailable) and a later call looks again.
	Late bool
	// Lazy opens nothing at Open: the connection, and the collection's creation or the Late look, are
	// made by the first call (a Lambda's init then pays no round trip to Milvus). A failure is that
	// call's error, and a later call tries again.
	Lazy bool
}

// WithDefaults checks the dimension and the collection name (Invalid) and fills the timeouts.
func (o Options) WithDefaults(op string) (Options, error) {
	if o.Dim < 2 {
		return o, rag.Errorf(op, rag.KindInvalid, "dimension must be at least 2, got %d", o.Dim)
	}
	if o.Collection == "" {
		return o, rag.Errorf(op, rag.KindInvalid, "collection name is required")
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 5 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	return o, nil
}

// DocumentExpr is the expression of one document's rows (DeleteDocument).
func DocumentExpr(tenant, kbID, documentID string) (string, error) {
	return Expr(rag.Filter{Tenant: tenant, KBIDs: []string{kbID}, DocumentIDs: []string{documentID}})
}

// DeleteExprs are the expressions deleting ids of one tenant, at most MaxFilterIDs ids each (Delete); Invalid for a bad tenant or id.
func DeleteExprs(tenant string, ids []string) ([]string, error) {
	if err := errors.Join(rag.ValidateID("tenant", tenant), rag.ValidateIDs("id", ids)); err != nil {
		return nil, err
	}
	var out []string
	for start := 0; start < len(ids); start += MaxFilterIDs {
		batch := ids[start:min(start+MaxFilterIDs, len(ids))]
		out = append(out, FieldTenant+" == "+Quote(tenant)+" and "+FieldID+" in "+List(batch))
	}
	return out, nil
}
