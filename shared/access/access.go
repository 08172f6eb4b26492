// Package access enforces the per-document access lists that connectors bring from their sources
// (issue #23): a page restricted to HR in Confluence, a Drive file shared with three people. docmind
// grants by knowledge base; this package narrows a knowledge base's reader to the documents whose
// source lets that reader read them.
//
// Model. A connector records, for each item it delivers, the principals the source lets read it
// (connector.Item.Permissions, kept in the item's record, connector_items.metadata). The record, not
// the document's metadata, is the access list: editors cannot change it (it is not metadata),
// ingestion never rewrites it (it is written by the sync engine alone), and it is keyed by the
// item's source URI, so it exists from the document's first moment. Principals are normalised here
// (Normalize): user:<email lower-case>, group:<name lower-case>, domain:<domain>, anyone, or a
// source's own form (sitegroup:<name>, organization, user:<id>) that DOCMIND_ACCESS_MAP grants.
//
// Enforcement. Denied returns the documents of some knowledge bases a principal may not read; the
// HTTP layer removes them from the document-id restriction every read path already carries (the
// same restriction a metadata filter resolves to, both retrieval legs and both adapters apply it,
// and the semantic cache keys on it), so the access list is ANDed with the user's own filter.
// Safe by construction: a document of an enforcing connector without an item record (indexed, its
// record not written yet) is denied, and a record that cannot be read denies too.
package access

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// Anyone is the principal every member of the knowledge base holds.
const Anyone = "anyone"

// SettingEnforce is the connector setting that turns enforcement off for one connector
// ("enforce_permissions": false); it is on by default.
const SettingEnforce = "enforce_permissions"

// Normalize returns principal p in docmind's form: the kind and the value lower-cased and trimmed
// ("User:Ann@Example.com" -> "user:ann@example.com"), "anyone" as is. "" for a principal with no
// value. Principals compare as normalised strings.
func Normalize(p string) string {
	p = strings.ToLower(strings.TrimSpace(p))
	kind, val, ok := strings.Cut(p, ":")
	if !ok {
		return p // anyone, organization: a principal without a value
	}
	kind, val = strings.TrimSpace(kind), strings.TrimSpace(val)
	if kind == "" || val == "" {
		return ""
	}
	return kind + ":" + val
}

