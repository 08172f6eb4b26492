// Package sharepoint is the SharePoint and OneDrive connector: one document library (a site's default
// drive, or any drive by id) kept in step through Microsoft Graph's drive delta query.
//
// A first sync enumerates GET /drives/{drive-id}/root/delta, following @odata.nextLink, and keeps the
// final @odata.deltaLink as the cursor; an incremental sync GETs the stored deltaLink, which returns
// only the items created, changed, moved or deleted since (a `deleted` facet marks a deletion). On AWS
// the listing is paged (syncflow.PagedSource): it stops at a page boundary when the invocation's time
// is up and hands on Graph's @odata.nextLink; the deltaLink comes with the last page only. Bytes
// come from each file's pre-authenticated @microsoft.graph.downloadUrl (no bearer token is sent to it),
// or from /items/{id}/content when the listing carries none. An unchanged cTag (the content's tag) and
// name cost no download: a rename or a sharing change is not a re-index.
//
// Requests authenticate with the OAuth2 client credentials grant against the Microsoft identity
// platform (tenant id, client id and secret from the connector's credentials), through
// golang.org/x/oauth2/clientcredentials, which caches the token until it expires. Graph is spoken as
// plain REST through connector.HTTP rather than with Microsoft's Graph SDK: only delta and download are
// used, and the SDK brings hundreds of packages for them.
package sharepoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/syncflow"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// Config is a SharePoint/OneDrive connector's JSON settings.
type Config struct {
	// SiteID is a SharePoint site id ("contoso.sharepoint.com,<site-guid>,<web-guid>"): its default
	// document library is synced. Exactly one of SiteID, DriveID and User is given.
	SiteID string `json:"site_id,omitempty"`
	// DriveID is a drive id (b!...): a document library or a OneDrive.
	DriveID string `json:"drive_id,omitempty"`
	// User is a user id or principal name: that user's OneDrive.
	User string `json:"user,omitempty"`
	// Folder limits the sync to one folder of the drive and its subfolders ("Policies/HR"). Graph's
	// delta runs on the root of SharePoint drives only, so the filter is applied to the listing.
	Folder string `json:"folder,omitempty"`
	// GraphURL is Graph's base (default https://graph.microsoft.com/v1.0; a national cloud's otherwise).
	GraphURL string `json:"graph_url,omitempty"`
	// LoginURL is the identity platform's base (default https://login.microsoftonline.com).
	LoginURL string `json:"login_url,omitempty"`
	// Permissions reads who may read each new or changed file (GET /items/{id}/permissions: one more
	// request per file) and records it with the item: the document's access list (shared/access).
	Permissions bool `json:"permissions,omitempty"`
	connector.CredentialRef
}

// CredentialKeys are the credentials a SharePoint connector needs: an app registration with the
// Files.Read.All or Sites.Read.All application permission.
var CredentialKeys = []string{"tenant_id", "client_id", "client_secret"}

// ParseConfig reads and checks the settings, reporting every problem.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, rag.Errorf("sharepoint.ParseConfig", rag.KindInvalid, "sharepoint connector config: %v", err)
	}
	var probs []string
	n := 0
	for _, v := range []string{c.SiteID, c.DriveID, c.User} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		probs = append(probs, "give exactly one of site_id, drive_id and user")
	}
	if c.GraphURL == "" {
		c.GraphURL = "https://graph.microsoft.com/v1.0"
	}
	if c.LoginURL == "" {
		c.LoginURL = "https://login.microsoftonline.com"
	}
	for _, u := range []struct{ key, v string }{{"graph_url", c.GraphURL}, {"login_url", c.LoginURL}} {
		if p, err := url.Parse(u.v); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			probs = append(probs, fmt.Sprintf("%s %q must be an http(s) URL", u.key, u.v))
		}
	}
	if strings.Contains(c.Folder, "..") {
		probs = append(probs, "folder must be a path inside the drive, without ..")
	}
	if len(probs) > 0 {
		return c, rag.Errorf("sharepoint.ParseConfig", rag.KindInvalid, "sharepoint connector config: %s", strings.Join(probs, "; "))
	}
	c.GraphURL = strings.TrimSuffix(c.GraphURL, "/")
	c.LoginURL = strings.TrimSuffix(c.LoginURL, "/")
	c.Folder = strings.Trim(c.Folder, "/")
	return c, nil
}

