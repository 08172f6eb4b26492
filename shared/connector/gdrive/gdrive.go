// Package gdrive is the Google Drive connector: a folder (with its subfolders), a shared drive or
// everything a service account can read, kept in step through the Drive API v3 Changes feed.
//
// A first sync takes changes.getStartPageToken before it lists, then lists the files with files.list
// (a `q` of `'<folder>' in parents` over the folder tree, nextPageToken paging); the start token is
// the cursor, so an edit made while the listing runs is found by the next sync. An incremental sync
// follows changes.list from the cursor (nextPageToken pages, newStartPageToken the next cursor):
// `removed` and `file.trashed` are deletions, and so is a file moved out of the folder tree or left
// under a folder that was trashed or moved out. Bytes come from files.get ?alt=media; Google Docs are
// exported as Markdown, Sheets as CSV (the first sheet) and Slides as plain text with files.export.
// An unchanged md5Checksum (or version, for Google's own formats) and name cost no download.
//
// On AWS a listing is paged (syncflow.PagedSource): it stops at a Drive page boundary when the
// invocation's time is up and hands on a token holding Drive's own page token (and, for a first sync,
// the start token and the files.list query under way); the cursor and Complete come with the last
// page only.
//
// Requests authenticate as a service account: its JSON key (from the connector's credentials) signs
// a JWT that golang.org/x/oauth2/google exchanges for a bearer token at the key's token_uri, cached
// until it expires; "impersonate" sets the JWT's subject for domain-wide delegation. Drive is spoken
// as plain REST through connector.HTTP, not with google.golang.org/api/drive/v3: the versions tried
// raise otelgrpc to v0.61, whose removed interceptors the etcd server pulled in by the Milvus client
// still calls (the build breaks), and only four read calls are used.
package gdrive

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/syncflow"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// Config is a Google Drive connector's JSON settings.
type Config struct {
	// FolderID limits the sync to one folder and its subfolders (the id in the folder's URL).
	FolderID string `json:"folder_id,omitempty"`
	// DriveID is a shared drive's id: its files are synced (with FolderID, the folder is in it).
	DriveID string `json:"drive_id,omitempty"`
	// Impersonate is a user the service account acts as (domain-wide delegation): that user's files.
	Impersonate string `json:"impersonate,omitempty"`
	// Endpoint is the Drive API v3 base (default https://www.googleapis.com/drive/v3).
	Endpoint string `json:"endpoint,omitempty"`
	// PageSize is the pageSize sent when listing (default 100; the API's maximum is 1000).
	PageSize int `json:"page_size,omitempty"`
	connector.CredentialRef
}

// CredentialKeys are the credentials a Drive connector needs: a service account's JSON key file's
// fields (credentials_file may name the key file as Google issues it).
var CredentialKeys = []string{"client_email", "private_key"}

// Scope is the only OAuth scope requested: read-only Drive.
const Scope = "https://www.googleapis.com/auth/drive.readonly"

// ParseConfig reads and checks the settings, reporting every problem.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, rag.Errorf("gdrive.ParseConfig", rag.KindInvalid, "gdrive connector config: %v", err)
	}
	var probs []string
	if c.Endpoint == "" {
		c.Endpoint = "https://www.googleapis.com/drive/v3"
	}
	if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		probs = append(probs, fmt.Sprintf("endpoint %q must be an http(s) URL", c.Endpoint))
	}
	for _, id := range []struct{ key, v string }{{"folder_id", c.FolderID}, {"drive_id", c.DriveID}} {
		if strings.ContainsAny(id.v, `'\ /?#`) {
			probs = append(probs, id.key+" must be a Drive id (letters, digits, - and _)")
		}
	}
	if c.PageSize < 0 || c.PageSize > 1000 {
		probs = append(probs, "page_size must be 1-1000")
	}
	if len(probs) > 0 {
		return c, rag.Errorf("gdrive.ParseConfig", rag.KindInvalid, "gdrive connector config: %s", strings.Join(probs, "; "))
	}
	c.Endpoint = strings.TrimSuffix(c.Endpoint, "/")
	if c.PageSize == 0 {
		c.PageSize = 100
	}
	return c, nil
}

