package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/identity"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

func cmdSearch(e env, args []string) int {
	var c common
	fs := newFlags("search", e, &c)
	kbName := fs.String("kb", "", "knowledge base name (default: every knowledge base of the tenant)")
	user := fs.String("user", "", "search as this user (email or id): only the knowledge bases the user may read")
	filter := fs.String("filter", "", `only documents whose metadata passes this JSON filter, e.g. {"key":"source","eq":"web"} (docs/metadata-filters.md)`)
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitConfig
	}
	query := strings.TrimSpace(strings.Join(rest, " "))
	if query == "" {
		fmt.Fprintln(e.stderr, `usage: docmind search [--kb NAME] [--filter JSON] [--data DIR] [--json] "query"`)
		return exitConfig
	}
	cfg, ok := c.load(e, nil)
	if !ok {
		return exitConfig
	}
	s, err := OpenStores(e.ctx, cfg)
	if err != nil {
		return fail(e, err)
	}
	defer s.Close()
	f := rag.Filter{Tenant: cfg.Tenant}
	if f.KBIDs, err = kbScope(e, s, cfg.Tenant, *user, *kbName); err != nil {
		return fail(e, err)
	}
	if none, err := metaRestrict(e.ctx, s.SQL, *filter, &f); err != nil || none {
		if err == nil {
			fmt.Fprintln(e.stdout, "no document passes the filter")
		}
		return failOr(e, err)
	}
	r, err := retriever(cfg, s)
	if err != nil {
		return fail(e, err)
	}
	res, err := r.Retrieve(e.ctx, retrieve.Query{Text: query, Filter: f})
	if err != nil {
		return fail(e, err)
	}
	if c.json {
		printJSON(e.stdout, res)
		return exitOK
	}
	p := res.Profile
	fmt.Fprintf(e.stdout, "query profile: %s, %s (BM25 %.2f, vector %.3f, k %.0f) %s\n", p.Specificity, p.Complexity, p.BM25Weight, p.VectorWeight, p.K, p.Reason)
	printHits := func(title string, hits []rag.Hit) {
		fmt.Fprintf(e.stdout, "\n%s (%d)\n", title, len(hits))
		for i, h := range hits[:min(10, len(hits))] {
			fmt.Fprintf(e.stdout, "  %2d. %.4f  %s\n", i+1, h.Score, h.ChunkID)
		}
	}
	printHits("keyword (BM25)", res.Keyword)
	printHits("vector", res.Vector)
	printHits("fused (weighted RRF)", res.Fused)
	printEv := func(title string, ev []rank.Evidence) {
		fmt.Fprintf(e.stdout, "\n%s (%d)\n", title, len(ev))
		for i, x := range ev {
			snippet := strings.Join(strings.Fields(x.ChildText), " ")
			if r := []rune(snippet); len(r) > 90 {
				snippet = string(r[:90]) + "..."
			}
			fmt.Fprintf(e.stdout, "  %2d. %.4f  %s > %s: %s\n", i+1, x.Score, x.FileName, x.Chapter, snippet)
		}
	}
	printEv("reranked", res.Reranked)
	printEv("filtered", res.Filtered)
	printEv("evidence (MMR, parents, compressed)", res.Evidence)
	g := res.Grade
	fmt.Fprintf(e.stdout, "\ngrade: %s (top %.3f, coverage %.2f, web compensation %v): %s\n", g.Tier, g.TopScore, g.Coverage, g.WebCompensation, g.Reason)
	if len(res.Degraded) > 0 {
		fmt.Fprintf(e.stdout, "degraded: %s\n", strings.Join(res.Degraded, ", "))
	}
	return exitOK
}

// kbScope turns a --kb name into the knowledge-base ids to search (nil: every knowledge base of the
// tenant); an unknown name is a usage error.
func kbScope(e env, s *Stores, tenant, user, name string) ([]string, error) {
	var kbIDs []string
	if name != "" {
		kb, err := s.SQL.GetKBByName(e.ctx, tenant, name)
		if rag.Is(err, rag.KindNotFound) {
			return nil, rag.Errorf("docmind", rag.KindInvalid, "no knowledge base named %q", name)
		}
		if err != nil {
			return nil, err
		}
		kbIDs = []string{kb.ID}
	}
	if user == "" {
		return kbIDs, nil // the operator: the whole tenant
	}
	return userScope(e, s, tenant, user, kbIDs)
}

// userScope narrows kbIDs (none: the whole tenant) to what the user (email or id) may read, as the
// server does for that user's requests.
func userScope(e env, s *Stores, tenant, user string, kbIDs []string) ([]string, error) {
	u, err := userByKey(e, s, tenant, user)
	if rag.Is(err, rag.KindNotFound) || rag.Is(err, rag.KindInvalid) {
		return nil, rag.Errorf("docmind", rag.KindInvalid, "tenant %s has no user %q", tenant, user)
	}
	if err != nil {
		return nil, err
	}
	p := rag.Principal{Tenant: tenant, UserID: u.ID, Email: u.Email, Role: u.Role}
	roles, err := identity.RolesOf(e.ctx, s.SQL, p)
	if err != nil || roles.All() {
		return kbIDs, err
	}
	all, err := s.SQL.ListKBs(e.ctx, tenant)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, kb := range roles.Readable(all) {
		if len(kbIDs) == 0 || slices.Contains(kbIDs, kb.ID) {
			out = append(out, kb.ID)
		}
	}
	if len(out) == 0 {
		return nil, rag.Errorf("docmind", rag.KindInvalid, "%s may read no knowledge base here", u.Email)
	}
	return out, nil
}