// Connector syncs one drive.
type Connector struct {
	cfg     Config
	http    *connector.HTTP
	api     *http.Client // Graph with the bearer token, through http
	driveID string
	// listed is the current listing's files by id: Fetch downloads from them without another call;
	// chains are their folder ids, nearest first.
	listed map[string]driveItem
	chains map[string][]string
}

var _ connector.Source = (*Connector)(nil)

// New returns a connector for cfg with the tenant id, client id and secret in creds. The token
// requests go through h too (the hardened client, counted).
func New(cfg Config, creds connector.Credentials, h *connector.HTTP) *Connector {
	graph, _ := url.Parse(cfg.GraphURL)
	cc := &clientcredentials.Config{
		ClientID:     creds.Get("client_id"),
		ClientSecret: creds.Get("client_secret"),
		TokenURL:     cfg.LoginURL + "/" + url.PathEscape(creds.Get("tenant_id")) + "/oauth2/v2.0/token",
		// the app's granted application permissions on Graph (a national cloud has its own host)
		Scopes:    []string{graph.Scheme + "://" + graph.Host + "/.default"},
		AuthStyle: oauth2.AuthStyleInParams,
	}
	tokenCtx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: h.Transport()})
	api := &http.Client{Transport: &oauth2.Transport{Source: cc.TokenSource(tokenCtx), Base: h.Transport()}}
	return &Connector{cfg: cfg, http: h, api: api}
}

// driveItem is a Graph driveItem as delta returns it.
type driveItem struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	ETag        string `json:"eTag"`
	CTag        string `json:"cTag"`
	Size        int64  `json:"size"`
	WebURL      string `json:"webUrl"`
	Created     string `json:"createdDateTime"`
	Modified    string `json:"lastModifiedDateTime"`
	DownloadURL string `json:"@microsoft.graph.downloadUrl"`
	// SharedChanged is "True" on a file whose sharing changed, when delta is asked with
	// Prefer: deltashowsharingchanges (sent when permissions are read)
	SharedChanged string    `json:"@microsoft.graph.sharedChanged"`
	Deleted       *struct{} `json:"deleted"`
	Root          *struct{} `json:"root"`
	Folder        *struct{} `json:"folder"`
	File          *struct {
		MimeType string `json:"mimeType"`
	} `json:"file"`
	Parent struct {
		ID      string `json:"id"`
		DriveID string `json:"driveId"`
		Path    string `json:"path"` // /drive/root:/Policies/HR (absent on deleted items)
	} `json:"parentReference"`
	CreatedBy      identitySet `json:"createdBy"`
	LastModifiedBy identitySet `json:"lastModifiedBy"`
}

type identitySet struct {
	User struct {
		DisplayName string `json:"displayName"`
		Email       string `json:"email"`
	} `json:"user"`
}

func (s identitySet) name() string {
	if s.User.DisplayName != "" {
		return s.User.DisplayName
	}
	return s.User.Email
}

// itemState is what the connector keeps per item between syncs.
type itemState struct {
	Name string `json:"name"`
	// Parents are the item's folder ids, nearest first: a deleted folder deletes what was under it
	// (delta reports the folder's deletion, not always each child's).
	Parents []string `json:"parents,omitempty"`
}

// Validate resolves the drive with the credentials.
func (c *Connector) Validate(ctx context.Context) error {
	_, err := c.drive(ctx)
	return err
}

