package sharepoint

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

// longPast is a deadline that has passed: every invocation reads one delta page and hands on.
var longPast = time.Unix(1, 0)

// listing is a listing's changes (id to deleted) and the state each listed file would keep (its
// folder chain).
type listing struct {
	changes map[string]bool
	states  map[string]string
}

func (l listing) add(t *testing.T, c *Connector, chs []connector.Change) {
	t.Helper()
	for _, ch := range chs {
		if d, ok := l.changes[ch.ID]; ok && d != ch.Deleted {
			t.Fatalf("%s deleted=%v, an earlier page said %v", ch.ID, ch.Deleted, d)
		}
		l.changes[ch.ID] = ch.Deleted
		if !ch.Deleted {
			l.states[ch.ID] = c.item(c.listed[ch.ID]).State
		}
	}
}

func newListing() listing { return listing{changes: map[string]bool{}, states: map[string]string{}} }

// listPaged lists as syncflow does on AWS: each page in a fresh connector (another invocation) with a
// deadline already past, carrying the token on; each listed file's folder chain is kept as that
// invocation saw it.
func listPaged(t *testing.T, f *fake, config, cursor string, known []connector.Known) (listing, syncflow.Page, int) {
	t.Helper()
	l := newListing()
	changes, last, n := connectortest.ListPaged(t, func(n int, token string) syncflow.Page {
		c, _ := newConnector(t, f, config, goodCreds)
		pg, err := c.ChangesPage(context.Background(), cursor, token, known, longPast)
		if err != nil {
			t.Fatalf("page %d: %v", n, err)
		}
		l.add(t, c, pg.Listing.Changes)
		return pg
	})
	l.changes = changes
	return l, last, n
}

func listWhole(t *testing.T, f *fake, config, cursor string, known []connector.Known) (listing, connector.Listing) {
	t.Helper()
	c, _ := newConnector(t, f, config, goodCreds)
	wl, err := c.Changes(context.Background(), cursor, known)
	if err != nil {
		t.Fatal(err)
	}
	l := newListing()
	l.add(t, c, wl.Changes)
	return l, wl
}

// TestPagedListing lists a drive, its delta, and a full enumeration after 410 resyncRequired in pages
// of one delta page each, and compares the union with the whole listing, the files' folder chains
// included (a folder listed on an earlier page is asked for).
func TestPagedListing(t *testing.T) {
	f := newFake(t)
	f.folder("F-POL", "Team Policies", "root")
	f.folder("F-HR", "HR", "F-POL")
	f.folder("F-DEEP", "Contracts", "F-HR")
	f.folder("F-ARC", "Archive", "root")
	for i := range 8 {
		parent := []string{"F-POL", "F-HR", "F-DEEP"}[i%3]
		f.put(fmt.Sprintf("I-%02d", i), fmt.Sprintf("doc %02d.md", i), parent, "# Doc\n\nText.\n", "Megan Bowen")
	}
	f.put("I-OLD", "Old.md", "F-ARC", "# Old\n", "Alex Wilber") // outside the folder
	config := siteConfig(f, "team policies")

	want, wl := listWhole(t, f, config, "", nil)
	if len(want.changes) != 8 || !wl.Complete || wl.Cursor == "" || len(want.states["I-02"]) < len(`{"parents":["F-DEEP","F-HR","F-POL","root"]}`) {
		t.Fatalf("whole first listing = %+v (complete %v, cursor %q); want 8 files with their folder chains", want, wl.Complete, wl.Cursor)
	}
	f.limit = 1 // a 429 in the middle of the listing: waited out, the page still comes
	got, last, pages := listPaged(t, f, config, "", nil)
	if pages < 3 || f.limit != 0 || !maps.Equal(got.changes, want.changes) || !maps.Equal(got.states, want.states) ||
		!last.Listing.Complete || last.Listing.Cursor != wl.Cursor {
		t.Fatalf("paged first listing in %d pages = %+v (complete %v, cursor %q); want 3+ pages of %+v ending complete at %q",
			pages, got, last.Listing.Complete, last.Listing.Cursor, want, wl.Cursor)
	}
	var known []connector.Known
	for id, st := range want.states {
		known = append(known, connector.Known{ID: id, State: st})
	}

	// edit, add, remove a file, move one out, remove a folder (its files are named by no tombstone)
	cursor := wl.Cursor
	f.put("I-00", "doc 00.md", "F-POL", "# Doc\n\nEdited.\n", "Alex Wilber")
	f.put("I-NEW", "new.md", "F-DEEP", "# New\n", "Alex Wilber")
	f.remove("I-03")
	f.put("I-06", "doc 06.md", "F-ARC", "# Doc\n\nText.\n", "Megan Bowen")
	f.remove("F-DEEP")
	f.put("I-LATE", "late.md", "F-HR", "# Late\n", "Alex Wilber")
	f.put("I-LATER", "later.md", "F-POL", "# Later\n", "Alex Wilber")
	want, wl = listWhole(t, f, config, cursor, known)
	for id, del := range map[string]bool{"I-00": false, "I-LATE": false, "I-03": true, "I-06": true, "I-02": true, "I-05": true} {
		if d, ok := want.changes[id]; !ok || d != del {
			t.Fatalf("whole incremental listing = %v; want %s deleted=%v", want.changes, id, del)
		}
	}
	f.limit = 1
	got, last, pages = listPaged(t, f, config, cursor, known)
	if pages < 3 || f.limit != 0 || !maps.Equal(got.changes, want.changes) || last.Listing.Complete || last.Listing.Cursor != wl.Cursor {
		t.Fatalf("paged incremental listing in %d pages = %v (complete %v, cursor %q); want 3+ pages of %v ending at %q",
			pages, got.changes, last.Listing.Complete, last.Listing.Cursor, want.changes, wl.Cursor)
	}

	// the cursor is too old (410 resyncRequired): the drive is enumerated again, and the listing,
	// complete, says so on its last page
	f.oldest = f.seq + 1
	want, wl = listWhole(t, f, config, wl.Cursor, known)
	got, last, pages = listPaged(t, f, config, wl.Cursor[:len(wl.Cursor)-1]+"0", known)
	if !wl.Complete || pages < 3 || !maps.Equal(got.changes, want.changes) || !last.Listing.Complete || last.Listing.Cursor != wl.Cursor {
		t.Fatalf("paged listing after 410 in %d pages = %v (complete %v); want %v, complete", pages, got.changes, last.Listing.Complete, want.changes)
	}

	// a token naming another host is refused: the bearer token goes to Graph only
	c, _ := newConnector(t, f, config, goodCreds)
	if _, err := c.ChangesPage(context.Background(), "", `{"next":"https://evil.example/v1.0/x"}`, nil, longPast); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("a token leaving Graph = %v; want Invalid", err)
	}
}
