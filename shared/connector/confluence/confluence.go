// Package confluence is the Confluence Cloud connector: one space's pages through the REST API v2
// (pages listed with cursor paging, following the Link header or _links.next), changes found with a CQL
// `lastmodified` search, trashed and purged pages reported as deletions. Requests authenticate with an
// Atlassian account email and API token (HTTP Basic) and wait out 429 Retry-After through
// connector.HTTP.
//
// A first sync lists every current page with its body. An incremental sync searches
// `space = KEY and type = page and lastmodified >= "<cursor>"` and fetches each result, then asks which
// of the known pages are still current in the space (v2 GET /pages?id=...&space-id=&status=current,
// 250 ids to a request) to find what was trashed, purged or moved since: both must be deleted within
// that sync. On AWS the listing is paged (syncflow.PagedSource): it stops at a request boundary when
// the invocation's time is up and hands on the API's own next link (or the last known id checked);
// the cursor and Complete come with the last page only.
package confluence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/syncflow"
	"github.com/docmind/docmind/shared/rag"
)

// Config is a Confluence connector's JSON settings.
type Config struct {
	// URL is the site's wiki base, https://<site>.atlassian.net/wiki.
	URL string `json:"url"`
	// Space is the space key (ENG).
	Space string `json:"space"`
	// PageSize is the limit sent when listing (default 250, the API's maximum for pages).
	PageSize int `json:"page_size,omitempty"`
	// Permissions reads each page's view restrictions and its ancestors' (on unless false): a
	// restricted page is readable in docmind only by the restrictions' users and groups (access.go).
	Permissions *bool `json:"permissions,omitempty"`
	connector.CredentialRef
}

// readsRestrictions reports whether page restrictions are read (the default).
func (c Config) readsRestrictions() bool { return c.Permissions == nil || *c.Permissions }

// CredentialKeys are the credentials a Confluence connector needs.
var CredentialKeys = []string{"email", "token"}

// ParseConfig reads and checks the settings, reporting every problem.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, rag.Errorf("confluence.ParseConfig", rag.KindInvalid, "confluence connector config: %v", err)
	}
	var probs []string
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		probs = append(probs, fmt.Sprintf("url %q must be the site's wiki base, https://<site>.atlassian.net/wiki", c.URL))
	}
	if c.Space == "" || strings.ContainsAny(c.Space, `"\ `) {
		probs = append(probs, "space must be a space key such as ENG")
	}
	if c.PageSize < 0 || c.PageSize > 250 {
		probs = append(probs, "page_size must be 1-250")
	}
	if len(probs) > 0 {
		return c, rag.Errorf("confluence.ParseConfig", rag.KindInvalid, "confluence connector config: %s", strings.Join(probs, "; "))
	}
	c.URL = strings.TrimSuffix(c.URL, "/")
	if c.PageSize == 0 {
		c.PageSize = 250
	}
	return c, nil
}

// Connector syncs one space.
type Connector struct {
	cfg   Config
	creds connector.Credentials
	http  *connector.HTTP
	// Now is the clock of the cursor (nil: time.Now).
	Now     func() time.Time
	spaceID string
	// per listing (access.go): each page's parent as the API named it, and each page's own view
	// restriction (nil: none), so a tree's ancestors are asked for once
	parents    map[string]string
	restricted map[string][]string
}

var _ connector.Source = (*Connector)(nil)

// New returns a connector for cfg with the email and token in creds.
func New(cfg Config, creds connector.Credentials, h *connector.HTTP) *Connector {
	return &Connector{cfg: cfg, creds: creds, http: h}
}

// page is a v2 page as the API returns it.
type page struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	Title      string `json:"title"`
	SpaceID    string `json:"spaceId"`
	ParentID   string `json:"parentId"`
	ParentType string `json:"parentType"`
	AuthorID   string `json:"authorId"`
	Created    string `json:"createdAt"`
	Version    struct {
		Number    int    `json:"number"`
		CreatedAt string `json:"createdAt"`
		AuthorID  string `json:"authorId"`
	} `json:"version"`
	Body struct {
		Storage struct {
			Value string `json:"value"`
		} `json:"storage"`
	} `json:"body"`
	Links struct {
		WebUI string `json:"webui"`
	} `json:"_links"`
}

type pageList struct {
	Results []page `json:"results"`
	Links   struct {
		Next string `json:"next"`
	} `json:"_links"`
}