// drive resolves the configured site, user or drive to its drive id (once per connector).
func (c *Connector) drive(ctx context.Context) (string, error) {
	if c.driveID != "" {
		return c.driveID, nil
	}
	var u string
	switch {
	case c.cfg.DriveID != "":
		u = c.cfg.GraphURL + "/drives/" + url.PathEscape(c.cfg.DriveID)
	case c.cfg.SiteID != "":
		u = c.cfg.GraphURL + "/sites/" + url.PathEscape(c.cfg.SiteID) + "/drive"
	default:
		u = c.cfg.GraphURL + "/users/" + url.PathEscape(c.cfg.User) + "/drive"
	}
	var d struct {
		ID string `json:"id"`
	}
	if err := c.getJSON(ctx, u+"?$select=id,name,webUrl", &d); err != nil {
		return "", err
	}
	if d.ID == "" {
		return "", rag.Errorf("sharepoint.drive", rag.KindUnavailable, "graph answered without a drive id")
	}
	c.driveID = d.ID
	return d.ID, nil
}

// Changes runs the delta query from the stored deltaLink (the whole drive when cursor is empty, or when
// Graph answers 410 Gone because the link expired: then the listing is complete and whatever it no
// longer names is deleted).
func (c *Connector) Changes(ctx context.Context, cursor string, known []connector.Known) (connector.Listing, error) {
	pg, err := c.ChangesPage(ctx, cursor, "", known, time.Time{})
	return pg.Listing, err
}

var _ syncflow.PagedSource = (*Connector)(nil)

// pageToken is where a paged listing carries on: Graph's own @odata.nextLink, and whether the listing
// is a whole enumeration (a first sync, or one that restarted after 410 resyncRequired).
type pageToken struct {
	Next string `json:"next"`
	Full bool   `json:"full,omitempty"`
}

// ChangesPage runs the delta query from token ("" at the start: from the cursor) until the listing is
// done or the clock passes until (zero: no limit), stopping at a page boundary, at least one page in.
// The deltaLink (the cursor) and Complete come with the last page only.
func (c *Connector) ChangesPage(ctx context.Context, cursor, token string, known []connector.Known, until time.Time) (out syncflow.Page, err error) {
	start := c.http.Calls
	defer func() { out.Listing.Calls = c.http.Calls - start }()
	driveID, err := c.drive(ctx)
	if err != nil {
		return out, err
	}
	first := c.cfg.GraphURL + "/drives/" + url.PathEscape(driveID) + "/root/delta"
	st := pageToken{Next: first, Full: cursor == ""}
	switch {
	case token != "":
		if json.Unmarshal([]byte(token), &st) != nil || st.Next == "" || !c.sameHost(st.Next) {
			return out, rag.Errorf("sharepoint.ChangesPage", rag.KindInvalid, "a listing token that is not a link of %s", c.cfg.GraphURL)
		}
	case cursor != "":
		if !c.sameHost(cursor) {
			return out, rag.Errorf("sharepoint.Changes", rag.KindInvalid, "the stored cursor is not a delta link of %s", c.cfg.GraphURL)
		}
		st.Next = cursor
	}
	past := func() bool { return !until.IsZero() && time.Now().After(until) }
	var items []driveItem
	for pages := 0; st.Next != ""; pages++ {
		if pages > 0 && past() {
			b, _ := json.Marshal(st)
			out.Next = string(b)
			break
		}
		var page struct {
			Value     []driveItem `json:"value"`
			NextLink  string      `json:"@odata.nextLink"`
			DeltaLink string      `json:"@odata.deltaLink"`
		}
		err := c.getJSONPrefer(ctx, st.Next, &page, c.deltaPrefer())
		if errors.Is(err, errResync) && st.Next == cursor {
			// resyncRequired: the link is too old; enumerate again and let the engine diff
			items, st = nil, pageToken{Next: first, Full: true}
			continue
		}
		if err != nil {
			return out, err
		}
		items = append(items, page.Value...)
		switch {
		case page.NextLink != "":
			st.Next = page.NextLink
		case page.DeltaLink != "":
			st.Next, out.Listing.Cursor, out.Listing.Complete = "", page.DeltaLink, st.Full
		default:
			return out, rag.Errorf("sharepoint.Changes", rag.KindUnavailable, "a delta page without @odata.nextLink or @odata.deltaLink")
		}
		if st.Next != "" && !c.sameHost(st.Next) {
			return out, rag.Errorf("sharepoint.Changes", rag.KindUnavailable, "graph's next link leaves %s", c.cfg.GraphURL)
		}
	}
	// a page after the first has not seen the folders listed before it: their parents are asked for
	out.Listing.Changes, err = c.changes(ctx, items, known, token != "")
	return out, err
}