// Connector syncs one folder tree, shared drive or account.
type Connector struct {
	cfg     Config
	http    *connector.HTTP
	api     *http.Client // with the bearer token
	authErr error
	// listed is the current listing's files by id (Fetch needs no metadata call for them); names are
	// the folder tree's names, for the path metadata.
	listed map[string]file
	names  map[string]string
}

var _ connector.Source = (*Connector)(nil)

// New returns a connector for cfg with the service account key fields in creds. A key that cannot be
// read is reported by every call (Invalid), never with its content.
func New(cfg Config, creds connector.Credentials, h *connector.HTTP) *Connector {
	c := &Connector{cfg: cfg, http: h}
	key := map[string]string{"type": "service_account"}
	for k, v := range creds {
		if k != "type" {
			key[k] = v
		}
	}
	raw, _ := json.Marshal(key)
	jc, err := google.JWTConfigFromJSON(raw, Scope)
	if err == nil {
		err = checkKey(jc.PrivateKey)
	}
	if err != nil {
		c.authErr = rag.Errorf("gdrive.New", rag.KindInvalid, "the service account key is not usable (client_email, private_key in PEM)")
		return c
	}
	jc.Subject = cfg.Impersonate
	tokenCtx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: h.Transport()})
	c.api = &http.Client{Transport: &oauth2.Transport{Source: jc.TokenSource(tokenCtx), Base: h.Transport()}}
	return c
}

// checkKey says whether a key is an RSA private key in PEM (PKCS#8 as Google issues it, or PKCS#1),
// so a garbled key is a configuration error at once rather than a failed request later.
func checkKey(b []byte) error {
	block, _ := pem.Decode(b)
	if block == nil {
		return errors.New("private_key is not PEM")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return nil
	}
	_, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	return err
}

// file is a Drive API v3 File resource with the fields asked for.
type file struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	MimeType          string   `json:"mimeType"`
	Trashed           bool     `json:"trashed"`
	Parents           []string `json:"parents"`
	Created           string   `json:"createdTime"`
	Modified          string   `json:"modifiedTime"`
	Version           string   `json:"version"`
	MD5               string   `json:"md5Checksum"`
	Size              string   `json:"size"`
	WebViewLink       string   `json:"webViewLink"`
	DriveID           string   `json:"driveId"`
	Owners            []person `json:"owners"`
	LastModifyingUser *person  `json:"lastModifyingUser"`
	// Permissions are returned to callers who may see them (not always on shared drives).
	Permissions []struct {
		Type   string `json:"type"` // user, group, domain, anyone
		Email  string `json:"emailAddress"`
		Domain string `json:"domain"`
	} `json:"permissions"`
}

type person struct {
	DisplayName  string `json:"displayName"`
	EmailAddress string `json:"emailAddress"`
}

const (
	fileFields = "id,name,mimeType,trashed,parents,createdTime,modifiedTime,version,md5Checksum,size,webViewLink,driveId," +
		"owners(displayName,emailAddress),lastModifyingUser(displayName,emailAddress),permissions(type,emailAddress,domain,role)"
	folderMime = "application/vnd.google-apps.folder"
)

// exports are the Google formats docmind reads, with the export type and the file extension that
// chooses the parser.
var exports = map[string]struct{ mime, ext string }{
	"application/vnd.google-apps.document":     {"text/markdown", ".md"},
	"application/vnd.google-apps.spreadsheet":  {"text/csv", ".csv"},
	"application/vnd.google-apps.presentation": {"text/plain", ".txt"},
}

// itemState is what the connector keeps per item between syncs.
type itemState struct {
	Name    string   `json:"name"`
	Parents []string `json:"parents,omitempty"`
}

// Validate reads the folder, the shared drive or the account's start page token with the credentials.
func (c *Connector) Validate(ctx context.Context) error {
	switch {
	case c.authErr != nil:
		return c.authErr
	case c.cfg.FolderID != "":
		var f file
		if err := c.getJSON(ctx, c.url("files/"+url.PathEscape(c.cfg.FolderID), url.Values{"fields": {"id,name,mimeType,trashed"}}), &f); err != nil {
			return err
		}
		if f.MimeType != folderMime || f.Trashed {
			return rag.Errorf("gdrive.Validate", rag.KindInvalid, "folder_id %s is not a folder (or is in the trash)", c.cfg.FolderID)
		}
		return nil
	default:
		_, err := c.startToken(ctx)
		return err
	}
}

