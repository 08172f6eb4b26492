// Package confluence is the Confluence Cloud connector: one space's pages through the REST API v2
// (pages listed with cursor paging, following the Link header or _links.next), changes found with a CQL
// `lastmodified` search, trashed and purged pages reported as deletions. Requests authenticate with an
// Atlassian account email and API token (HTTP Basic) and wait out 429 Retry-After through
// connector.HTTP.
//
// A first sync lists every current page with its body. An incremental sync searches
// `space = KEY and type = page and lastmodified >= "<cursor>"` and fetches each result, then lists the
// space's current page ids (no bodies) to find what was trashed or purged since: a trashed page leaves
// the current listing and a purged one leaves everything, and both must be deleted within that sync.
package confluence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/connector"
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
	connector.CredentialRef
}

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
}

var _ connector.Source = (*Connector)(nil)

// New returns a connector for cfg with the email and token in creds.
func New(cfg Config, creds connector.Credentials, h *connector.HTTP) *Connector {
	return &Connector{cfg: cfg, creds: creds, http: h}
}

// page is a v2 page as the API returns it.
type page struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Title    string `json:"title"`
	SpaceID  string `json:"spaceId"`
	ParentID string `json:"parentId"`
	AuthorID string `json:"authorId"`
	Created  string `json:"createdAt"`
	Version  struct {
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
func (c *Connector) Changes(ctx context.Context, cursor string, known []connector.Known) (out connector.Listing, err error) {
	start := c.http.Calls
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	out.Cursor = now().UTC().Add(-2 * time.Minute).Format(cqlTime)
	defer func() { out.Calls = c.http.Calls - start }()
	spaceID, err := c.space(ctx)
	if err != nil {
		return out, err
	}
	if cursor == "" {
		err = c.pages(ctx, spaceID, true, func(p page) {
			it := c.item(p)
			out.Changes = append(out.Changes, connector.Change{ID: p.ID, Item: &it})
		})
		out.Complete = err == nil
		return out, err
	}
	if _, err := time.Parse(cqlTime, cursor); err != nil {
		return out, rag.Errorf("confluence.Changes", rag.KindInvalid, "cursor %q is not a CQL time", cursor)
	}
	changed := map[string]bool{}
	cql := fmt.Sprintf(`space = "%s" and type = page and lastmodified >= "%s"`, c.cfg.Space, cursor)
	next := c.cfg.URL + "/rest/api/search?limit=" + strconv.Itoa(c.cfg.PageSize) + "&cql=" + url.QueryEscape(cql)
	for next != "" {
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
			return out, err
		}
		for _, r := range res.Results {
			if r.Content.Type == "page" && !changed[r.Content.ID] {
				changed[r.Content.ID] = true
				out.Changes = append(out.Changes, connector.Change{ID: r.Content.ID})
			}
		}
		next = c.resolve(res.Links.Next)
	}
	// trashed and purged pages: known ids no longer among the current pages
	live := map[string]bool{}
	if err := c.pages(ctx, spaceID, false, func(p page) { live[p.ID] = true }); err != nil {
		return out, err
	}
	for _, k := range known {
		if !live[k.ID] && !changed[k.ID] {
			out.Changes = append(out.Changes, connector.Change{ID: k.ID, Deleted: true})
		}
	}
	return out, nil
}

// pages lists the space's current pages, with their bodies when body is set, following the Link
// header's next (or _links.next).
func (c *Connector) pages(ctx context.Context, spaceID string, body bool, each func(page)) error {
	next := c.cfg.URL + "/api/v2/spaces/" + url.PathEscape(spaceID) + "/pages?status=current&limit=" + strconv.Itoa(c.cfg.PageSize)
	if body {
		next += "&body-format=storage"
	}
	for next != "" {
		var res pageList
		var hdr http.Header
		if err := c.getJSON(ctx, next, &res, &hdr); err != nil {
			return err
		}
		for _, p := range res.Results {
			each(p)
		}
		next = c.resolve(linkNext(hdr.Get("Link")))
		if next == "" {
			next = c.resolve(res.Links.Next)
		}
	}
	return nil
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
	it.Calls = calls
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