// changes turns delta items into the engine's changes: files in scope are new or changed, deleted
// items and files moved out of the folder are deletions, and so is every known item under a folder
// that was deleted or moved out.
func (c *Connector) changes(ctx context.Context, items []driveItem, known []connector.Known, resolve bool) ([]connector.Change, error) {
	// the same item may appear more than once in a delta feed: its last occurrence is its state
	items = connector.LastOfEach(items, func(it driveItem) string { return it.ID })
	// the folder tree: parents seen in this listing, then those remembered with known items
	parentOf := map[string]string{}
	gone := map[string]bool{} // folders deleted or out of scope
	for _, it := range items {
		if it.Folder != nil || it.Root != nil || it.Deleted != nil {
			parentOf[it.ID] = it.Parent.ID
		}
		// (the root is never out of scope: Graph names it in a delta page like any folder, and a page
		// without the rest of the drive must not take it for a folder moved out)
		if it.Deleted != nil || (it.Folder != nil && it.Root == nil && !c.inScope(it, true)) {
			gone[it.ID] = true
		}
	}
	knownState := make(map[string]itemState, len(known))
	for _, k := range known {
		var st itemState
		json.Unmarshal([]byte(k.State), &st)
		knownState[k.ID] = st
		for i := 0; i+1 < len(st.Parents); i++ {
			if _, ok := parentOf[st.Parents[i]]; !ok {
				parentOf[st.Parents[i]] = st.Parents[i+1]
			}
		}
	}
	c.listed = map[string]driveItem{}
	var out []connector.Change
	seen := map[string]bool{}
	for _, it := range items {
		switch {
		case it.Deleted != nil:
			if _, ok := knownState[it.ID]; ok || it.Folder == nil {
				out = append(out, connector.Change{ID: it.ID, Deleted: true})
				seen[it.ID] = true
			}
		case it.File == nil:
			// folders, the root, notebooks and other items without bytes
		case !c.inScope(it, false) || !extract.Supported(it.Name):
			if _, ok := knownState[it.ID]; ok { // moved out of the folder, or renamed to a type not indexed
				out = append(out, connector.Change{ID: it.ID, Deleted: true})
				seen[it.ID] = true
			}
		default:
			c.listed[it.ID] = it
			out = append(out, connector.Change{ID: it.ID})
			seen[it.ID] = true
		}
	}
	for _, k := range known {
		if seen[k.ID] {
			continue
		}
		for _, p := range knownState[k.ID].Parents {
			if gone[p] {
				out = append(out, connector.Change{ID: k.ID, Deleted: true})
				break
			}
		}
	}
	// the parent chains of the files listed, kept in their state
	c.chains = map[string][]string{}
	for id, it := range c.listed {
		var chain []string
		for p, n := it.Parent.ID, 0; p != "" && n < 64; p, n = parentOf[p], n+1 {
			chain = append(chain, p)
			if _, ok := parentOf[p]; !ok && resolve {
				parent, err := c.parentOf(ctx, p)
				if err != nil {
					return nil, err
				}
				parentOf[p] = parent
			}
		}
		c.chains[id] = chain
	}
	return out, nil
}

