package connectortest

import (
	"context"
	"testing"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/syncflow"
)

// ListPaged lists as syncflow does on AWS, one page per invocation: page(n, token) makes the n-th
// invocation's call (a fresh connector, a deadline already past) with the token the previous page
// handed on ("" first). It returns the union of the pages' changes (id to deleted), the last page and
// the number of pages. A page that contradicts an earlier one, or says complete or gives a cursor
// before the listing is done, fails the test, as does a listing that never ends.
func ListPaged(t *testing.T, page func(n int, token string) syncflow.Page) (map[string]bool, syncflow.Page, int) {
	t.Helper()
	union, token := map[string]bool{}, ""
	for n := 1; ; n++ {
		pg := page(n, token)
		for _, ch := range pg.Listing.Changes {
			if d, ok := union[ch.ID]; ok && d != ch.Deleted {
				t.Fatalf("page %d: %s deleted=%v, an earlier page said %v", n, ch.ID, ch.Deleted, d)
			}
			union[ch.ID] = ch.Deleted
		}
		if pg.Next == "" {
			return union, pg, n
		}
		if pg.Listing.Complete || pg.Listing.Cursor != "" {
			t.Fatalf("page %d says complete=%v cursor=%q before the listing is done", n, pg.Listing.Complete, pg.Listing.Cursor)
		}
		if n > 200 {
			t.Fatal("the paged listing does not end")
		}
		token = pg.Next
	}
}

// ListWhole lists src's changes since cursor in one call, as the local engine does: the reference a
// paged listing (ListPaged) is compared with. It returns the changes (id to deleted) and the listing.
func ListWhole(t *testing.T, src connector.Source, cursor string, known []connector.Known) (map[string]bool, connector.Listing) {
	t.Helper()
	l, err := src.Changes(context.Background(), cursor, known)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, ch := range l.Changes {
		m[ch.ID] = ch.Deleted
	}
	return m, l
}