// Changes lists every file (first sync) or follows the changes feed from the cursor, whole.
func (c *Connector) Changes(ctx context.Context, cursor string, known []connector.Known) (connector.Listing, error) {
	pg, err := c.ChangesPage(ctx, cursor, "", known, time.Time{})
	return pg.Listing, err
}

// Page is one invocation's part of a listing (syncflow's type: the port's consumer declares it).
type Page = syncflow.Page

var _ syncflow.PagedSource = (*Connector)(nil)

// pageToken is where a paged listing carries on. Start is a first sync's cursor (the start page token
// taken before its first page); Q is the files.list query under way and Page Drive's nextPageToken in
// it, or, for the changes feed, Page is changes.list's nextPageToken. Done is the greatest parent
// folder id whose query is finished ("~", above every id, when the one query without a folder is): the
// next query takes the next 40 folder ids after it, so a folder added or removed meanwhile shifts no
// folder out of the listing.
type pageToken struct {
	Start string `json:"start,omitempty"`
	Q     string `json:"q,omitempty"`
	Page  string `json:"page,omitempty"`
	Done  string `json:"done,omitempty"`
}

const allDone = "~"

// ChangesPage lists from token ("" at the start) until the listing is done or the clock passes until
// (zero: no limit), stopping at a Drive page boundary, at least one page in. A first sync's listing is
// complete and carries its cursor on its last page only; an incremental one's cursor is the
// newStartPageToken of the feed's last page.
func (c *Connector) ChangesPage(ctx context.Context, cursor, token string, known []connector.Known, until time.Time) (out Page, err error) {
	start := c.http.Calls
	defer func() { out.Listing.Calls = c.http.Calls - start }()
	if c.authErr != nil {
		return out, c.authErr
	}
	var st pageToken
	if token != "" {
		if json.Unmarshal([]byte(token), &st) != nil || (cursor == "" && st.Start == "") || (cursor != "" && st.Page == "") {
			return out, rag.Errorf("gdrive.ChangesPage", rag.KindInvalid, "a listing token that is not this connector's")
		}
	}
	c.listed, c.names = map[string]file{}, map[string]string{}
	if cursor == "" && st.Start == "" {
		// the position before anything is listed: what changes meanwhile is in the next sync's feed
		if st.Start, err = c.startToken(ctx); err != nil {
			return out, err
		}
	}
	var tree map[string]bool // the folder and its subfolders (nil: no folder configured)
	if c.cfg.FolderID != "" {
		if tree, err = c.folderTree(ctx); err != nil {
			return out, err
		}
	}
	past := func() bool { return !until.IsZero() && time.Now().After(until) }
	if cursor == "" {
		return c.firstListing(ctx, st, tree, past)
	}
	if st.Page == "" {
		st.Page = cursor
	}
	var feed []change
	for pages := 0; st.Page != ""; pages++ {
		if pages > 0 && past() {
			out.Next = encodeToken(st)
			break
		}
		var page struct {
			NextPageToken     string   `json:"nextPageToken"`
			NewStartPageToken string   `json:"newStartPageToken"`
			Changes           []change `json:"changes"`
		}
		q := c.driveParams(url.Values{"pageToken": {st.Page}, "pageSize": {strconv.Itoa(c.cfg.PageSize)}, "includeRemoved": {"true"},
			"spaces": {"drive"}, "fields": {"nextPageToken,newStartPageToken,changes(changeType,removed,fileId,file(" + fileFields + "))"}}, false)
		if err := c.getJSON(ctx, c.url("changes", q), &page); err != nil {
			return out, err
		}
		feed = append(feed, page.Changes...)
		switch {
		case page.NextPageToken != "":
			st.Page = page.NextPageToken
		case page.NewStartPageToken != "":
			st.Page, out.Listing.Cursor = "", page.NewStartPageToken
		default:
			return out, rag.Errorf("gdrive.Changes", rag.KindUnavailable, "a changes page without nextPageToken or newStartPageToken")
		}
	}
	out.Listing.Changes = c.feedChanges(feed, tree, known)
	return out, nil
}

