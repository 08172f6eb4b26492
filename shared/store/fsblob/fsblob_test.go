package fsblob

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.TestBlobs(t, func(t *testing.T) store.Blobs {
		s, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestNeverWritesOutsideRoot(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	s, _ := New(root)
	ctx := context.Background()
	for _, k := range []string{"../escape", "a/../../escape", "/etc/escape"} {
		if _, err := s.Put(ctx, k, strings.NewReader("x"), ""); rag.KindOf(err) != rag.KindInvalid {
			t.Errorf("Put(%q) = %v", k, err)
		}
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 {
		t.Fatalf("files appeared beside the root: %v", entries)
	}
}

func TestObjectVersusFolderConflict(t *testing.T) {
	s, _ := New(t.TempDir())
	ctx := context.Background()
	if _, err := s.Put(ctx, "a/b", strings.NewReader("x"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "a", strings.NewReader("x"), ""); rag.KindOf(err) != rag.KindConflict {
		t.Fatalf("Put over a folder: %v, want Conflict", err)
	}
	if _, err := s.Put(ctx, "a/b/c", strings.NewReader("x"), ""); rag.KindOf(err) != rag.KindConflict {
		t.Fatalf("Put under an object: %v, want Conflict", err)
	}
}

func TestHandDroppedFileHasETag(t *testing.T) {
	root := t.TempDir()
	s, _ := New(root)
	os.WriteFile(filepath.Join(root, "objects", "dropped.txt"), []byte("hi"), 0o644)
	info, err := s.Stat(context.Background(), "dropped.txt")
	if err != nil || info.ETag != "49f68a5c8493ec2c0bf489821c21fc3b" {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
}