// parentOf asks Graph for a folder's parent ("" for the root).
func (c *Connector) parentOf(ctx context.Context, id string) (string, error) {
	var it driveItem
	u := c.cfg.GraphURL + "/drives/" + url.PathEscape(c.driveID) + "/items/" + url.PathEscape(id) + "?$select=id,root,parentReference"
	if err := c.getJSON(ctx, u, &it); err != nil {
		return "", err
	}
	return it.Parent.ID, nil
}

// inScope says whether an item lies in the configured folder (a folder itself when folder is set: the
// folder or one below it).
func (c *Connector) inScope(it driveItem, folder bool) bool {
	if c.cfg.Folder == "" {
		return true
	}
	// SharePoint paths are case-insensitive
	full := strings.ToLower(strings.Trim(folderPath(it.Parent.Path)+"/"+it.Name, "/"))
	want := strings.ToLower(c.cfg.Folder)
	if folder && (full == want || strings.HasPrefix(want, full+"/")) {
		return true // the folder itself or one of its ancestors
	}
	return strings.HasPrefix(full, want+"/")
}

// Fetch downloads one file. An unchanged cTag and name answer NotModified without a download; an item
// gone or deleted is ErrGone.
func (c *Connector) Fetch(ctx context.Context, id string, prev connector.Known) (connector.Item, error) {
	before := c.http.Calls
	it, ok := c.listed[id]
	if !ok {
		// a failed item retried outside the listing that named it
		driveID, err := c.drive(ctx)
		if err == nil {
			err = c.getJSON(ctx, c.cfg.GraphURL+"/drives/"+url.PathEscape(driveID)+"/items/"+url.PathEscape(id), &it)
		}
		if rag.Is(err, rag.KindNotFound) {
			return connector.Item{Calls: c.http.Calls - before}, fmt.Errorf("%w: item %s: %v", connector.ErrGone, id, err)
		}
		if err != nil {
			return connector.Item{Calls: c.http.Calls - before}, err
		}
		if it.Deleted != nil || it.File == nil {
			return connector.Item{Calls: c.http.Calls - before}, fmt.Errorf("%w: item %s is deleted or not a file", connector.ErrGone, id)
		}
	}
	item := c.item(it)
	var st itemState
	json.Unmarshal([]byte(prev.State), &st)
	if prev.Version != "" && prev.Version == item.Version && st.Name == it.Name {
		item.NotModified = true
		// a sharing change leaves the cTag alone: delta flags it (deltaPrefer), and an item retried
		// outside a listing may have failed on it, so both read the list again; the engine records it
		if c.cfg.Permissions && (strings.EqualFold(it.SharedChanged, "true") || !ok) {
			perms, err := c.permissions(ctx, it.ID)
			item.Calls = c.http.Calls - before
			if err != nil {
				return item, fmt.Errorf("read the permissions of item %s: %w", id, err)
			}
			item.Permissions = append([]string{}, perms...) // an empty list is a list, not "unknown"
		}
		item.Calls = c.http.Calls - before
		return item, nil
	}
	data, err := c.download(ctx, it)
	item.Calls = c.http.Calls - before
	if rag.Is(err, rag.KindNotFound) {
		return item, fmt.Errorf("%w: item %s: %v", connector.ErrGone, id, err)
	}
	if err != nil {
		return item, err
	}
	item.Data = data
	if c.cfg.Permissions {
		item.Permissions, err = c.permissions(ctx, it.ID)
		item.Calls = c.http.Calls - before
		if err != nil {
			// enforced, an unread list would open the file to every reader: the item fails and the
			// next sync fetches it again
			return item, fmt.Errorf("read the permissions of item %s: %w", id, err)
		}
	}
	return item, nil
}

