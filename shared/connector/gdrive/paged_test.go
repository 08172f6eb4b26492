package gdrive

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/connectortest"
	"github.com/docmind/docmind/shared/rag"
)

// longPast is a deadline that has passed: every invocation lists one Drive page and hands on.
var longPast = time.Unix(1, 0)

// listPaged lists as syncflow does on AWS: each page in a fresh connector (another invocation) with a
// deadline already past, carrying the token on.
func listPaged(t *testing.T, f *fake, pemKey, config, cursor string, known []connector.Known) (map[string]bool, Page, int) {
	t.Helper()
	return connectortest.ListPaged(t, func(n int, token string) Page {
		c, _ := newConnector(t, f, config, pemKey)
		pg, err := c.ChangesPage(context.Background(), cursor, token, known, longPast)
		if err != nil {
			t.Fatalf("page %d: %v", n, err)
		}
		return pg
	})
}

// TestPagedListing lists a folder tree of 45 folders (two files.list queries of 40 parents) and then
// its change feed in pages of one Drive page each, and compares the union with the whole listing.
func TestPagedListing(t *testing.T) {
	key, pemKey := newKey(t)
	f := newFake(t, &key.PublicKey)
	f.put(rootFolder, "Handbook", folderMime, "root", "", "Ana Lima")
	for i := range 44 {
		f.put(fmt.Sprintf("SUB%02d", i), fmt.Sprintf("Team %02d", i), folderMime, rootFolder, "", "Ana Lima")
	}
	for i := range 12 {
		f.put(fmt.Sprintf("DOC%02d", i), fmt.Sprintf("policy %02d.md", i), "text/markdown", fmt.Sprintf("SUB%02d", i*3+i%2), "# P\n\nText.\n", "Ben Ode")
	}
	f.put("TOP", "top.md", "text/markdown", "SUB43", "# Top\n", "Ben Ode") // in the second query's 40 folders
	f.put("FORM", "Feedback", formMime, "SUB01", "", "Ben Ode")            // not indexable: never listed
	f.put("F-OTHER", "Elsewhere", folderMime, "root", "", "Ana Lima")
	f.put("OUT", "outside.md", "text/markdown", "F-OTHER", "# Out\n", "Ben Ode")
	config := `{"folder_id":"` + rootFolder + `","endpoint":"` + f.srv.URL + `/drive/v3","page_size":3}`

	c, _ := newConnector(t, f, config, pemKey)
	want, wl := connectortest.ListWhole(t, c, "", nil)
	if len(want) != 13 || !wl.Complete || wl.Cursor == "" || want["OUT"] || want["FORM"] {
		t.Fatalf("whole first listing = %v (complete %v, cursor %q); want the 13 files of the tree", want, wl.Complete, wl.Cursor)
	}
	known := make([]connector.Known, 0, len(want))
	for _, id := range keys(want) {
		it := c.item(c.listed[id])
		known = append(known, connector.Known{ID: id, Version: it.Version, State: it.State})
	}

	f.limit = 1 // a 429 in the middle of the listing: waited out, the page still comes
	got, last, pages := listPaged(t, f, pemKey, config, "", nil)
	if f.limit != 0 {
		t.Fatal("the rate limit was not met")
	}
	if pages < 3 || !maps.Equal(got, want) || !last.Listing.Complete || last.Listing.Cursor != wl.Cursor {
		t.Fatalf("paged first listing in %d pages = %v (complete %v, cursor %q); want 3+ pages of %v ending complete at %q",
			pages, got, last.Listing.Complete, last.Listing.Cursor, want, wl.Cursor)
	}

	// edit, add, trash, remove, move out, trash a folder holding a known file, add a folder with a file
	f.put("DOC00", "policy 00.md", "text/markdown", "SUB00", "# P\n\nEdited.\n", "Caro Diaz")
	f.put("NEW", "new.md", "text/markdown", "SUB05", "# New\n", "Caro Diaz")
	f.change("DOC01", func(x *ffile) { x.trashed = true })
	f.change("DOC02", func(x *ffile) { x.gone = true })
	f.change("DOC03", func(x *ffile) { x.parents = []string{"F-OTHER"} })
	under := ""
	for _, k := range known {
		if k.ID != "TOP" && k.ID > "DOC03" && under == "" {
			under = k.ID
		}
	}
	f.change(f.files[under].parents[0], func(x *ffile) { x.trashed = true })
	f.put("SUBNEW", "Runbooks", folderMime, rootFolder, "", "Caro Diaz")
	f.put("RUN", "runbook.md", "text/markdown", "SUBNEW", "# Runbook\n", "Caro Diaz")

	c, _ = newConnector(t, f, config, pemKey)
	cursor := wl.Cursor
	want, wl = connectortest.ListWhole(t, c, cursor, known)
	for id, del := range map[string]bool{"DOC00": false, "NEW": false, "RUN": false, "DOC01": true, "DOC02": true, "DOC03": true, under: true} {
		if d, ok := want[id]; !ok || d != del {
			t.Fatalf("whole incremental listing = %v; want %s deleted=%v", want, id, del)
		}
	}
	f.limit = 1
	got, last, pages = listPaged(t, f, pemKey, config, cursor, known)
	if pages < 3 || !maps.Equal(got, want) || last.Listing.Complete || last.Listing.Cursor != wl.Cursor {
		t.Fatalf("paged incremental listing in %d pages = %v (complete %v, cursor %q); want 3+ pages of %v ending at cursor %q",
			pages, got, last.Listing.Complete, last.Listing.Cursor, want, wl.Cursor)
	}

	// a token that is not one of this connector's is refused, not taken for a fresh start
	if _, err := c.ChangesPage(context.Background(), "", "page-2", nil, longPast); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("a foreign token = %v; want Invalid", err)
	}
}