func encodeToken(st pageToken) string {
	b, _ := json.Marshal(st)
	return string(b)
}

// change is a Changes resource with the fields asked for.
type change struct {
	ChangeType string `json:"changeType"`
	Removed    bool   `json:"removed"`
	FileID     string `json:"fileId"`
	File       *file  `json:"file"`
}

// feedChanges turns the changes of the feed's pages read in one invocation into the engine's.
func (c *Connector) feedChanges(feed []change, tree map[string]bool, known []connector.Known) []connector.Change {
	knownIDs := make(map[string]itemState, len(known))
	for _, k := range known {
		var st itemState
		json.Unmarshal([]byte(k.State), &st)
		knownIDs[k.ID] = st
	}
	var out []connector.Change
	// a file may change more than once in the feed: its last change is its state
	feed = connector.LastOfEach(feed, func(ch change) string { return ch.FileID })
	seen := map[string]bool{}
	gone := map[string]bool{} // folders trashed or removed in this feed
	for _, ch := range feed {
		if ch.ChangeType == "drive" || ch.FileID == "" {
			continue
		}
		_, isKnown := knownIDs[ch.FileID]
		switch f := ch.File; {
		case ch.Removed || f == nil || f.Trashed:
			if f == nil || f.MimeType == folderMime {
				gone[ch.FileID] = true
			}
			if isKnown {
				out = append(out, connector.Change{ID: ch.FileID, Deleted: true})
				seen[ch.FileID] = true
			}
		case f.MimeType == folderMime:
		case !c.inScope(*f, tree) || !indexable(*f):
			if isKnown { // moved out of the folder, or no longer a type docmind reads
				out = append(out, connector.Change{ID: ch.FileID, Deleted: true})
				seen[ch.FileID] = true
			}
		default:
			c.listed[f.ID] = *f
			out = append(out, connector.Change{ID: f.ID})
			seen[f.ID] = true
		}
	}
	// a file under a folder that was trashed, removed or moved out of the tree: the feed names the
	// folder, not always each file below it
	for _, id := range slices.Sorted(maps.Keys(knownIDs)) {
		if seen[id] {
			continue
		}
		for _, p := range knownIDs[id].Parents {
			if gone[p] || (tree != nil && !tree[p]) {
				out = append(out, connector.Change{ID: id, Deleted: true})
				break
			}
		}
	}
	return out
}

// firstListing lists every file in scope, one files.list query per 40 folders of the tree (one query
// without a folder), until it is done or past says the time is up: the listing is complete, and its
// last page carries the start token as the cursor.
func (c *Connector) firstListing(ctx context.Context, st pageToken, tree map[string]bool, past func() bool) (out Page, err error) {
	base := "trashed = false and mimeType != '" + folderMime + "'"
	parents := keys(tree)
	for pages := 0; ; pages++ {
		if st.Q == "" { // the next query, or the end
			switch {
			case st.Done == allDone:
			case tree == nil:
				st.Q = base
			default:
				i, _ := slices.BinarySearch(parents, st.Done)
				for i < len(parents) && parents[i] <= st.Done {
					i++
				}
				if chunk := parents[i:min(i+40, len(parents))]; len(chunk) > 0 {
					var or []string
					for _, p := range chunk {
						or = append(or, "'"+p+"' in parents")
					}
					st.Q = base + " and (" + strings.Join(or, " or ") + ")"
				}
			}
			if st.Q == "" {
				out.Listing.Cursor, out.Listing.Complete = st.Start, true
				return out, nil
			}
		}
		if pages > 0 && past() {
			out.Next = encodeToken(st)
			return out, nil
		}
		next, err := c.listPage(ctx, st.Q, st.Page, func(f file) {
			if indexable(f) && !f.Trashed {
				c.listed[f.ID] = f
				out.Listing.Changes = append(out.Listing.Changes, connector.Change{ID: f.ID})
			}
		})
		if err != nil {
			return out, err
		}
		if st.Page = next; next == "" {
			st.Done = allDone
			if tree != nil {
				st.Done = lastParent(st.Q)
			}
			st.Q = ""
		}
	}
}