// permissions lists who may read a file, as Graph names them: user:/group: an address (or id),
// sitegroup: a SharePoint group's name, organization or anyone for sharing links (normalised when
// recorded, shared/access). An error when they cannot be read: the file is not indexed with an
// unknown list.
func (c *Connector) permissions(ctx context.Context, id string) ([]string, error) {
	var res struct {
		Value []struct {
			GrantedTo  identityRef   `json:"grantedToV2"`
			Identities []identityRef `json:"grantedToIdentitiesV2"`
			Link       *struct {
				Scope string `json:"scope"`
			} `json:"link"`
		} `json:"value"`
	}
	if err := c.getJSON(ctx, c.cfg.GraphURL+"/drives/"+url.PathEscape(c.driveID)+"/items/"+url.PathEscape(id)+"/permissions", &res); err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range res.Value {
		for _, r := range append([]identityRef{p.GrantedTo}, p.Identities...) {
			add(r.principal())
		}
		if p.Link != nil {
			switch p.Link.Scope {
			case "anonymous":
				add("anyone")
			case "organization":
				add("organization")
			}
		}
	}
	return out, nil
}

// identityRef is a Graph sharePointIdentitySet (grantedToV2).
type identityRef struct {
	User      *graphIdentity `json:"user"`
	Group     *graphIdentity `json:"group"`
	SiteGroup *graphIdentity `json:"siteGroup"`
}

type graphIdentity struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName"`
	Email       string `json:"email"`
}

func (r identityRef) principal() string {
	pick := func(g *graphIdentity) string {
		if g.Email != "" {
			return g.Email
		}
		return g.ID
	}
	switch {
	case r.User != nil:
		return "user:" + pick(r.User)
	case r.Group != nil:
		return "group:" + pick(r.Group)
	case r.SiteGroup != nil:
		return "sitegroup:" + r.SiteGroup.DisplayName
	}
	return ""
}

