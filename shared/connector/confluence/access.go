package confluence

import (
	"context"
	"net/url"
	"slices"
	"strconv"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/connector"
)

// Page restrictions. Confluence lets a page be viewed only by the users and groups its view ("read")
// restriction names, and a view restriction is inherited: a page is visible to a person only if every
// restricted page above it lets them in too. docmind keeps one access list per document (any principal
// listed may read it), so a page's list is:
//
//   - none (nil) when neither the page nor an ancestor has a view restriction: the space's readers,
//     which docmind's knowledge-base roles stand for;
//   - the one restriction's users and groups when exactly one level is restricted;
//   - when several levels are, the principals every level names; if none is named by all (a person
//     at one level, a group at another), the page gets NoOne, which no identity holds, rather than a
//     guess: it is readable by admins only until an operator maps the principals
//     (DOCMIND_ACCESS_MAP) or the restrictions change.
//
// Users are `user:<email>` when the API shows the address (Atlassian hides it by each user's profile
// visibility) and `user:<accountId>` otherwise; groups are `group:<name>`. Reading them costs one
// request per restricted or unrestricted page and ancestor, once per listing (cached), plus the
// ancestors' list of a page whose parent was not listed. Edit restrictions do not limit reading and are
// not read; space permissions are the knowledge base's roles.

// stateRestrictions is the item state of a page whose restrictions were read. A known page whose state
// says otherwise (synced before restrictions were read, or with "permissions" switched since) is
// fetched again by the next incremental sync, which records its list without re-embedding it.
const stateRestrictions = "restrictions-read"

// NoOne is the access list of a page whose inherited restrictions no single principal satisfies.
const NoOne = "confluence:no-common-principal"

// restrictionLimit is the users and groups asked for per request (the API pages both by start/limit).
const restrictionLimit = 200

// learnParents remembers the parents the listing named, so the ancestors of a listed tree are walked
// without asking for them.
func (c *Connector) learnParents(pages []page) {
	if c.parents == nil {
		c.parents, c.restricted = map[string]string{}, map[string][]string{}
	}
	for _, p := range pages {
		if p.ParentType == "" || p.ParentType == "page" {
			c.parents[p.ID] = p.ParentID
		} else {
			c.parents[p.ID] = "" // a folder or whiteboard above: restrictions are read on pages only
		}
	}
}

// withAccess sets it.Permissions from p's and its ancestors' view restrictions (when they are read).
func (c *Connector) withAccess(ctx context.Context, p page, it *connector.Item) error {
	if !c.cfg.readsRestrictions() {
		return nil
	}
	chain, err := c.ancestry(ctx, p.ID)
	if err != nil {
		return err
	}
	var levels [][]string
	for _, id := range chain {
		r, err := c.restriction(ctx, id)
		if err != nil {
			return err
		}
		if r != nil {
			levels = append(levels, access.NormalizeAll(r)) // compared across levels as recorded
		}
	}
	it.Permissions, it.State = combine(levels), stateRestrictions
	return nil
}

// recheck lists the known pages whose recorded access does not follow the current setting (see
// stateRestrictions).
func (c *Connector) recheck(known []connector.Known) []string {
	var ids []string
	for _, k := range known {
		if (k.State == stateRestrictions) != c.cfg.readsRestrictions() {
			ids = append(ids, k.ID)
		}
	}
	return ids
}

// combine is the access list of a page under the restricted levels above and at it (see the package
// comment above): nil when none, the principals all levels name, or NoOne.
func combine(levels [][]string) []string {
	if len(levels) == 0 {
		return nil
	}
	out := slices.Clone(levels[0])
	for _, l := range levels[1:] {
		out = slices.DeleteFunc(out, func(p string) bool { return !slices.Contains(l, p) })
	}
	if len(out) == 0 {
		return []string{NoOne}
	}
	return out
}

// ancestry is the page and the pages above it, nearest first. The parents the listing named are used
// first; a parent not known asks the API for the page's ancestors once.
func (c *Connector) ancestry(ctx context.Context, id string) ([]string, error) {
	if c.parents == nil {
		c.learnParents(nil)
	}
	chain := []string{id}
	for cur, n := id, 0; n < 256; n++ {
		parent, ok := c.parents[cur]
		if !ok {
			above, err := c.ancestors(ctx, cur)
			if err != nil {
				return nil, err
			}
			return append(chain, above...), nil
		}
		if parent == "" || slices.Contains(chain, parent) {
			return chain, nil
		}
		chain = append(chain, parent)
		cur = parent
	}
	return chain, nil
}

// ancestors asks for a page's ancestors (v2 GET /pages/{id}/ancestors) and returns the pages among
// them, nearest first, remembering each one's parent.
func (c *Connector) ancestors(ctx context.Context, id string) ([]string, error) {
	var res struct {
		Results []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"results"`
	}
	if err := c.getJSON(ctx, c.cfg.URL+"/api/v2/pages/"+url.PathEscape(id)+"/ancestors?limit=250", &res, nil); err != nil {
		return nil, err
	}
	// the API lists them from the top of the tree down to the parent
	var pages []string
	below := id
	for i := len(res.Results) - 1; i >= 0; i-- {
		a := res.Results[i]
		if a.Type != "" && a.Type != "page" {
			c.parents[below] = "" // restrictions are read on pages only: a folder ends the chain
			break
		}
		c.parents[below] = a.ID
		pages = append(pages, a.ID)
		below = a.ID
	}
	if _, ok := c.parents[below]; !ok {
		c.parents[below] = ""
	}
	return pages, nil
}

// restriction is one page's own view restriction as principals (nil: none), cached for the listing.
func (c *Connector) restriction(ctx context.Context, id string) ([]string, error) {
	if r, ok := c.restricted[id]; ok {
		return r, nil
	}
	var out []string
	for start := 0; ; start += restrictionLimit {
		var res struct {
			Restrictions struct {
				User struct {
					Results []struct {
						AccountID string `json:"accountId"`
						Email     string `json:"email"`
					} `json:"results"`
					Size int `json:"size"`
				} `json:"user"`
				Group struct {
					Results []struct {
						Name string `json:"name"`
					} `json:"results"`
					Size int `json:"size"`
				} `json:"group"`
			} `json:"restrictions"`
		}
		u := c.cfg.URL + "/rest/api/content/" + url.PathEscape(id) + "/restriction/byOperation/read?expand=restrictions.user,restrictions.group&start=" +
			strconv.Itoa(start) + "&limit=" + strconv.Itoa(restrictionLimit)
		if err := c.getJSON(ctx, u, &res, nil); err != nil {
			return nil, err
		}
		for _, u := range res.Restrictions.User.Results {
			switch {
			case u.Email != "":
				out = append(out, "user:"+u.Email)
			case u.AccountID != "":
				out = append(out, "user:"+u.AccountID)
			}
		}
		for _, g := range res.Restrictions.Group.Results {
			if g.Name != "" {
				out = append(out, "group:"+g.Name)
			}
		}
		if len(res.Restrictions.User.Results) < restrictionLimit && len(res.Restrictions.Group.Results) < restrictionLimit {
			break
		}
	}
	c.restricted[id] = out
	return out, nil
}