// lastParent is the last folder id of a query's parents group (the query's chunk is sorted).
func lastParent(q string) string {
	q = strings.TrimSuffix(q, "' in parents)")
	return q[strings.LastIndex(q, "'")+1:]
}

// folderTree lists the configured folder's subfolders level by level (one files.list per level and
// per 40 parents), remembering their names for the path metadata.
func (c *Connector) folderTree(ctx context.Context) (map[string]bool, error) {
	tree := map[string]bool{c.cfg.FolderID: true}
	level := []string{c.cfg.FolderID}
	for depth := 0; len(level) > 0 && depth < 64; depth++ {
		var next []string
		err := c.inParents(ctx, "trashed = false and mimeType = '"+folderMime+"'", level, func(f file) {
			if !tree[f.ID] {
				tree[f.ID] = true
				c.names[f.ID] = f.Name
				next = append(next, f.ID)
			}
		})
		if err != nil {
			return nil, err
		}
		level = next
	}
	return tree, nil
}

// inParents lists the files matching q whose parent is one of parents, 40 parents to a query.
func (c *Connector) inParents(ctx context.Context, q string, parents []string, each func(file)) error {
	for i := 0; i < len(parents); i += 40 {
		var or []string
		for _, p := range parents[i:min(i+40, len(parents))] {
			or = append(or, "'"+p+"' in parents")
		}
		if err := c.list(ctx, q+" and ("+strings.Join(or, " or ")+")", each); err != nil {
			return err
		}
	}
	return nil
}

// list runs files.list with q, following nextPageToken.
func (c *Connector) list(ctx context.Context, q string, each func(file)) error {
	token := ""
	for {
		next, err := c.listPage(ctx, q, token, each)
		if err != nil || next == "" {
			return err
		}
		token = next
	}
}

// listPage runs one page of files.list with q from token ("" for the first) and returns the next.
func (c *Connector) listPage(ctx context.Context, q, token string, each func(file)) (string, error) {
	v := c.driveParams(url.Values{"q": {q}, "pageSize": {strconv.Itoa(c.cfg.PageSize)}, "fields": {"nextPageToken,files(" + fileFields + ")"}}, true)
	if token != "" {
		v.Set("pageToken", token)
	}
	var page struct {
		NextPageToken string `json:"nextPageToken"`
		Files         []file `json:"files"`
	}
	if err := c.getJSON(ctx, c.url("files", v), &page); err != nil {
		return "", err
	}
	for _, f := range page.Files {
		each(f)
	}
	return page.NextPageToken, nil
}

func (c *Connector) startToken(ctx context.Context) (string, error) {
	var out struct {
		StartPageToken string `json:"startPageToken"`
	}
	if err := c.getJSON(ctx, c.url("changes/startPageToken", c.driveParams(url.Values{}, false)), &out); err != nil {
		return "", err
	}
	if out.StartPageToken == "" {
		return "", rag.Errorf("gdrive.startToken", rag.KindUnavailable, "drive answered without a startPageToken")
	}
	return out.StartPageToken, nil
}

// driveParams adds the shared drive parameters (files.list takes corpora, the changes calls do not).
func (c *Connector) driveParams(v url.Values, list bool) url.Values {
	if c.cfg.DriveID == "" {
		return v
	}
	v.Set("driveId", c.cfg.DriveID)
	v.Set("supportsAllDrives", "true")
	if list || v.Has("pageToken") {
		v.Set("includeItemsFromAllDrives", "true")
	}
	if list {
		v.Set("corpora", "drive")
	}
	return v
}

// inScope says whether a file lies in the folder tree (always, without a folder).
func (c *Connector) inScope(f file, tree map[string]bool) bool {
	if tree == nil {
		return c.cfg.DriveID == "" || f.DriveID == "" || f.DriveID == c.cfg.DriveID
	}
	for _, p := range f.Parents {
		if tree[p] {
			return true
		}
	}
	return false
}