// Validate looks the space up with the credentials.
func (c *Connector) Validate(ctx context.Context) error {
	_, err := c.space(ctx)
	return err
}

// space resolves the space key to its id (once per connector).
func (c *Connector) space(ctx context.Context) (string, error) {
	if c.spaceID != "" {
		return c.spaceID, nil
	}
	var out struct {
		Results []struct {
			ID  string `json:"id"`
			Key string `json:"key"`
		} `json:"results"`
	}
	if err := c.getJSON(ctx, c.cfg.URL+"/api/v2/spaces?keys="+url.QueryEscape(c.cfg.Space), &out, nil); err != nil {
		return "", err
	}
	for _, s := range out.Results {
		if s.Key == c.cfg.Space {
			c.spaceID = s.ID
			return s.ID, nil
		}
	}
	return "", rag.Errorf("confluence.space", rag.KindNotFound, "space %s not found or not visible to these credentials", c.cfg.Space)
}

// cqlTime is CQL's date format (minute resolution).
const cqlTime = "2006/01/02 15:04"

// Changes lists the space's pages (first sync) or the pages modified since the cursor plus the
// deletions since (incremental). The cursor is the start of this listing minus two minutes, in CQL's
// minute format: an edit made while a sync runs is found again by the next one (an unchanged page costs
// a fetch, not an embedding).
func (c *Connector) Changes(ctx context.Context, cursor string, known []connector.Known) (connector.Listing, error) {
	pg, err := c.ChangesPage(ctx, cursor, "", known, time.Time{})
	return pg.Listing, err
}

var _ syncflow.PagedSource = (*Connector)(nil)

// pageToken is where a paged listing carries on. Start is the cursor the listing will end with (taken
// when its first page began); Next is the API's own next link (the v2 pages cursor, or the CQL
// search's); Checked, in the deletion check, is the greatest known id already checked ("" before it).
type pageToken struct {
	Start    string `json:"start"`
	Next     string `json:"next,omitempty"`
	Checking bool   `json:"checking,omitempty"`
	Checked  string `json:"checked,omitempty"`
}

// ChangesPage lists from token ("" at the start) until the listing is done or the clock passes until
// (zero: no limit), stopping at a request boundary, at least one request in. A first sync lists the
// space's current pages with their bodies (v2 cursor paging). An incremental one follows the CQL
// search, then checks the known pages, 250 ids to a request, against the space's current pages: one
// that is no longer among them was trashed, purged or moved away. The cursor and Complete come with
// the last page only.
func (c *Connector) ChangesPage(ctx context.Context, cursor, token string, known []connector.Known, until time.Time) (out syncflow.Page, err error) {
	const op = "confluence.Changes"
	start := c.http.Calls
	defer func() { out.Listing.Calls = c.http.Calls - start }()
	c.parents, c.restricted = map[string]string{}, map[string][]string{}
	var st pageToken
	if token != "" {
		if json.Unmarshal([]byte(token), &st) != nil || st.Start == "" || (st.Next != "" && c.resolve(st.Next) != st.Next) {
			return out, rag.Errorf(op, rag.KindInvalid, "a listing token that is not this connector's")
		}
	} else {
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		st.Start = now().UTC().Add(-2 * time.Minute).Format(cqlTime)
	}
	spaceID, err := c.space(ctx)
	if err != nil {
		return out, err
	}
	if cursor != "" {
		if _, err := time.Parse(cqlTime, cursor); err != nil {
			return out, rag.Errorf(op, rag.KindInvalid, "cursor %q is not a CQL time", cursor)
		}
	}
	switch {
	case token != "":
	case cursor == "":
		st.Next = c.cfg.URL + "/api/v2/spaces/" + url.PathEscape(spaceID) + "/pages?status=current&body-format=storage&limit=" + strconv.Itoa(c.cfg.PageSize)
	default:
		cql := fmt.Sprintf(`space = "%s" and type = page and lastmodified >= "%s"`, c.cfg.Space, cursor)
		st.Next = c.cfg.URL + "/rest/api/search?limit=" + strconv.Itoa(c.cfg.PageSize) + "&cql=" + url.QueryEscape(cql)
	}
	ids := make([]string, 0, len(known))
	for _, k := range known {
		ids = append(ids, k.ID)
	}
	slices.Sort(ids)
	changed := map[string]bool{}
	if cursor != "" && token == "" {
		// pages synced before restrictions were read (or with the setting switched): fetched again
		for _, id := range c.recheck(known) {
			changed[id] = true
			out.Listing.Changes = append(out.Listing.Changes, connector.Change{ID: id})
		}
	}
	for n := 0; ; n++ {
		var chunk []string
		if st.Checking {
			i, _ := slices.BinarySearch(ids, st.Checked)
			for i < len(ids) && ids[i] <= st.Checked {
				i++
			}
			chunk = ids[i:min(i+250, len(ids))]
		}
		if (cursor == "" || st.Checking) && st.Next == "" && len(chunk) == 0 {
			out.Listing.Cursor, out.Listing.Complete = st.Start, cursor == ""
			return out, nil
		}
		if n > 0 && !until.IsZero() && time.Now().After(until) {
			b, _ := json.Marshal(st)
			out.Next = string(b)
			return out, nil
		}
		switch {
		case cursor == "":
			var listed []page
			if st.Next, err = c.pagesPage(ctx, st.Next, func(p page) { listed = append(listed, p) }); err != nil {
				return out, err
			}
			c.learnParents(listed)
			for _, p := range listed {
				it := c.item(p)
				if err := c.withAccess(ctx, p, &it); err != nil {
					// fetched again on its own (Fetch), failing as an item if the restrictions stay unreadable
					out.Listing.Changes = append(out.Listing.Changes, connector.Change{ID: p.ID})
					continue
				}
				out.Listing.Changes = append(out.Listing.Changes, connector.Change{ID: p.ID, Item: &it})
			}
		case !st.Checking:
			if st.Next, err = c.searchPage(ctx, st.Next, func(id string) {
				if !changed[id] {
					changed[id] = true
					out.Listing.Changes = append(out.Listing.Changes, connector.Change{ID: id})
				}
			}); err != nil {
				return out, err
			}
			st.Checking = st.Next == ""
		default:
			live, err := c.current(ctx, spaceID, chunk)
			if err != nil {
				return out, err
			}
			for _, id := range chunk {
				if !live[id] && !changed[id] {
					out.Listing.Changes = append(out.Listing.Changes, connector.Change{ID: id, Deleted: true})
				}
			}
			st.Checked = chunk[len(chunk)-1]
		}
	}
}

