package memvec

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/docmind/docmind/shared/rag"
)

// Snapshot file layout (little endian):
//
//	magic "DMVEC001" | dim uint32 | rows uint64 | metaLen uint64 | meta JSON | rows*dim float32 | crc32 (IEEE) of all before
//
// It is written to a temporary file, synced and renamed over the old one, so a crash leaves either the
// old or the new snapshot, never a torn one.
const magic = "DMVEC001"

type metaRow struct {
	ID     string   `json:"i"`
	Chunk  string   `json:"c,omitempty"`
	Tenant string   `json:"t"`
	KB     string   `json:"k"`
	Doc    string   `json:"d"`
	Tags   []string `json:"g,omitempty"`
}

// Flush implements store.VectorIndex: it writes the snapshot when anything changed since the last one.
func (ix *Index) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return rag.E("memvec.Flush", rag.KindUnavailable, err)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.path == "" || !ix.dirty {
		return nil
	}
	if err := ix.save(); err != nil {
		return rag.E("memvec.Flush", rag.KindUnavailable, err)
	}
	ix.dirty = false
	return nil
}

// Close flushes and releases the index.
func (ix *Index) Close() error { return ix.Flush(context.Background()) }

func (ix *Index) save() error {
	meta := make([]metaRow, len(ix.rows))
	for i, r := range ix.rows {
		m := metaRow{ID: r.id, Chunk: r.chunk, Tenant: ix.names.name(r.tenant), KB: ix.names.name(r.kb), Doc: ix.names.name(r.doc)}
		for _, t := range r.tags {
			m.Tags = append(m.Tags, ix.names.name(t)[len("tag\x00"):])
		}
		meta[i] = m
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(ix.path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(ix.path), ".memvec-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	crc := crc32.NewIEEE()
	w := bufio.NewWriterSize(io.MultiWriter(tmp, crc), 1<<20)
	var hdr [8 + 4 + 8 + 8]byte
	copy(hdr[:], magic)
	binary.LittleEndian.PutUint32(hdr[8:], uint32(ix.dim))
	binary.LittleEndian.PutUint64(hdr[12:], uint64(len(ix.rows)))
	binary.LittleEndian.PutUint64(hdr[20:], uint64(len(mj)))
	w.Write(hdr[:])
	w.Write(mj)
	var buf [4]byte
	for _, x := range ix.data {
		binary.LittleEndian.PutUint32(buf[:], math.Float32bits(x))
		w.Write(buf[:]) // bufio keeps this cheap; errors surface at Flush
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	binary.LittleEndian.PutUint32(buf[:], crc.Sum32())
	if _, err := tmp.Write(buf[:]); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), ix.path)
}

// maxMetaBytes bounds the metadata section read from disk (a corrupt header must not allocate terabytes).
const maxMetaBytes = 4 << 30

func (ix *Index) load() error {
	const op = "memvec.Open"
	f, err := os.Open(ix.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	corrupt := func(format string, args ...any) error {
		return rag.Errorf(op, rag.KindInternal, "%s: corrupt snapshot: %s (delete it and run `docmind reconcile` to rebuild from SQL)", ix.path, fmt.Sprintf(format, args...))
	}
	crc := crc32.NewIEEE()
	br := bufio.NewReaderSize(f, 1<<20)
	r := io.TeeReader(br, crc)
	var hdr [28]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return corrupt("short header")
	}
	if string(hdr[:8]) != magic {
		return corrupt("bad magic")
	}
	dim := int(binary.LittleEndian.Uint32(hdr[8:]))
	n := binary.LittleEndian.Uint64(hdr[12:])
	metaLen := binary.LittleEndian.Uint64(hdr[20:])
	if dim != ix.dim {
		return rag.Errorf(op, rag.KindInvalid, "%s holds %d-dimensional vectors but the index is configured for %d (a changed embedding model needs a re-index)", ix.path, dim, ix.dim)
	}
	want := uint64(len(hdr)) + metaLen + n*uint64(dim)*4 + 4
	if metaLen > maxMetaBytes || n > uint64(st.Size()) || want != uint64(st.Size()) {
		return corrupt("size %d does not match header", st.Size())
	}
	mj := make([]byte, metaLen)
	if _, err := io.ReadFull(r, mj); err != nil {
		return corrupt("short metadata")
	}
	var meta []metaRow
	if err := json.Unmarshal(mj, &meta); err != nil || uint64(len(meta)) != n {
		return corrupt("bad metadata")
	}
	data := make([]float32, n*uint64(dim))
	chunk := make([]byte, 1<<16)
	for i := 0; i < len(data); {
		m := min(len(chunk)/4, len(data)-i)
		if _, err := io.ReadFull(r, chunk[:m*4]); err != nil {
			return corrupt("short vector data")
		}
		for j := range m {
			data[i+j] = math.Float32frombits(binary.LittleEndian.Uint32(chunk[j*4:]))
		}
		i += m
	}
	var trailer [4]byte
	if _, err := io.ReadFull(br, trailer[:]); err != nil || binary.LittleEndian.Uint32(trailer[:]) != crc.Sum32() {
		return corrupt("checksum mismatch")
	}
	return ix.fill(meta, data)
}

func (ix *Index) fill(meta []metaRow, data []float32) error {
	ix.data = data
	ix.rows = make([]row, len(meta))
	for i, m := range meta {
		r := row{id: m.ID, chunk: m.Chunk, tenant: ix.names.id(m.Tenant), kb: ix.names.id(m.KB), doc: ix.names.id(m.Doc)}
		for _, t := range m.Tags {
			r.tags = append(r.tags, ix.names.id("tag\x00"+t))
		}
		ix.rows[i] = r
		ix.byID[key(m.Tenant, m.ID)] = i
	}
	return nil
}