// NormalizeAll normalises a source's list, dropping empty principals and repeats, sorted. A nil or
// empty list stays nil: no access list.
func NormalizeAll(ps []string) []string {
	var out []string
	for _, p := range ps {
		if n := Normalize(p); n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Map grants extra principals to docmind identities, for sources whose principals are not emails
// (DOCMIND_ACCESS_MAP): {"group:hr": ["sitegroup:hr members"], "domain:example.com": ["organization"]}.
// Keys and values are normalised when parsed.
type Map map[string][]string

// ParseMap reads DOCMIND_ACCESS_MAP: a JSON object of identity -> list of principals. "" is no map.
func ParseMap(raw string) (Map, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var in map[string][]string
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		return nil, fmt.Errorf("access map: a JSON object of identity (user:<email>, group:<name>, domain:<d>) -> list of principals: %v", err)
	}
	m := Map{}
	for k, vs := range in {
		id := Normalize(k)
		if id == "" {
			return nil, fmt.Errorf("access map: key %q names no principal", k)
		}
		m[id] = NormalizeAll(append(m[id], vs...))
	}
	return m, nil
}

// Identities is the set of principals p holds: anyone; user:<email> and domain:<its domain> for a
// real email (a token's unverified email was replaced by a synthetic one at sign-in, which grants
// nothing here); group:<g> for each group of the verified token; and what m grants to any of them.
func Identities(p rag.Principal, m Map) map[string]bool {
	ids := map[string]bool{Anyone: true}
	if email := strings.ToLower(strings.TrimSpace(p.Email)); email != "" && !strings.HasSuffix(email, ".invalid") {
		ids["user:"+email] = true
		if _, domain, ok := strings.Cut(email, "@"); ok && domain != "" {
			ids["domain:"+domain] = true
		}
	}
	for _, g := range p.Groups {
		if n := Normalize("group:" + g); n != "" {
			ids[n] = true
		}
	}
	for _, id := range maps(ids) {
		for _, extra := range m[id] {
			ids[extra] = true
		}
	}
	return ids
}

// maps is a copy of the identities' keys to range over while adding to the set.
func maps(ids map[string]bool) []string {
	out := make([]string, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	return out
}

// Readable reports whether a principal holding ids may read a document with access list list: nil
// (no list) is readable by every member of the knowledge base; otherwise one principal in common.
func Readable(list []string, ids map[string]bool) bool {
	if list == nil {
		return true
	}
	for _, p := range list {
		if ids[p] {
			return true
		}
	}
	return false
}

// Enforced reports whether a connector's settings (its JSON config) enforce its items' permissions:
// yes unless "enforce_permissions" is false. Settings that do not parse enforce: a connector whose
// settings cannot be read cannot sync either, and what it indexed stays as restricted as recorded.
func Enforced(config string) bool {
	if strings.TrimSpace(config) == "" {
		return true
	}
	var s map[string]json.RawMessage
	if json.Unmarshal([]byte(config), &s) != nil {
		return true
	}
	var on bool
	if raw, ok := s[SettingEnforce]; ok && json.Unmarshal(raw, &on) == nil {
		return on
	}
	return true
}

// SplitSettings takes the common setting out of a connector's JSON settings, returning the rest for
// the connector's own strict parser. Invalid when enforce_permissions is not a boolean.
func SplitSettings(raw []byte) (rest []byte, enforce bool, err error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return raw, true, nil
	}
	var s map[string]json.RawMessage
	if json.Unmarshal(raw, &s) != nil || s == nil {
		return raw, true, nil // the connector's parser says what is wrong with it
	}
	v, ok := s[SettingEnforce]
	if !ok {
		return raw, true, nil
	}
	if err := json.Unmarshal(v, &enforce); err != nil {
		return nil, false, rag.Errorf("access", rag.KindInvalid, "%s must be true or false", SettingEnforce)
	}
	delete(s, SettingEnforce)
	rest, _ = json.Marshal(s)
	return rest, enforce, nil
}

// RecordList reads the access list from an item's record (connector.ItemRecord's JSON: its
// "permissions"), normalised. ok is false for a record that does not decode, or an empty one (the
// record of an item that failed before it was ever fetched): the caller denies.
func RecordList(record string) (list []string, ok bool) {
	if strings.TrimSpace(record) == "" {
		return nil, false
	}
	var r struct {
		Permissions []string `json:"permissions"`
	}
	if json.Unmarshal([]byte(record), &r) != nil {
		return nil, false
	}
	return NormalizeAll(r.Permissions), true
}

// Store is what Denied reads (sqldb.DB).
type Store interface {
	ListConnectors(ctx context.Context, tenant string) ([]rag.Connector, error)
	ListConnectorItems(ctx context.Context, tenant, connector string) ([]rag.ConnectorItem, error)
	ListDocuments(ctx context.Context, tenant, kbID, status string) ([]rag.Document, error)
}

// LeanStore reads only what Denied needs (sqldb.DB): a store that has it is read through it.
type LeanStore interface {
	// ConnectorDocuments is the ids of a knowledge base's live documents whose source URI starts with
	// prefix, by source URI.
	ConnectorDocuments(ctx context.Context, tenant, kbID, prefix string) (map[string]string, error)
	// ConnectorRecords is each item's record of a connector, by source URI.
	ConnectorRecords(ctx context.Context, tenant, connector string) (map[string]string, error)
}

// deniedLean is Denied's loop over a LeanStore: the same rule, in two narrow reads per connector.
func deniedLean(ctx context.Context, st LeanStore, tenant string, byKB map[string][]rag.Connector, ids map[string]bool) (map[string]bool, error) {
	var denied map[string]bool
	for kb, cs := range byKB {
		for _, c := range cs {
			docs, err := st.ConnectorDocuments(ctx, tenant, kb, SourcePrefix(c.Name))
			if err != nil {
				return nil, fmt.Errorf("access: documents of %s: %w", c.Name, err)
			}
			if len(docs) == 0 {
				continue
			}
			recs, err := st.ConnectorRecords(ctx, tenant, c.Name)
			if err != nil {
				return nil, fmt.Errorf("access: items of %s: %w", c.Name, err)
			}
			for uri, id := range docs {
				rec, known := recs[uri]
				if known {
					if l, ok := RecordList(rec); ok && Readable(l, ids) {
						continue
					}
				}
				if denied == nil {
					denied = map[string]bool{}
				}
				denied[id] = true
			}
		}
	}
	return denied, nil
}

// Guard answers which documents a principal may not read.
type Guard struct {
	Store Store
	Map   Map
}

// SourcePrefix is the source-URI prefix of a connector's documents (connector.SourceURI).
func SourcePrefix(connector string) string { return "connector/" + connector + "/" }

// Denied returns the ids of the documents of the tenant's knowledge bases kbIDs that p may not read
// (nil when none). A tenant admin reads everything (the HTTP layer audits what an admin reads of a
// restricted document). Only documents of connectors that enforce permissions can be denied; of
// those, one whose item has no record, or a record that does not decode, is denied (its list is not
// known yet: fail closed). The knowledge bases must be ones p may read (the caller checked roles).
func (g Guard) Denied(ctx context.Context, p rag.Principal, kbIDs []string) (map[string]bool, error) {
	if p.IsAdmin() || g.Store == nil || len(kbIDs) == 0 {
		return nil, nil
	}
	conns, err := g.Store.ListConnectors(ctx, p.Tenant)
	if err != nil {
		return nil, fmt.Errorf("access: list connectors: %w", err)
	}
	byKB := map[string][]rag.Connector{}
	for _, c := range conns {
		if slices.Contains(kbIDs, c.KBID) && Enforced(c.Config) {
			byKB[c.KBID] = append(byKB[c.KBID], c)
		}
	}
	if len(byKB) == 0 {
		return nil, nil
	}
	ids := Identities(p, g.Map)
	if lean, ok := g.Store.(LeanStore); ok {
		return deniedLean(ctx, lean, p.Tenant, byKB, ids)
	}
	var denied map[string]bool
	for kb, cs := range byKB {
		lists := map[string][]string{} // source URI -> access list
		broken := map[string]bool{}    // source URIs whose record does not decode
		for _, c := range cs {
			items, err := g.Store.ListConnectorItems(ctx, p.Tenant, c.Name)
			if err != nil {
				return nil, fmt.Errorf("access: list items of %s: %w", c.Name, err)
			}
			for _, it := range items {
				if l, ok := RecordList(it.Metadata); ok {
					lists[it.SourceURI] = l
				} else {
					broken[it.SourceURI] = true
				}
			}
		}
		docs, err := g.Store.ListDocuments(ctx, p.Tenant, kb, "")
		if err != nil {
			return nil, fmt.Errorf("access: list documents: %w", err)
		}
		for _, d := range docs {
			if !fromAny(d.SourceURI, cs) {
				continue
			}
			l, known := lists[d.SourceURI]
			if known && !broken[d.SourceURI] && Readable(l, ids) {
				continue
			}
			if denied == nil {
				denied = map[string]bool{}
			}
			denied[d.ID] = true
		}
	}
	return denied, nil
}

// fromAny reports whether a document's source URI is one of the connectors'.
func fromAny(uri string, cs []rag.Connector) bool {
	for _, c := range cs {
		if strings.HasPrefix(uri, SourcePrefix(c.Name)) {
			return true
		}
	}
	return false
}

// Info is one document's access as GET /api/documents/{id} shows it.
type Info struct {
	// Connector is the connector the document comes from; Enforced whether it enforces permissions.
	Connector string `json:"connector"`
	Enforced  bool   `json:"enforced"`
	// Principals is the access list as recorded (normalised); empty with Restricted false: every
	// reader of the knowledge base.
	Principals []string `json:"principals"`
	// Restricted says that not every reader of the knowledge base may read it: a list without anyone
	// that is enforced, or an enforced document whose list is not known yet (denied until it is).
	Restricted bool `json:"restricted"`
}

// Of returns d's access, nil for a document no connector delivered (an upload, the drop folder).
func (g Guard) Of(ctx context.Context, tenant string, d rag.Document) (*Info, error) {
	if g.Store == nil {
		return nil, nil
	}
	conns, err := g.Store.ListConnectors(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("access: list connectors: %w", err)
	}
	for _, c := range conns {
		if c.KBID != d.KBID || !strings.HasPrefix(d.SourceURI, SourcePrefix(c.Name)) {
			continue
		}
		info := &Info{Connector: c.Name, Enforced: Enforced(c.Config), Principals: []string{}}
		items, err := g.Store.ListConnectorItems(ctx, tenant, c.Name)
		if err != nil {
			return nil, fmt.Errorf("access: list items of %s: %w", c.Name, err)
		}
		known := false
		for _, it := range items {
			if it.SourceURI == d.SourceURI {
				l, ok := RecordList(it.Metadata)
				known = ok
				if l != nil {
					info.Principals = l
				}
			}
		}
		info.Restricted = info.Enforced && (!known || len(info.Principals) > 0 && !slices.Contains(info.Principals, Anyone))
		return info, nil
	}
	return nil, nil
}
