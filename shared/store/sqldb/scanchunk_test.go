package sqldb

import (
	"encoding/json"
	"reflect"
	"testing"
)

type tagRow string

func (t tagRow) Scan(dest ...any) error {
	*dest[12].(*string) = string(t)
	return nil
}

// TestScanChunkTagsAsUnmarshal: the short cut for a chunk without tags gives what json.Unmarshal gives
// (an empty, non-nil list), and other lists still go through it.
func TestScanChunkTagsAsUnmarshal(t *testing.T) {
	for _, tags := range []string{"[]", `["a","b c"]`, `["x"]`, "null"} {
		c, err := scanChunk(tagRow(tags))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if err := json.Unmarshal([]byte(tags), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.Tags, want) || (want != nil) != (c.Tags != nil) {
			t.Fatalf("tags %s: %#v, want %#v", tags, c.Tags, want)
		}
	}
	if _, err := scanChunk(tagRow("[bad")); err == nil {
		t.Fatal("malformed tags read without an error")
	}
}