// indexable says whether docmind reads the file: an exportable Google format or a file whose
// extension a parser understands.
func indexable(f file) bool {
	if _, ok := exports[f.MimeType]; ok {
		return true
	}
	return !strings.HasPrefix(f.MimeType, "application/vnd.google-apps.") && extract.Supported(f.Name)
}

// Fetch downloads or exports one file. An unchanged version and name answer NotModified without a
// download; a file trashed, deleted or no longer visible is ErrGone.
func (c *Connector) Fetch(ctx context.Context, id string, prev connector.Known) (connector.Item, error) {
	before := c.http.Calls
	calls := func() int { return c.http.Calls - before }
	if c.authErr != nil {
		return connector.Item{}, c.authErr
	}
	f, ok := c.listed[id]
	if !ok {
		// a failed item retried outside the listing that named it
		err := c.getJSON(ctx, c.url("files/"+url.PathEscape(id), url.Values{"fields": {fileFields}, "supportsAllDrives": {"true"}}), &f)
		if rag.Is(err, rag.KindNotFound) {
			return connector.Item{Calls: calls()}, fmt.Errorf("%w: file %s: %v", connector.ErrGone, id, err)
		}
		if err != nil {
			return connector.Item{Calls: calls()}, err
		}
		if f.Trashed || !indexable(f) {
			return connector.Item{Calls: calls()}, fmt.Errorf("%w: file %s is trashed or no longer a type docmind reads", connector.ErrGone, id)
		}
	}
	item := c.item(f)
	var st itemState
	json.Unmarshal([]byte(prev.State), &st)
	if prev.Version != "" && prev.Version == item.Version && st.Name == f.Name {
		item.NotModified = true
		item.Calls = calls()
		return item, nil
	}
	var u string
	if ex, ok := exports[f.MimeType]; ok {
		u = c.url("files/"+url.PathEscape(f.ID)+"/export", url.Values{"mimeType": {ex.mime}})
	} else {
		u = c.url("files/"+url.PathEscape(f.ID), url.Values{"alt": {"media"}, "supportsAllDrives": {"true"}})
	}
	data, err := c.get(ctx, u)
	item.Calls = calls()
	if rag.Is(err, rag.KindNotFound) {
		return item, fmt.Errorf("%w: file %s: %v", connector.ErrGone, id, err)
	}
	if err != nil {
		return item, err
	}
	item.Data = data
	return item, nil
}

// item turns a file into an item with its metadata.
func (c *Connector) item(f file) connector.Item {
	name := f.Name
	if ex, ok := exports[f.MimeType]; ok && !strings.EqualFold(path.Ext(name), ex.ext) {
		name += ex.ext
	}
	st, _ := json.Marshal(itemState{Name: f.Name, Parents: f.Parents})
	version := f.MD5
	if version == "" {
		version = "v" + f.Version
	}
	it := connector.Item{ID: f.ID, Name: name, URL: f.WebViewLink, Version: version, State: string(st),
		Metadata: map[string]string{"source": "gdrive", "title": strings.TrimSuffix(f.Name, path.Ext(f.Name)), "file_id": f.ID,
			"mime_type": f.MimeType, "created": f.Created, "size": f.Size, "drive_id": f.DriveID}}
	if len(f.Owners) > 0 {
		it.Metadata["author"] = f.Owners[0].DisplayName
		it.Metadata["owner_email"] = f.Owners[0].EmailAddress
	}
	if f.LastModifyingUser != nil {
		it.Metadata["modified_by"] = f.LastModifyingUser.DisplayName
		if it.Metadata["author"] == "" { // shared drives have no owner
			it.Metadata["author"] = f.LastModifyingUser.DisplayName
		}
	}
	if len(f.Parents) > 0 && c.names[f.Parents[0]] != "" {
		it.Metadata["folder"] = c.names[f.Parents[0]]
	}
	if f.WebViewLink != "" {
		it.Metadata["url"] = f.WebViewLink
	}
	if t, err := time.Parse(time.RFC3339, f.Modified); err == nil {
		it.Modified = t.UTC()
		it.Metadata["modified"] = it.Modified.Format(time.RFC3339)
	}
	// who may read it, as Drive names them: user:/group: an address, domain: a domain, anyone
	for _, p := range f.Permissions {
		switch p.Type {
		case "user", "group":
			it.Permissions = append(it.Permissions, p.Type+":"+p.Email)
		case "domain":
			it.Permissions = append(it.Permissions, "domain:"+p.Domain)
		case "anyone":
			it.Permissions = append(it.Permissions, "anyone")
		}
	}
	if len(it.Permissions) == 0 {
		for _, p := range f.Owners {
			it.Permissions = append(it.Permissions, "user:"+p.EmailAddress)
		}
	}
	for k, v := range it.Metadata {
		if v == "" {
			delete(it.Metadata, k)
		}
	}
	return it
}

