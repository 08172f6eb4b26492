// Package web is the web-site connector: it enumerates a site from its sitemap.xml and by following
// links within the allowed URL prefixes, obeys robots.txt, sends the ETag and Last-Modified of the
// last fetch as conditional headers (a 304 costs no body and no re-indexing), and keys each page by
// its canonical URL. A site has no change feed, so every sync is a complete listing: a page the site
// says is gone (404/410, noindex, redirected out of scope, disallowed) is deleted in that sync; a page
// that is only unlinked is asked for directly and kept while it is served. Requests go through the
// connector's HTTP, built on the hardened netx client by the caller.
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// Config is a web connector's JSON settings.
type Config struct {
	// URL is the start page.
	URL string `json:"url"`
	// Prefixes are the URL prefixes pages must start with; default: the start URL up to its last "/".
	Prefixes []string `json:"prefixes,omitempty"`
	// Sitemaps are read for pages; default: the robots.txt Sitemap lines, else <origin>/sitemap.xml.
	Sitemaps []string `json:"sitemaps,omitempty"`
	// MaxPages bounds one sync (default 2000); a crawl cut short is not complete, so it deletes nothing.
	MaxPages int `json:"max_pages,omitempty"`
	// MaxDepth is the number of link hops followed from the start page and sitemap entries (default 6).
	MaxDepth int `json:"max_depth,omitempty"`
	// UserAgent names docmind to the site and selects its robots.txt group (default "docmind").
	UserAgent string `json:"user_agent,omitempty"`
}

// ParseConfig reads and checks a web connector's configuration, reporting every problem.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, rag.Errorf("web.ParseConfig", rag.KindInvalid, "web connector config: %v", err)
	}
	var probs []string
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		probs = append(probs, fmt.Sprintf("url %q must be an absolute http or https URL", c.URL))
	} else if len(c.Prefixes) == 0 {
		p := *u
		p.RawQuery, p.Fragment = "", ""
		p.Path = p.Path[:strings.LastIndex(p.Path, "/")+1]
		if p.Path == "" {
			p.Path = "/"
		}
		c.Prefixes = []string{normalize(&p)}
	}
	for _, p := range c.Prefixes {
		if pu, err := url.Parse(p); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			probs = append(probs, fmt.Sprintf("prefix %q must be an absolute http or https URL", p))
		}
	}
	if c.MaxPages < 0 || c.MaxDepth < 0 {
		probs = append(probs, "max_pages and max_depth must not be negative")
	}
	if len(probs) > 0 {
		return c, rag.Errorf("web.ParseConfig", rag.KindInvalid, "web connector config: %s", strings.Join(probs, "; "))
	}
	if c.MaxPages == 0 {
		c.MaxPages = 2000
	}
	if c.MaxDepth == 0 {
		c.MaxDepth = 6
	}
	if c.UserAgent == "" {
		c.UserAgent = "docmind"
	}
	return c, nil
}

// Connector crawls one site.
type Connector struct {
	cfg  Config
	http *connector.HTTP
}

var _ connector.Source = (*Connector)(nil)

// New returns a connector for cfg (from ParseConfig) sending through h.
func New(cfg Config, h *connector.HTTP) *Connector { return &Connector{cfg: cfg, http: h} }

// state is what the connector keeps per page between syncs.
type state struct {
	ETag         string   `json:"etag,omitempty"`
	LastModified string   `json:"last_modified,omitempty"`
	Links        []string `json:"links,omitempty"`
	// From is the URL the page was requested as when that is not its canonical id (a link with a
	// query, an alias): the next crawl meets that URL again and sends these validators with it.
	From string `json:"from,omitempty"`
}

// prior is what the crawl knows of a URL it is about to request.
type prior struct {
	id string
	st state
}