// download reads a file's bytes: from its pre-authenticated download URL without the bearer token (it
// is a different host, and the URL carries its own short-lived authorisation), else from /content
// with the token (Graph answers 302 to such a URL).
func (c *Connector) download(ctx context.Context, it driveItem) ([]byte, error) {
	client := c.api
	u := it.DownloadURL
	if u == "" {
		u = c.cfg.GraphURL + "/drives/" + url.PathEscape(c.driveID) + "/items/" + url.PathEscape(it.ID) + "/content"
	} else {
		client = &http.Client{Transport: c.http.Transport()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, rag.E("sharepoint.download", rag.KindInvalid, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = withoutQuery(ue.URL) // the download URL's query is its authorisation
		}
		return nil, classify("sharepoint.download", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		kind := rag.KindOf(connector.StatusError("sharepoint.download", resp))
		return nil, rag.Errorf("sharepoint.download", kind, "GET %s: HTTP %d", withoutQuery(resp.Request.URL.String()), resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, rag.E("sharepoint.download", rag.KindUnavailable, fmt.Errorf("read %s: %w", it.Name, err))
	}
	return b, nil
}

// folderPath turns a parentReference.path ("/drive/root:/Team%20Policies" or
// "/drives/{id}/root:/...", percent-encoded) into the folder's path in the drive ("/Team Policies").
func folderPath(p string) string {
	if i := strings.Index(p, "/root:"); i >= 0 {
		p = p[i+len("/root:"):]
	}
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	return p
}

// withoutQuery drops a URL's query: a pre-authenticated download URL's query carries its token, which
// must not reach an error, a log or connector_items.
func withoutQuery(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i] + "?[redacted]"
	}
	return u
}

// item turns a driveItem into an item with its metadata.
func (c *Connector) item(it driveItem) connector.Item {
	parents := c.chains[it.ID]
	if parents == nil && it.Parent.ID != "" {
		parents = []string{it.Parent.ID}
	}
	st, _ := json.Marshal(itemState{Name: it.Name, Parents: parents})
	out := connector.Item{ID: it.ID, Name: it.Name, URL: it.WebURL, Version: it.CTag, State: string(st),
		Metadata: map[string]string{"source": "sharepoint", "title": strings.TrimSuffix(it.Name, path.Ext(it.Name)),
			"item_id": it.ID, "drive_id": c.driveID, "author": it.CreatedBy.name(), "modified_by": it.LastModifiedBy.name(),
			"created": it.Created, "size": strconv.FormatInt(it.Size, 10)}}
	if out.Version == "" {
		out.Version = it.ETag
	}
	if it.File != nil {
		out.Metadata["mime_type"] = it.File.MimeType
	}
	if it.Parent.Path != "" {
		out.Metadata["path"] = strings.TrimPrefix(folderPath(it.Parent.Path)+"/"+it.Name, "/")
	}
	if it.WebURL != "" {
		out.Metadata["url"] = it.WebURL
	}
	if t, err := time.Parse(time.RFC3339, it.Modified); err == nil {
		out.Modified = t.UTC()
		out.Metadata["modified"] = out.Modified.Format(time.RFC3339)
	}
	for k, v := range out.Metadata {
		if v == "" {
			delete(out.Metadata, k)
		}
	}
	return out
}

// sameHost says whether a link Graph handed back points at the configured Graph host: the bearer
// token is sent nowhere else.
func (c *Connector) sameHost(link string) bool {
	base, _ := url.Parse(c.cfg.GraphURL)
	u, err := url.Parse(link)
	return err == nil && u.Scheme == base.Scheme && strings.EqualFold(u.Host, base.Host)
}

// getJSON GETs u from Graph with the bearer token and decodes the JSON answer.
func (c *Connector) getJSON(ctx context.Context, u string, v any) error {
	return c.getJSONPrefer(ctx, u, v, "")
}

// deltaPrefer is the Prefer header of delta requests: with permissions read, Graph is asked to list
// files whose sharing changed (it does not by default: a sharing change leaves the cTag and, without
// this, the feed) and to flag them with @microsoft.graph.sharedChanged.
func (c *Connector) deltaPrefer() string {
	if c.cfg.Permissions {
		return "deltashowsharingchanges"
	}
	return ""
}

// getJSONPrefer is getJSON with a Prefer header (none when prefer is empty).
func (c *Connector) getJSONPrefer(ctx context.Context, u string, v any, prefer string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return rag.E("sharepoint.get", rag.KindInvalid, err)
	}
	req.Header.Set("Accept", "application/json")
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}
	resp, err := c.api.Do(req)
	if err != nil {
		return classify("sharepoint.get", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusGone {
		return rag.E("sharepoint.get", rag.KindNotFound, fmt.Errorf("%s: HTTP 410: %w", req.URL.Redacted(), errResync))
	}
	if resp.StatusCode != http.StatusOK {
		return graphError("sharepoint.get", resp)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return rag.E("sharepoint.get", rag.KindUnavailable, fmt.Errorf("decode %s: %w", req.URL.Redacted(), err))
	}
	return nil
}

// errResync is Graph's 410 Gone: a delta link too old to resume from (or an item gone).
var errResync = errors.New("resync required")

// graphError classifies a Graph error answer and adds Graph's error code ({"error":{"code":...}}).
func graphError(op string, resp *http.Response) error {
	err := connector.StatusError(op, resp)
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body) == nil && body.Error.Code != "" {
		return rag.E(op, rag.KindOf(err), fmt.Errorf("%s %s: HTTP %d (%s)", resp.Request.Method, resp.Request.URL.Redacted(), resp.StatusCode, body.Error.Code))
	}
	return err
}

// classify maps a transport error: the identity platform refusing the client credentials is
// Permission (its error code only, never the request), a rate limit outlasting connector.HTTP keeps
// its kind, anything else is Unavailable.
func classify(op string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		kind := rag.KindUnavailable
		if re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
			kind = rag.KindPermission
		}
		code := re.ErrorCode
		if code == "" && re.Response != nil {
			code = "HTTP " + strconv.Itoa(re.Response.StatusCode)
		}
		return rag.Errorf(op, kind, "the Microsoft identity platform refused the client credentials: %s", code)
	}
	if k := rag.KindOf(err); k != rag.KindUnknown {
		return rag.E(op, k, err)
	}
	return rag.E(op, rag.KindUnavailable, err)
}
