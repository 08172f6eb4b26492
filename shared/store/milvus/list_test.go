package milvus

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/storetest"
)

func TestVectorListerFake(t *testing.T) {
	storetest.TestVectorLister(t, func(t *testing.T) store.VectorIndex {
		return open(t, fakemilvus.Start(t).Addr(), "chunks")
	})
}

func TestVectorListerRealServer(t *testing.T) {
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		t.Skip("set " + EnvAddr + "=host:port to run the lister suite against a real Milvus")
	}
	storetest.TestVectorLister(t, func(t *testing.T) store.VectorIndex {
		coll := "docmind_test_" + strings.ReplaceAll(rag.NewID("c"), "-", "_")
		ix := open(t, addr, coll)
		t.Cleanup(func() { ix.c.DropCollection(context.Background(), milvusclient.NewDropCollectionOption(coll)) })
		return ix
	})
}
