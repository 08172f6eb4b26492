package confluence

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/connectortest"
	"github.com/docmind/docmind/shared/connector/syncflow"
	"github.com/docmind/docmind/shared/rag"
)

// longPast is a deadline that has passed: every invocation makes one listing request and hands on.
var longPast = time.Unix(1, 0)

// listPaged lists as syncflow does on AWS: each page in a fresh connector (another invocation) with a
// deadline already past, carrying the token on; each invocation comes a minute after the previous one
// (the cursor stays the listing's start).
func listPaged(t *testing.T, f *fake, cursor string, known []connector.Known) (map[string]bool, syncflow.Page, int) {
	t.Helper()
	return connectortest.ListPaged(t, func(n int, token string) syncflow.Page {
		if n > 1 {
			f.advance(time.Minute)
		}
		c, _ := newConnector(t, f, goodCreds)
		pg, err := c.ChangesPage(context.Background(), cursor, token, known, longPast)
		if err != nil {
			t.Fatalf("page %d: %v", n, err)
		}
		return pg
	})
}

// TestPagedListing lists a space, then its changes and deletions (300 known pages: two id checks of
// 250), one request per invocation, and compares the union of the pages with the whole listing.
func TestPagedListing(t *testing.T) {
	f := newFake(t)
	for i := range 7 {
		f.put(fmt.Sprint(1001+i), fmt.Sprintf("Page %d", i), "<p>Text.</p>")
	}
	f.advance(10 * time.Minute)
	want, wl := connectortest.ListWhole(t, wholeSrc(t, f), "", nil)
	if len(want) != 7 || !wl.Complete || wl.Cursor != "2026/05/01 09:08" {
		t.Fatalf("whole first listing = %v (complete %v, cursor %q); want 7 pages, complete", want, wl.Complete, wl.Cursor)
	}
	f.limit = 1 // a 429 in the middle of the listing: waited out, the page still comes
	got, last, pages := listPaged(t, f, "", nil)
	if pages < 3 || f.limit != 0 || !maps.Equal(got, want) || !last.Listing.Complete || last.Listing.Cursor != wl.Cursor {
		t.Fatalf("paged first listing in %d pages = %v (complete %v, cursor %q); want 3+ pages of %v, complete at %q",
			pages, got, last.Listing.Complete, last.Listing.Cursor, want, wl.Cursor)
	}

	// 300 known pages: the 7 and 293 that were purged; then 3 edited, one added, one trashed
	var known []connector.Known
	for id := range want {
		known = append(known, connector.Known{ID: id, Version: "1", State: stateRestrictions})
	}
	for i := range 293 {
		known = append(known, connector.Known{ID: fmt.Sprint(5000 + i), Version: "1", State: stateRestrictions})
	}
	cursor := wl.Cursor
	f.advance(10 * time.Minute)
	for _, id := range []string{"1001", "1003", "1005"} {
		f.put(id, "Edited "+id, "<p>Edited.</p>")
	}
	f.put("1010", "New", "<p>New.</p>")
	f.pages["1002"].status = "trashed"
	f.advance(10 * time.Minute)
	want, wl = connectortest.ListWhole(t, wholeSrc(t, f), cursor, known)
	if len(want) != 4+1+293 || want["1001"] || !want["1002"] || want["1010"] || !want["5292"] || wl.Complete {
		t.Fatalf("whole incremental listing = %d changes (complete %v); want 4 changed and 294 deleted", len(want), wl.Complete)
	}
	f.limit = 1
	got, last, pages = listPaged(t, f, cursor, known)
	if pages < 4 || f.limit != 0 || !maps.Equal(got, want) || last.Listing.Complete || last.Listing.Cursor != wl.Cursor {
		t.Fatalf("paged incremental listing in %d pages = %d changes (complete %v, cursor %q); want 4+ pages (2 search, 2 checks) of %d, cursor %q",
			pages, len(got), last.Listing.Complete, last.Listing.Cursor, len(want), wl.Cursor)
	}

	// a token whose link leaves the site is refused: the credentials go to the site only
	c, _ := newConnector(t, f, goodCreds)
	if _, err := c.ChangesPage(context.Background(), cursor, `{"start":"2026/05/01 09:00","next":"https://evil.example/wiki/rest/api/search"}`, known, longPast); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("a token leaving the site = %v; want Invalid", err)
	}
}

// wholeSrc is a fresh connector for the whole listing the pages are compared with.
func wholeSrc(t *testing.T, f *fake) *Connector {
	c, _ := newConnector(t, f, goodCreds)
	return c
}
