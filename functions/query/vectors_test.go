package main

import (
	"context"
	"testing"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
)

// On a fresh stack the collections do not exist until a function that creates them has started: the
// chat function still starts, and its searches say why they fail.
func TestOpenVectorsBeforeCollectionsExist(t *testing.T) {
	srv := fakemilvus.Start(t)
	cfg := config.Default()
	cfg.Vector.MilvusAddr = srv.Addr()
	ix, err := openVectors(context.Background(), cfg, "docmind_chunks")
	if err != nil {
		t.Fatalf("open before the collection exists: %v, want a started index", err)
	}
	q := make([]float32, cfg.Vector.Dim)
	q[0] = 1
	if _, err := ix.Search(context.Background(), q, 3, rag.Filter{Tenant: "default"}); rag.KindOf(err) != rag.KindNotFound {
		t.Errorf("Search: %v, want NotFound", err)
	}
	// an unreachable Milvus does not fail the start either (nothing is dialled at init): the first
	// search says Unavailable
	cfg.Vector.MilvusAddr = "127.0.0.1:1"
	down, err := openVectors(context.Background(), cfg, "docmind_chunks")
	if err != nil {
		t.Fatalf("open of an unreachable Milvus: %v, want a started index", err)
	}
	if _, err := down.Search(context.Background(), q, 3, rag.Filter{Tenant: "default"}); rag.KindOf(err) != rag.KindUnavailable {
		t.Errorf("Search against an unreachable Milvus: %v, want Unavailable", err)
	}
}
