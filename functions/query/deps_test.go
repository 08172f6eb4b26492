package main

import (
	"testing"

	"github.com/docmind/docmind/functions/internal/linktest"
)

// The chat function reaches Milvus through milvuslite only: the official client (client/v2) and
// milvus/pkg were 26 MB of the binary and their initialisers part of every cold start (issue #12).
// milvus-proto, the generated protocol, is allowed.
func TestLinksNoMilvusClient(t *testing.T) {
	const pkg = "github.com/docmind/docmind/functions/query"
	for _, d := range linktest.Listed(t, pkg, "github.com/docmind/docmind/shared/store/milvus/milvuslite", nil, []string{"github.com/milvus-io/milvus/"}) {
		t.Errorf("%s links %s", pkg, d)
	}
}
