// Package fsblob is the embedded blob store: objects are files under <root>/objects/<key>, with a small
// JSON sidecar under <root>/meta/<key>.json holding the content type and ETag. Writes go to a temporary
// file and are renamed into place, so a reader never sees half an object.
//
// One difference from S3 is inherent to a file system: a key cannot be both an object and a "folder" of
// other objects ("a" and "a/b"); such a Put is a Conflict.
package fsblob

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

var _ store.Blobs = (*Store)(nil)

// Store is a directory-backed store.Blobs.
type Store struct {
	objects string
	meta    string
}

type sidecar struct {
	ETag        string `json:"etag"`
	ContentType string `json:"content_type,omitempty"`
}

// New uses (and creates) root.
func New(root string) (*Store, error) {
	s := &Store{objects: filepath.Join(root, "objects"), meta: filepath.Join(root, "meta")}
	for _, d := range []string{s.objects, s.meta} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, rag.E("fsblob.New", rag.KindUnavailable, err)
		}
	}
	return s, nil
}

func (s *Store) paths(key string) (obj, meta string) {
	rel := filepath.FromSlash(key)
	return filepath.Join(s.objects, rel), filepath.Join(s.meta, rel+".json")
}

func classify(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return rag.E(op, rag.KindNotFound, nil)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.EEXIST), errors.Is(err, syscall.ENOTEMPTY):
		return rag.E(op, rag.KindConflict, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return rag.E(op, rag.KindUnavailable, err)
	}
	return rag.E(op, rag.KindUnavailable, err) // disk full, permissions, I/O errors
}

// ctxReader stops a copy when the context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Put implements store.Blobs.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, contentType string) (store.BlobInfo, error) {
	const op = "fsblob.Put"
	if err := store.ValidateBlobKey(key); err != nil {
		return store.BlobInfo{}, err
	}
	obj, meta := s.paths(key)
	if fi, err := os.Stat(obj); err == nil && fi.IsDir() {
		return store.BlobInfo{}, rag.Errorf(op, rag.KindConflict, "key %q is a prefix of other objects", key)
	}
	if err := os.MkdirAll(filepath.Dir(obj), 0o755); err != nil {
		return store.BlobInfo{}, classify(op, err)
	}
	if err := os.MkdirAll(filepath.Dir(meta), 0o755); err != nil {
		return store.BlobInfo{}, classify(op, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(obj), ".put-*")
	if err != nil {
		return store.BlobInfo{}, classify(op, err)
	}
	defer os.Remove(tmp.Name())
	h := md5.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), ctxReader{ctx, r}); err != nil {
		tmp.Close()
		return store.BlobInfo{}, classify(op, err)
	}
	if err := tmp.Close(); err != nil {
		return store.BlobInfo{}, classify(op, err)
	}
	sc := sidecar{ETag: hex.EncodeToString(h.Sum(nil)), ContentType: contentType}
	b, _ := json.Marshal(sc)
	if err := writeAtomic(meta, b); err != nil {
		return store.BlobInfo{}, classify(op, err)
	}
	if err := os.Rename(tmp.Name(), obj); err != nil {
		return store.BlobInfo{}, classify(op, err)
	}
	return s.Stat(ctx, key)
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".meta-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Get implements store.Blobs.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, store.BlobInfo, error) {
	info, err := s.Stat(ctx, key)
	if err != nil {
		return nil, info, err
	}
	obj, _ := s.paths(key)
	f, err := os.Open(obj)
	if err != nil {
		return nil, store.BlobInfo{}, classify("fsblob.Get", err)
	}
	return f, info, nil
}

// Stat implements store.Blobs.
func (s *Store) Stat(ctx context.Context, key string) (store.BlobInfo, error) {
	const op = "fsblob.Stat"
	if err := store.ValidateBlobKey(key); err != nil {
		return store.BlobInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.BlobInfo{}, rag.E(op, rag.KindUnavailable, err)
	}
	obj, meta := s.paths(key)
	fi, err := os.Stat(obj)
	if err != nil {
		return store.BlobInfo{}, classify(op, err)
	}
	if fi.IsDir() {
		return store.BlobInfo{}, rag.E(op, rag.KindNotFound, nil)
	}
	var sc sidecar
	if b, err := os.ReadFile(meta); err == nil {
		json.Unmarshal(b, &sc)
	}
	if sc.ETag == "" { // a file dropped in by hand: compute the ETag
		f, err := os.Open(obj)
		if err != nil {
			return store.BlobInfo{}, classify(op, err)
		}
		h := md5.New()
		io.Copy(h, f)
		f.Close()
		sc.ETag = hex.EncodeToString(h.Sum(nil))
	}
	return store.BlobInfo{Key: key, Size: fi.Size(), ETag: sc.ETag, ContentType: sc.ContentType, ModTime: fi.ModTime().UTC()}, nil
}

// Delete implements store.Blobs; empty parent folders are removed too.
func (s *Store) Delete(ctx context.Context, key string) error {
	const op = "fsblob.Delete"
	if err := store.ValidateBlobKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	obj, meta := s.paths(key)
	if fi, err := os.Stat(obj); err == nil && fi.IsDir() {
		return nil // a "folder" is not an object
	}
	for _, p := range []string{obj, meta} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return classify(op, err)
		}
	}
	for _, base := range []struct{ root, p string }{{s.objects, obj}, {s.meta, meta}} {
		for dir := filepath.Dir(base.p); dir != base.root && strings.HasPrefix(dir, base.root); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break // not empty
			}
		}
	}
	return nil
}

// List implements store.Blobs.
func (s *Store) List(ctx context.Context, prefix string) ([]store.BlobInfo, error) {
	const op = "fsblob.List"
	if err := store.ValidateBlobPrefix(prefix); err != nil {
		return nil, err
	}
	var keys []string
	err := filepath.WalkDir(s.objects, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		rel, _ := filepath.Rel(s.objects, p)
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			// prune folders that cannot contain a match
			if p != s.objects && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".put-") || !strings.HasPrefix(key, prefix) {
			return nil
		}
		keys = append(keys, key)
		return nil
	})
	if err != nil {
		return nil, classify(op, err)
	}
	slices.Sort(keys)
	out := make([]store.BlobInfo, 0, len(keys))
	for _, k := range keys {
		info, err := s.Stat(ctx, k)
		if rag.Is(err, rag.KindNotFound) {
			continue // deleted while listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}
