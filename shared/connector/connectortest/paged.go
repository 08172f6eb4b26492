package connectortest

import (
	"testing"

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