// Validate fetches the start page.
func (c *Connector) Validate(ctx context.Context) error {
	resp, err := c.get(ctx, c.cfg.URL, state{})
	if err != nil {
		return rag.E("web.Validate", rag.KindUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return connector.StatusError("web.Validate", resp)
	}
	return nil
}

// Changes crawls the site. Listing.Complete is false when MaxPages cut the crawl short. An error
// fetching robots.txt other than 404 ends the listing (RFC 9309: an unreachable robots.txt means
// "crawl nothing"), so nothing is deleted on a bad day.
func (c *Connector) Changes(ctx context.Context, _ string, known []connector.Known) (connector.Listing, error) {
	start := c.http.Calls
	cr := &crawl{c: c, known: map[string]prior{}, visited: map[string]bool{}, emitted: map[string]bool{}}
	for _, k := range known {
		var st state
		_ = json.Unmarshal([]byte(k.State), &st) // an unreadable state only costs a full fetch
		cr.known[k.ID] = prior{k.ID, st}
		if st.From != "" {
			cr.known[st.From] = prior{k.ID, st}
		}
	}
	err := cr.run(ctx)
	cr.out.Calls = c.http.Calls - start
	cr.out.Cursor = time.Now().UTC().Format(time.RFC3339)
	return cr.out, err
}

type queued struct {
	url   string
	depth int
}

type crawl struct {
	c       *Connector
	robots  robots
	known   map[string]prior // by the URL requested
	visited map[string]bool  // URLs requested
	emitted map[string]bool  // item ids listed
	queue   []queued
	out     connector.Listing
}

func (cr *crawl) run(ctx context.Context) error {
	if err := cr.readRobots(ctx); err != nil {
		return err
	}
	cr.push(cr.c.cfg.URL, 0)
	cr.readSitemaps(ctx)
	cr.out.Complete = true
	if err := cr.drain(ctx); err != nil || !cr.out.Complete {
		return err
	}
	// Pages indexed before that no link or sitemap reaches now are asked for directly: a page is
	// deleted when the site says it is gone (404, 410, noindex, moved out of scope), not when a
	// navigation change leaves it unlinked for a day.
	for id := range cr.known {
		cr.push(id, 0)
	}
	return cr.drain(ctx)
}

func (cr *crawl) drain(ctx context.Context) error {
	for len(cr.queue) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(cr.emitted) >= cr.c.cfg.MaxPages {
			cr.out.Complete = false
			return nil
		}
		q := cr.queue[0]
		cr.queue = cr.queue[1:]
		cr.visit(ctx, q)
	}
	return nil
}

// push queues u when it is new, within the prefixes and allowed by robots.txt.
func (cr *crawl) push(raw string, depth int) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	n := normalize(u)
	if cr.visited[n] || !cr.c.inScope(n) || !cr.robots.allowed(pathOf(n)) {
		return
	}
	cr.visited[n] = true
	cr.queue = append(cr.queue, queued{n, depth})
}

func pathOf(n string) string {
	u, _ := url.Parse(n)
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}