// searchPage reads one page of the CQL search at next and returns the link to the page after it.
func (c *Connector) searchPage(ctx context.Context, next string, each func(id string)) (string, error) {
	var res struct {
		Results []struct {
			Content struct {
				ID     string `json:"id"`
				Type   string `json:"type"`
				Status string `json:"status"`
			} `json:"content"`
		} `json:"results"`
		Links struct {
			Next string `json:"next"`
		} `json:"_links"`
	}
	if err := c.getJSON(ctx, next, &res, nil); err != nil {
		return "", err
	}
	for _, r := range res.Results {
		if r.Content.Type == "page" {
			each(r.Content.ID)
		}
	}
	return c.resolve(res.Links.Next), nil
}

// current says which of ids (at most 250) are current pages of the space (v2 GET /pages filtered by
// id, space-id and status).
func (c *Connector) current(ctx context.Context, spaceID string, ids []string) (map[string]bool, error) {
	live := map[string]bool{}
	next := c.cfg.URL + "/api/v2/pages?status=current&limit=250&space-id=" + url.QueryEscape(spaceID) + "&id=" + url.QueryEscape(strings.Join(ids, ","))
	for next != "" {
		var err error
		if next, err = c.pagesPage(ctx, next, func(p page) {
			if p.Status == "current" && (p.SpaceID == "" || p.SpaceID == spaceID) {
				live[p.ID] = true
			}
		}); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// pagesPage reads one page of a v2 pages listing at next and returns the link to the page after it
// (the Link header's next, or _links.next).
func (c *Connector) pagesPage(ctx context.Context, next string, each func(page)) (string, error) {
	var res pageList
	var hdr http.Header
	if err := c.getJSON(ctx, next, &res, &hdr); err != nil {
		return "", err
	}
	for _, p := range res.Results {
		each(p)
	}
	if n := c.resolve(linkNext(hdr.Get("Link"))); n != "" {
		return n, nil
	}
	return c.resolve(res.Links.Next), nil
}

// Fetch returns one page with its body; ErrGone when it is trashed, purged or no longer in the space.
func (c *Connector) Fetch(ctx context.Context, id string, _ connector.Known) (connector.Item, error) {
	before := c.http.Calls
	var p page
	err := c.getJSON(ctx, c.cfg.URL+"/api/v2/pages/"+url.PathEscape(id)+"?body-format=storage", &p, nil)
	calls := c.http.Calls - before
	if rag.Is(err, rag.KindNotFound) {
		return connector.Item{Calls: calls}, fmt.Errorf("%w: page %s: %v", connector.ErrGone, id, err)
	}
	if err != nil {
		return connector.Item{Calls: calls}, err
	}
	if p.Status != "current" || (c.spaceID != "" && p.SpaceID != "" && p.SpaceID != c.spaceID) {
		return connector.Item{Calls: calls}, fmt.Errorf("%w: page %s is %s", connector.ErrGone, id, p.Status)
	}
	it := c.item(p)
	c.learnParents([]page{p})
	err = c.withAccess(ctx, p, &it)
	it.Calls = c.http.Calls - before
	if err != nil {
		// indexed with an unread restriction, a restricted page would be open to every reader
		return it, fmt.Errorf("read the restrictions of page %s: %w", id, err)
	}
	return it, nil
}

// item turns a page into an item: its storage-format body (XHTML) as an HTML document titled with the
// page's title.
func (c *Connector) item(p page) connector.Item {
	doc := "<!doctype html><html><head><title>" + html.EscapeString(p.Title) + "</title></head><body><h1>" +
		html.EscapeString(p.Title) + "</h1>" + p.Body.Storage.Value + "</body></html>"
	it := connector.Item{ID: p.ID, Name: fileName(p.Title, p.ID) + ".html", Data: []byte(doc),
		Version: strconv.Itoa(p.Version.Number),
		Metadata: map[string]string{"source": "confluence", "space": c.cfg.Space, "title": p.Title, "page_id": p.ID,
			"version": strconv.Itoa(p.Version.Number), "author_id": p.AuthorID, "created": p.Created}}
	if p.Links.WebUI != "" {
		it.URL = c.cfg.URL + p.Links.WebUI
		it.Metadata["url"] = it.URL
	}
	if t, err := time.Parse(time.RFC3339, p.Version.CreatedAt); err == nil {
		it.Modified = t.UTC()
		it.Metadata["modified"] = it.Modified.Format(time.RFC3339)
	}
	if p.Version.AuthorID != "" {
		it.Metadata["modified_by"] = p.Version.AuthorID
	}
	if p.ParentID != "" {
		it.Metadata["parent_id"] = p.ParentID
	}
	for k, v := range it.Metadata {
		if v == "" {
			delete(it.Metadata, k)
		}
	}
	return it
}

func fileName(title, id string) string {
	name := strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 0x20 {
			return '-'
		}
		return r
	}, title)), " ")
	if name == "" {
		name = "page " + id
	}
	if r := []rune(name); len(r) > 120 {
		name = string(r[:120])
	}
	return name
}

