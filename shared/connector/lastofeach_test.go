package connector

import (
	"slices"
	"testing"
)

// An item named more than once in a feed keeps only its last occurrence, at that place in the feed.
func TestLastOfEach(t *testing.T) {
	type ch struct{ id, state string }
	feed := []ch{{"a", "edited"}, {"b", "added"}, {"a", "deleted"}, {"c", "added"}, {"b", "renamed"}}
	got := LastOfEach(feed, func(c ch) string { return c.id })
	want := []ch{{"a", "deleted"}, {"c", "added"}, {"b", "renamed"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if feed[0].state != "edited" {
		t.Error("the feed itself was changed")
	}
}
