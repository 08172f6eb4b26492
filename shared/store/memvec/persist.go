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

// Persistence is a snapshot plus a write-ahead log. Flush appends the writes since the last Flush to
// <path>.log and syncs it, so a flush costs what changed, not the whole index; when the log grows past
// the snapshot (or 64 MiB) Flush writes a new snapshot and removes the log. Open loads the snapshot and
// replays the log; a torn record at the log's end (a crash mid-append) is dropped.
//
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

// Flush implements store.VectorIndex: it makes every write so far durable. The log append and its
// fsync run outside the index's lock, so searches and writes go on while the disk syncs (ingestion
// flushes once per batch, and a batch's fsync used to stall every search); flushes take turns, so the
// log keeps the order of the writes. Folding the log into the snapshot, when it has grown past the
// snapshot's size, still holds the lock.
func (ix *Index) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return rag.E("memvec.Flush", rag.KindUnavailable, err)
	}
	ix.flushMu.Lock()
	defer ix.flushMu.Unlock()
	ix.mu.Lock()
	snapBytes := int64(ix.snapRows) * int64(ix.dim) * 4
	if ix.path == "" || len(ix.pending) == 0 || ix.logBytes+int64(len(ix.pending)) > max(snapBytes, 64<<20) {
		err := ix.flushLocked(false)
		ix.mu.Unlock()
		if err != nil {
			return rag.E("memvec.Flush", rag.KindUnavailable, err)
		}
		return nil
	}
	buf := ix.pending
	ix.pending = nil
	ix.mu.Unlock()
	err := appendLog(ix.path+".log", buf)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err != nil { // put the records back in front of any written meanwhile, for the next Flush
		ix.pending = append(buf, ix.pending...)
		return rag.E("memvec.Flush", rag.KindUnavailable, err)
	}
	ix.logBytes += int64(len(buf))
	return nil
}

// appendLog appends records to the log file and syncs it.
func appendLog(path string, buf []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (ix *Index) flushLocked(compact bool) error {
	if ix.path == "" || (len(ix.pending) == 0 && !(compact && ix.logBytes > 0)) {
		return nil
	}
	snapBytes := int64(ix.snapRows) * int64(ix.dim) * 4
	if compact || ix.logBytes+int64(len(ix.pending)) > max(snapBytes, 64<<20) {
		if err := ix.save(); err != nil {
			return err
		}
		if err := os.Remove(ix.path + ".log"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		ix.pending, ix.logBytes, ix.snapRows = ix.pending[:0], 0, len(ix.rows)
		return nil
	}
	if err := appendLog(ix.path+".log", ix.pending); err != nil {
		return err
	}
	ix.logBytes += int64(len(ix.pending))
	ix.pending = ix.pending[:0]
	return nil
}

// Close makes everything durable and folds the log into the snapshot, so the next Open is one read.
func (ix *Index) Close() error {
	ix.flushMu.Lock() // a Flush appending outside the lock finishes first
	defer ix.flushMu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	err := ix.flushLocked(true)
	if ix.lock != nil {
		ix.lock.Close() // releases the flock
		ix.lock = nil
	}
	return err
}

// release drops the lock without flushing: what a crashed process leaves behind (tests).
func (ix *Index) release() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.lock != nil {
		ix.lock.Close()
		ix.lock = nil
	}
}

const (
	opUpsert byte = 1
	opDelete byte = 2
)

// log record: op u8 | payload length u32 | payload | crc32 (IEEE) of op and payload
func appendRecord(buf []byte, op byte, payload []byte) []byte {
	crc := crc32.NewIEEE()
	crc.Write([]byte{op})
	crc.Write(payload)
	buf = append(buf, op)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(payload)))
	buf = append(buf, payload...)
	return binary.LittleEndian.AppendUint32(buf, crc.Sum32())
}

func appendUpsert(buf []byte, m metaRow, v []float32) []byte {
	mj, _ := json.Marshal(m)
	payload := binary.LittleEndian.AppendUint32(nil, uint32(len(mj)))
	payload = append(payload, mj...)
	for _, x := range v {
		payload = binary.LittleEndian.AppendUint32(payload, math.Float32bits(x))
	}
	return appendRecord(buf, opUpsert, payload)
}

func appendDelete(buf []byte, tenant, id string) []byte {
	payload := binary.LittleEndian.AppendUint16(nil, uint16(len(tenant)))
	payload = append(payload, tenant...)
	payload = append(payload, id...)
	return appendRecord(buf, opDelete, payload)
}

// replay applies the log; it returns the byte length of the valid prefix.
func (ix *Index) replay(data []byte) int64 {
	off := 0
	for off+9 <= len(data) {
		op := data[off]
		n := int(binary.LittleEndian.Uint32(data[off+1:]))
		if n < 0 || off+5+n+4 > len(data) {
			break
		}
		payload := data[off+5 : off+5+n]
		crc := crc32.NewIEEE()
		crc.Write([]byte{op})
		crc.Write(payload)
		if crc.Sum32() != binary.LittleEndian.Uint32(data[off+5+n:]) {
			break
		}
		switch op {
		case opUpsert:
			if len(payload) < 4 {
				return int64(off)
			}
			ml := int(binary.LittleEndian.Uint32(payload))
			if 4+ml+ix.dim*4 != len(payload) {
				return int64(off)
			}
			var m metaRow
			if json.Unmarshal(payload[4:4+ml], &m) != nil {
				return int64(off)
			}
			v := make([]float32, ix.dim)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(payload[4+ml+i*4:]))
			}
			ix.put(m, v)
		case opDelete:
			if len(payload) < 2 {
				return int64(off)
			}
			tl := int(binary.LittleEndian.Uint16(payload))
			if 2+tl > len(payload) {
				return int64(off)
			}
			if at, ok := ix.byID[key(string(payload[2:2+tl]), string(payload[2+tl:]))]; ok {
				ix.removeAt(at)
			}
		default:
			return int64(off)
		}
		off += 5 + n + 4
	}
	return int64(off)
}

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
		return ix.loadLog() // a log without a snapshot: writes since an empty start
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
		return rag.Errorf(op, rag.KindInternal, "%s: corrupt snapshot: %s (stop docmind, delete it and its .log, then run `docmind reconcile --repair`: every ready document's vectors are re-embedded from its chunk rows in SQL)", ix.path, fmt.Sprintf(format, args...))
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
	if err := ix.fill(meta, data); err != nil {
		return err
	}
	ix.snapRows = len(ix.rows)
	return ix.loadLog()
}

func (ix *Index) loadLog() error {
	data, err := os.ReadFile(ix.path + ".log")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return rag.E("memvec.Open", rag.KindUnavailable, err)
	}
	good := ix.replay(data)
	ix.pending = ix.pending[:0] // replayed deletes must not be logged again
	if good < int64(len(data)) {
		// a torn tail from a crash mid-append: drop it so later appends start on a record boundary
		if err := os.Truncate(ix.path+".log", good); err != nil {
			return rag.E("memvec.Open", rag.KindUnavailable, err)
		}
	}
	ix.logBytes = good
	return nil
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
