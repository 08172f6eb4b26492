package storetest

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// TestBlobs runs the Blobs contract. open returns an empty store.
func TestBlobs(t *testing.T, open func(t *testing.T) store.Blobs) {
	read := func(t *testing.T, b store.Blobs, key string) ([]byte, store.BlobInfo) {
		t.Helper()
		rc, info, err := b.Get(ctxT(t), key)
		if err != nil {
			t.Fatalf("Get(%q): %v", key, err)
		}
		defer rc.Close()
		data, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return data, info
	}

	t.Run("PutGetStat", func(t *testing.T) {
		b := open(t)
		ctx := ctxT(t)
		info, err := b.Put(ctx, "kb/手册 v2 (final)+%.md", strings.NewReader("# hello"), "text/markdown")
		must(t, err)
		if info.Key != "kb/手册 v2 (final)+%.md" || info.Size != 7 || info.ETag == "" {
			t.Fatalf("Put info = %+v", info)
		}
		data, got := read(t, b, info.Key)
		if string(data) != "# hello" || got.ETag != info.ETag || got.Size != 7 {
			t.Fatalf("Get = %q %+v", data, got)
		}
		st, err := b.Stat(ctx, info.Key)
		if err != nil || st.ETag != info.ETag || st.ContentType != "text/markdown" || st.ModTime.IsZero() {
			t.Fatalf("Stat = %+v, %v", st, err)
		}
		// replacing changes the ETag; the same content gives the same ETag
		again, err := b.Put(ctx, info.Key, strings.NewReader("# hello, world"), "")
		must(t, err)
		if again.ETag == info.ETag || again.Size != 14 {
			t.Fatalf("replace kept ETag %q", again.ETag)
		}
		same, _ := b.Put(ctx, "other", strings.NewReader("# hello, world"), "")
		if same.ETag != again.ETag {
			t.Fatalf("same content, different ETags: %q %q", same.ETag, again.ETag)
		}
		// a non-seekable body of 3 MiB of random bytes
		big := make([]byte, 3<<20)
		rand.Read(big)
		_, err = b.Put(ctx, "big.bin", io.MultiReader(bytes.NewReader(big[:1<<20]), bytes.NewReader(big[1<<20:])), "application/octet-stream")
		must(t, err)
		if data, _ := read(t, b, "big.bin"); !bytes.Equal(data, big) {
			t.Fatal("3 MiB round trip differs")
		}
		empty, err := b.Put(ctx, "empty", strings.NewReader(""), "")
		if err != nil || empty.Size != 0 {
			t.Fatalf("empty object: %+v %v", empty, err)
		}
	})

	t.Run("Missing", func(t *testing.T) {
		b := open(t)
		ctx := ctxT(t)
		_, _, err := b.Get(ctx, "nope")
		checkKind(t, "get", rag.KindNotFound, err)
		checkKind(t, "stat", rag.KindNotFound, second(b.Stat(ctx, "nope")))
		must(t, b.Delete(ctx, "nope"))
		list, err := b.List(ctx, "")
		if err != nil || list == nil || len(list) != 0 {
			t.Fatalf("List on empty = %v, %v; want empty non-nil", list, err)
		}
	})

	t.Run("ListAndDelete", func(t *testing.T) {
		b := open(t)
		ctx := ctxT(t)
		keys := []string{"b/2.txt", "a/1.txt", "a/sub/3.txt", "a.txt", "b/10.txt", "ab/x"}
		for i, k := range keys {
			_, err := b.Put(ctx, k, strings.NewReader(fmt.Sprint(i)), "")
			must(t, err)
		}
		list := func(prefix string) []string {
			infos, err := b.List(ctx, prefix)
			must(t, err)
			var out []string
			for _, in := range infos {
				if in.ETag == "" || in.ModTime.IsZero() {
					t.Errorf("List info incomplete: %+v", in)
				}
				out = append(out, in.Key)
			}
			return out
		}
		all := slices.Clone(keys)
		slices.Sort(all)
		if got := list(""); !slices.Equal(got, all) {
			t.Fatalf("List all = %v, want %v", got, all)
		}
		if got := list("a/"); !slices.Equal(got, []string{"a/1.txt", "a/sub/3.txt"}) {
			t.Fatalf("List a/ = %v", got)
		}
		if got := list("a"); !slices.Equal(got, []string{"a.txt", "a/1.txt", "a/sub/3.txt", "ab/x"}) {
			t.Fatalf("List a = %v", got)
		}
		if got := list("zzz"); len(got) != 0 {
			t.Fatalf("List zzz = %v", got)
		}
		must(t, b.Delete(ctx, "a/sub/3.txt"))
		must(t, b.Delete(ctx, "a/sub/3.txt"))
		if got := list("a/"); !slices.Equal(got, []string{"a/1.txt"}) {
			t.Fatalf("after delete: %v", got)
		}
		checkKind(t, "deleted", rag.KindNotFound, second(b.Stat(ctx, "a/sub/3.txt")))
	})

	t.Run("BadKeys", func(t *testing.T) {
		b := open(t)
		ctx := ctxT(t)
		for _, k := range []string{"", "/abs", "../x", "a/../../x", "a//b", "a/./b", "dir/", "a\x00b", "a\\b", strings.Repeat("k", 1025), "\xff\xfe"} {
			_, err := b.Put(ctx, k, strings.NewReader("x"), "")
			checkKind(t, fmt.Sprintf("put %.30q", k), rag.KindInvalid, err)
			_, _, err = b.Get(ctx, k)
			checkKind(t, fmt.Sprintf("get %.30q", k), rag.KindInvalid, err)
			checkKind(t, fmt.Sprintf("delete %.30q", k), rag.KindInvalid, b.Delete(ctx, k))
		}
		checkKind(t, "list ../", rag.KindInvalid, second(b.List(ctx, "../")))
		if list, _ := b.List(ctx, ""); len(list) != 0 {
			t.Fatalf("rejected keys wrote objects: %v", list)
		}
	})
}
