package main

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/deptest"
)

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/query") }

func TestRequireCloud(t *testing.T) {
	err := requireCloud(config.Default())
	if err == nil || strings.Count(err.Error(), "in a Lambda") != 4 {
		t.Fatalf("embedded defaults accepted in a Lambda: %v", err)
	}
	c := config.Default()
	c.SQL.Driver, c.Vector.Driver, c.KV.Driver, c.Blob.Driver = "mysql", "milvus", "redis", "s3"
	if err := requireCloud(c); err != nil {
		t.Fatal(err)
	}
}