// resolve makes a next link absolute. v2 links start with /wiki/ (relative to the origin); v1 links
// are relative to the wiki base. Only links to the configured site are followed.
func (c *Connector) resolve(next string) string {
	if next == "" {
		return ""
	}
	base, _ := url.Parse(c.cfg.URL)
	var abs string
	switch {
	case strings.HasPrefix(next, "http://"), strings.HasPrefix(next, "https://"):
		abs = next
	case strings.HasPrefix(next, base.Path+"/"):
		abs = base.Scheme + "://" + base.Host + next
	default:
		abs = c.cfg.URL + next
	}
	if u, err := url.Parse(abs); err != nil || u.Host != base.Host {
		return "" // a next link elsewhere is not followed with our credentials
	}
	return abs
}

// linkNext returns the rel="next" target of an RFC 8288 Link header.
func linkNext(h string) string {
	for _, part := range strings.Split(h, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if ok && strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			return strings.Trim(strings.TrimSpace(target), "<>")
		}
	}
	return ""
}

// getJSON GETs u with the credentials and decodes the JSON answer; hdr receives the headers.
func (c *Connector) getJSON(ctx context.Context, u string, v any, hdr *http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return rag.E("confluence.get", rag.KindInvalid, err)
	}
	req.SetBasicAuth(c.creds.Get("email"), c.creds.Get("token"))
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if rag.KindOf(err) != rag.KindUnknown {
			return err
		}
		return rag.E("confluence.get", rag.KindUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return connector.StatusError("confluence.get", resp)
	}
	if hdr != nil {
		*hdr = resp.Header
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return rag.E("confluence.get", rag.KindUnavailable, fmt.Errorf("decode %s: %w", req.URL.Redacted(), err))
	}
	return nil
}