func (cr *crawl) readRobots(ctx context.Context) error {
	u, _ := url.Parse(cr.c.cfg.URL)
	resp, err := cr.c.get(ctx, u.Scheme+"://"+u.Host+"/robots.txt", state{})
	if err != nil {
		return rag.E("web.Changes", rag.KindUnavailable, fmt.Errorf("robots.txt: %w", err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return rag.E("web.Changes", rag.KindUnavailable, fmt.Errorf("robots.txt: %w", err))
		}
		cr.robots = parseRobots(string(body), cr.c.cfg.UserAgent)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		// no robots.txt: everything is allowed (RFC 9309 2.3.1.3)
	default:
		return connector.StatusError("web.Changes", resp)
	}
	return nil
}

// readSitemaps queues the pages of the configured sitemaps, or of robots.txt's, or of
// <origin>/sitemap.xml; sitemap indexes are followed one level deep. A missing sitemap is no error:
// links are crawled anyway.
func (cr *crawl) readSitemaps(ctx context.Context) {
	maps := cr.c.cfg.Sitemaps
	if len(maps) == 0 {
		maps = cr.robots.sitemaps
	}
	if len(maps) == 0 {
		u, _ := url.Parse(cr.c.cfg.URL)
		maps = []string{u.Scheme + "://" + u.Host + "/sitemap.xml"}
	}
	for level := 0; level < 2 && len(maps) > 0; level++ {
		var next []string
		for _, m := range maps {
			var sm struct {
				URLs []struct {
					Loc string `xml:"loc"`
				} `xml:"url"`
				Sitemaps []struct {
					Loc string `xml:"loc"`
				} `xml:"sitemap"`
			}
			resp, err := cr.c.get(ctx, m, state{})
			if err != nil {
				continue
			}
			if resp.StatusCode == http.StatusOK {
				_ = xml.NewDecoder(resp.Body).Decode(&sm)
			}
			resp.Body.Close()
			for _, u := range sm.URLs {
				cr.push(strings.TrimSpace(u.Loc), 0)
			}
			for _, s := range sm.Sitemaps {
				next = append(next, strings.TrimSpace(s.Loc))
			}
		}
		maps = next
	}
}

// visit fetches one queued page, lists it, and queues its links.
func (cr *crawl) visit(ctx context.Context, q queued) {
	prev, wasKnown := cr.known[q.url]
	it, links, err := cr.c.fetch(ctx, q.url, prev.st)
	switch {
	case errors.Is(err, connector.ErrGone), errors.Is(err, errSkip):
		return // not listed: a known page is deleted by the complete listing
	case err != nil:
		// listed without an item: the engine fetches it again and records the failure, and a page
		// that fails for a moment is not mistaken for a deleted one
		if !cr.emitted[q.url] {
			cr.emitted[q.url] = true
			cr.out.Changes = append(cr.out.Changes, connector.Change{ID: q.url})
		}
		return
	}
	if it.NotModified && wasKnown {
		it.ID, links = prev.id, prev.st.Links
	}
	cr.visited[it.ID] = true // reached under an alias: not requested again by its canonical URL
	if !cr.emitted[it.ID] && it.ID != "" {
		cr.emitted[it.ID] = true
		cr.out.Changes = append(cr.out.Changes, connector.Change{ID: it.ID, Item: &it})
	}
	if q.depth < cr.c.cfg.MaxDepth {
		for _, l := range links {
			cr.push(l, q.depth+1)
		}
	}
}

// errSkip marks a page that is not an item: noindex, an unsupported type, a redirect out of scope.
var errSkip = errors.New("web: not an item")

// Fetch fetches one page by its id (its canonical URL).
func (c *Connector) Fetch(ctx context.Context, id string, prev connector.Known) (connector.Item, error) {
	var st state
	_ = json.Unmarshal([]byte(prev.State), &st)
	before := c.http.Calls
	it, _, err := c.fetch(ctx, id, st)
	it.Calls = c.http.Calls - before
	if errors.Is(err, errSkip) {
		return it, fmt.Errorf("%w: %s is no longer an indexable page", connector.ErrGone, id)
	}
	return it, err
}

// fetch requests u with prev's validators and returns the page as an item and its links (nil for a
// 304). ErrGone for 404/410; errSkip for a page that is not an item.
func (c *Connector) fetch(ctx context.Context, u string, prev state) (connector.Item, []string, error) {
	resp, err := c.get(ctx, u, prev)
	if err != nil {
		return connector.Item{}, nil, err
	}
	defer resp.Body.Close()
	final := normalize(resp.Request.URL)
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return connector.Item{ID: u, NotModified: true, Version: versionOf(prev.ETag, prev.LastModified, nil)}, nil, nil
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return connector.Item{}, nil, fmt.Errorf("%w: %s: HTTP %d", connector.ErrGone, u, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return connector.Item{}, nil, connector.StatusError("web.Fetch", resp)
	case !c.inScope(final):
		return connector.Item{}, nil, errSkip // redirected off the allowed prefixes
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return connector.Item{}, nil, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	it := connector.Item{ID: final, URL: final, Data: body,
		Metadata: map[string]string{"source": "web", "url": final, "content_type": ct}}
	st := state{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	if t, err := http.ParseTime(st.LastModified); err == nil {
		it.Modified = t.UTC()
		it.Metadata["modified"] = it.Modified.Format(time.RFC3339)
	}
	var links []string
	if ct == "text/html" || ct == "application/xhtml+xml" {
		pg := parsePage(body, resp.Request.URL)
		if pg.noindex {
			return it, nil, errSkip
		}
		if pg.canonical != "" && c.inScope(pg.canonical) {
			it.ID, it.URL = pg.canonical, pg.canonical
			it.Metadata["url"] = pg.canonical
		}
		if !pg.nofollow {
			links = pg.links
		}
		it.Name = fileName(pg.title, it.ID) + ".html"
		for k, v := range map[string]string{"title": pg.title, "language": pg.lang, "description": pg.description, "author": pg.author} {
			if v != "" {
				it.Metadata[k] = v
			}
		}
	} else {
		it.Name = path.Base(resp.Request.URL.Path)
		if ext := extFor(ct); ext != "" && !strings.HasSuffix(strings.ToLower(it.Name), ext) {
			it.Name += ext
		}
		if !extract.Supported(it.Name) {
			return it, nil, errSkip
		}
	}
	st.Links = links
	if u != it.ID {
		st.From = u
	}
	b, _ := json.Marshal(st)
	it.State = string(b)
	it.Version = versionOf(st.ETag, st.LastModified, body)
	return it, links, nil
}

// versionOf is the ETag, else Last-Modified, else a hash of the body.
func versionOf(etag, lastMod string, body []byte) string {
	switch {
	case etag != "":
		return etag
	case lastMod != "":
		return lastMod
	case body != nil:
		h := sha256.Sum256(body)
		return "sha256:" + hex.EncodeToString(h[:16])
	}
	return ""
}

func extFor(ct string) string {
	switch ct {
	case "application/pdf":
		return ".pdf"
	case "text/markdown":
		return ".md"
	case "text/plain":
		return ".txt"
	case "text/csv":
		return ".csv"
	case "application/vnd.openxmlformats-officedocument.wordprocessingml.document":
		return ".docx"
	}
	return ""
}

// get sends a GET with prev's validators.
func (c *Connector) get(ctx context.Context, u string, prev state) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	if prev.ETag != "" {
		req.Header.Set("If-None-Match", prev.ETag)
	}
	if prev.LastModified != "" {
		req.Header.Set("If-Modified-Since", prev.LastModified)
	}
	return c.http.Do(req)
}

// inScope reports whether the normalised URL n starts with an allowed prefix.
func (c *Connector) inScope(n string) bool {
	for _, p := range c.cfg.Prefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// normalize is a URL's identity: scheme and host lower-cased, the default port and the fragment
// dropped, an empty path made "/".
func normalize(u *url.URL) string {
	v := *u
	v.Scheme, v.Host, v.Fragment, v.RawFragment = strings.ToLower(v.Scheme), strings.ToLower(v.Host), "", ""
	if (v.Scheme == "http" && strings.HasSuffix(v.Host, ":80")) || (v.Scheme == "https" && strings.HasSuffix(v.Host, ":443")) {
		v.Host = v.Host[:strings.LastIndex(v.Host, ":")]
	}
	if v.Path == "" {
		v.Path = "/"
	}
	return v.String()
}

// fileName is a page's name in citations: its title, else the last segment of its URL.
func fileName(title, id string) string {
	name := strings.Join(strings.Fields(title), " ")
	if name == "" {
		u, _ := url.Parse(id)
		name = strings.TrimSuffix(path.Base(u.Path), path.Ext(u.Path))
		if name == "/" || name == "." || name == "" {
			name = u.Host
		}
	}
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 0x20 {
			return '-'
		}
		return r
	}, name)
	if r := []rune(name); len(r) > 120 {
		name = string(r[:120])
	}
	return name
}

// page is what the crawl reads from an HTML page.
type page struct {
	title, lang, description, author, canonical string
	links                                       []string
	noindex, nofollow                           bool
}

// parsePage reads the title, language, canonical link, robots meta and links of an HTML page.
func parsePage(body []byte, at *url.URL) page {
	var pg page
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return pg
	}
	base := at
	resolve := func(href string) string {
		r, err := url.Parse(strings.TrimSpace(href))
		if err != nil {
			return ""
		}
		abs := base.ResolveReference(r)
		if abs.Scheme != "http" && abs.Scheme != "https" {
			return ""
		}
		return normalize(abs)
	}
	attr := func(n *html.Node, key string) string {
		for _, a := range n.Attr {
			if strings.EqualFold(a.Key, key) {
				return a.Val
			}
		}
		return ""
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Html:
				pg.lang = attr(n, "lang")
			case atom.Title:
				if pg.title == "" && n.FirstChild != nil {
					pg.title = strings.TrimSpace(n.FirstChild.Data)
				}
			case atom.Base:
				if h := attr(n, "href"); h != "" {
					if b, err := url.Parse(h); err == nil {
						base = at.ResolveReference(b)
					}
				}
			case atom.Link:
				if strings.EqualFold(attr(n, "rel"), "canonical") {
					pg.canonical = resolve(attr(n, "href"))
				}
			case atom.Meta:
				switch strings.ToLower(attr(n, "name")) {
				case "robots":
					c := strings.ToLower(attr(n, "content"))
					pg.noindex = pg.noindex || strings.Contains(c, "noindex") || strings.Contains(c, "none")
					pg.nofollow = pg.nofollow || strings.Contains(c, "nofollow") || strings.Contains(c, "none")
				case "description":
					pg.description = attr(n, "content")
				case "author":
					pg.author = attr(n, "content")
				}
			case atom.A:
				if !strings.Contains(strings.ToLower(attr(n, "rel")), "nofollow") {
					if l := resolve(attr(n, "href")); l != "" {
						pg.links = append(pg.links, l)
					}
				}
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	return pg
}
