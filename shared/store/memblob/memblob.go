// Package memblob is an in-process blob store: the local runner's staging area between ingestion
// stages (on AWS the stages hand over through S3), and a fast store for tests. Contents are lost when
// the process ends.
package memblob

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

var _ store.Blobs = (*Store)(nil)

type object struct {
	data []byte
	info store.BlobInfo
}

// Store is a map of objects guarded by a mutex.
type Store struct {
	mu   sync.RWMutex
	objs map[string]object
	now  func() time.Time
}

// New returns an empty store.
func New() *Store { return &Store{objs: map[string]object{}, now: time.Now} }

// Put implements store.Blobs.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, contentType string) (store.BlobInfo, error) {
	if err := store.ValidateBlobKey(key); err != nil {
		return store.BlobInfo{}, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return store.BlobInfo{}, rag.E("memblob.Put", rag.KindUnavailable, err)
	}
	if err := ctx.Err(); err != nil {
		return store.BlobInfo{}, rag.E("memblob.Put", rag.KindUnavailable, err)
	}
	sum := md5.Sum(data)
	info := store.BlobInfo{Key: key, Size: int64(len(data)), ETag: hex.EncodeToString(sum[:]), ContentType: contentType, ModTime: s.now().UTC()}
	s.mu.Lock()
	s.objs[key] = object{data: data, info: info}
	s.mu.Unlock()
	return info, nil
}

// Get implements store.Blobs.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, store.BlobInfo, error) {
	if err := store.ValidateBlobKey(key); err != nil {
		return nil, store.BlobInfo{}, err
	}
	s.mu.RLock()
	o, ok := s.objs[key]
	s.mu.RUnlock()
	if !ok {
		return nil, store.BlobInfo{}, rag.E("memblob.Get", rag.KindNotFound, nil)
	}
	return io.NopCloser(bytes.NewReader(o.data)), o.info, nil
}

// Stat implements store.Blobs.
func (s *Store) Stat(ctx context.Context, key string) (store.BlobInfo, error) {
	if err := store.ValidateBlobKey(key); err != nil {
		return store.BlobInfo{}, err
	}
	s.mu.RLock()
	o, ok := s.objs[key]
	s.mu.RUnlock()
	if !ok {
		return store.BlobInfo{}, rag.E("memblob.Stat", rag.KindNotFound, nil)
	}
	return o.info, nil
}

// Delete implements store.Blobs.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := store.ValidateBlobKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.objs, key)
	s.mu.Unlock()
	return nil
}

// List implements store.Blobs.
func (s *Store) List(ctx context.Context, prefix string) ([]store.BlobInfo, error) {
	if err := store.ValidateBlobPrefix(prefix); err != nil {
		return nil, err
	}
	s.mu.RLock()
	out := []store.BlobInfo{}
	for k, o := range s.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, o.info)
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