func (c *Connector) url(p string, v url.Values) string {
	u := c.cfg.Endpoint + "/" + p
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	return u
}

// getJSON GETs u and decodes the JSON answer.
func (c *Connector) getJSON(ctx context.Context, u string, v any) error {
	b, err := c.get(ctx, u)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return rag.E("gdrive.get", rag.KindUnavailable, fmt.Errorf("decode %s: %w", redact(u), err))
	}
	return nil
}

// get GETs u with the bearer token and returns the body of a 200. Drive also signals rate limits with
// 403 userRateLimitExceeded or rateLimitExceeded, for which its documentation asks for exponential
// backoff: 1 s, 2 s, 4 s, 8 s, then the error (Unavailable).
func (c *Connector) get(ctx context.Context, u string) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		b, err := c.getOnce(ctx, u)
		if !errors.Is(err, errRateLimited) || attempt >= 4 {
			return b, err
		}
		if err := c.http.Backoff(ctx, time.Second<<attempt); err != nil {
			return nil, err
		}
	}
}

func (c *Connector) getOnce(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, rag.E("gdrive.get", rag.KindInvalid, err)
	}
	resp, err := c.api.Do(req)
	if err != nil {
		return nil, classify("gdrive.get", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, driveError("gdrive.get", resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, rag.E("gdrive.get", rag.KindUnavailable, fmt.Errorf("read %s: %w", redact(u), err))
	}
	return b, nil
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(bad url)"
	}
	return p.Redacted()
}

// driveError classifies a Drive error answer ({"error": {"code", "errors": [{"reason"}]}}): a rate
// limit answered with 403 (userRateLimitExceeded, rateLimitExceeded) is Unavailable, to be retried,
// not a refusal.
func driveError(op string, resp *http.Response) error {
	err := connector.StatusError(op, resp)
	var body struct {
		Error struct {
			Errors []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body) != nil || len(body.Error.Errors) == 0 {
		return err
	}
	reason := body.Error.Errors[0].Reason
	if reason == "userRateLimitExceeded" || reason == "rateLimitExceeded" {
		return rag.E(op, rag.KindUnavailable, fmt.Errorf("%s %s: HTTP %d (%s): %w", resp.Request.Method, resp.Request.URL.Redacted(), resp.StatusCode, reason, errRateLimited))
	}
	return rag.E(op, rag.KindOf(err), fmt.Errorf("%s %s: HTTP %d (%s)", resp.Request.Method, resp.Request.URL.Redacted(), resp.StatusCode, reason))
}

// errRateLimited marks Drive's 403 rate-limit answers.
var errRateLimited = errors.New("rate limited")

// classify maps a transport error: Google's token endpoint refusing the service account is
// Permission (its error code only), a rate limit outlasting connector.HTTP keeps its kind, anything
// else is Unavailable.
func classify(op string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		kind := rag.KindUnavailable
		if re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
			kind = rag.KindPermission
		}
		code := re.ErrorCode
		if code == "" { // the jwt flow leaves the body unparsed: {"error": "invalid_grant", ...}
			var body struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(re.Body, &body) == nil {
				code = body.Error
			}
		}
		if code == "" && re.Response != nil {
			code = "HTTP " + strconv.Itoa(re.Response.StatusCode)
		}
		return rag.Errorf(op, kind, "Google refused the service account's token request: %s", code)
	}
	if k := rag.KindOf(err); k != rag.KindUnknown {
		return rag.E(op, k, err)
	}
	return rag.E(op, rag.KindUnavailable, err)
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
