package main

import (
	"testing"

	"github.com/docmind/docmind/functions/internal/linktest"
)

// The chat function reaches Milvus through the one Milvus adapter, shared/store/milvus over the official
// client (milvus/client/v2): the hand-written search-side client it once used (milvuslite) is gone, and
// deptest forbids it in every binary.
func TestLinksOfficialMilvusClient(t *testing.T) {
	const pkg = "github.com/docmind/docmind/functions/query"
	got := linktest.Listed(t, pkg, "github.com/milvus-io/milvus/client/v2/milvusclient",
		[]string{"github.com/docmind/docmind/shared/store/milvus"}, []string{"github.com/milvus-io/milvus/client/v2/"})
	found := false
	for _, d := range got {
		found = found || d == "github.com/docmind/docmind/shared/store/milvus"
	}
	if !found {
		t.Errorf("%s does not link shared/store/milvus: %v", pkg, got)
	}
}
