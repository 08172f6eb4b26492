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
	"slices"

	"github.com/docmind/docmind/shared/rag"
)

// Persistence is a snapshot plus a write-ahead log. Flush appends the writes since the last Flush to
// <path>.log and syncs it, so a flush costs what changed, not the whole index; when the log grows past
// the snapshot (or 64 MiB) Flush writes a new snapshot and removes the log. Open loads the snapshot and
// replays the log; a torn record at the log's end (a crash mid-append) is dropped.
//
// Snapshot file layout, version 3 (little endian; written by every save):
//
//	header, one 4 KiB page: magic "DMVEC003" | dim u32 | rows u64 | flags u32 (1: int8 codes present,
//	  2: binary codes present) | recall f64 (of the last check; NaN if none) | rescore u32 (the setting
//	  it was measured with) | metaLen u64 | crcVectors u32 | crcRest u32 | binFactor u32 (binary
//	  candidates per result the check chose) | mode u32 (the setting the check ran under: 0 none,
//	  1 int8, 2 binary) | use u32 (the path it chose, same numbering) | crcHeader u32 (of the bytes
//	  before it) | depth u32 (the int8 re-score depth the check chose, a multiple of k) | crcDepth u32
//	  (of the header's bytes before it). Builds before depth stop reading at crcHeader and re-score at
//	  the setting; a file without a valid crcDepth (written by them) means the setting.
//	rows*dim float32 vectors, page-aligned so the file maps straight onto []float32
//	[rows*dim int8 codes | padding to 4 bytes | rows float32 scales]   (flag 1)
//	[padding to 8 bytes | rows*ceil(dim/64) uint64 binary codes | dim float32 centre]   (flag 2)
//	metadata: per row uvarint-prefixed id, chunk, tenant, kb, document, uvarint tag count, tags
//
// Version 2 ("DMVEC002") is version 3 without flag 2 and with the header ending at binFactor's offset
// (crcHeader there, of the 52 bytes before it); it still loads, mapped, and the next save writes
// version 3. A binary index opened on a file without binary codes builds them (and checks recall) at
// open and says so.
//
// Open maps the file and reads the header, the codes and the metadata (their checksum, crcRest, is
// verified); the vectors are read by the page when a search touches them, so start-up costs what the
// metadata and codes weigh, not the vectors. crcVectors is checked by Verify, not on Open: that would
// read the whole file. Version 1 files ("DMVEC001": header | meta JSON | vectors | crc32) still load, onto
// the heap, and the next save writes version 2.
//
// A snapshot is written to a temporary file, synced and renamed over the old one, so a crash leaves
// either the old or the new snapshot, never a torn one.
const (
	magic      = "DMVEC001"
	magicV2    = "DMVEC002"
	magicV3    = "DMVEC003"
	headerSize = 4096
	flagCodes  = 1
	flagBits   = 2
)

// modes numbers the quantisation settings in the header.
var modes = []string{"none", "int8", "binary"}

func modeNum(m string) uint32 {
	for i, s := range modes {
		if s == m {
			return uint32(i)
		}
	}
	return 0
}

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
	if len(ix.pending) == 0 && cap(buf) <= reuseLog {
		ix.pending = buf[:0] // the next batch's records go into the same memory
	}
	return nil
}

// reuseLog is the largest pending-record buffer Flush keeps for the next batch (a batch of 32
// documents at 1024 dimensions is about 1.5 MB); a larger one, from a bulk upsert, goes back to the GC.
const reuseLog = 8 << 20

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
	ix.drop()
	if ix.lock != nil {
		ix.lock.Close() // releases the flock
		ix.lock = nil
	}
	return err
}

// drop empties a closed index and unmaps its snapshot: a search that comes late finds nothing rather than
// touching unmapped memory. Caller holds the write lock.
func (ix *Index) drop() {
	if ix.mapped == nil {
		return // an in-memory or heap-loaded index keeps working after Close, as it always did
	}
	unmap(ix.mapped)
	ix.mapped = nil
	ix.vecs.reset()
	ix.codes.reset()
	ix.scales, ix.rows, ix.byID = nil, nil, map[string]int{}
	ix.sp, ix.warm = nil, nil
}

// release drops the lock without flushing: what a crashed process leaves behind (tests).
func (ix *Index) release() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.drop()
	if ix.lock != nil {
		ix.lock.Close()
		ix.lock = nil
	}
}

const (
	opUpsert byte = 1
	opDelete byte = 2
)

// log record: op u8 | payload length u32 | payload | crc32 (IEEE) of op and payload. A record is
// written in place at the end of buf (beginRecord, the payload appended, endRecord): building the
// payload in a buffer of its own and copying it in cost three allocations per vector.
func beginRecord(buf []byte, op byte, size int) ([]byte, int) {
	start := len(buf)
	buf = slices.Grow(buf, 1+4+size+4)
	return append(buf, op, 0, 0, 0, 0), start
}

// endRecord fills in the length and appends the checksum of the record begun at start.
func endRecord(buf []byte, start int) []byte {
	payload := buf[start+5:]
	binary.LittleEndian.PutUint32(buf[start+1:], uint32(len(payload)))
	return binary.LittleEndian.AppendUint32(buf, recordCRC(buf[start], payload))
}

// recordCRC is a log record's checksum: crc32 (IEEE) of its op byte and payload.
func recordCRC(op byte, payload []byte) uint32 {
	return crc32.Update(crc32.ChecksumIEEE([]byte{op}), crc32.IEEETable, payload)
}

func appendUpsert(buf []byte, m metaRow, v []float32) []byte {
	mj, _ := json.Marshal(m)
	buf, start := beginRecord(buf, opUpsert, 4+len(mj)+4*len(v))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(mj)))
	buf = append(buf, mj...)
	for _, x := range v {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
	}
	return endRecord(buf, start)
}

func appendDelete(buf []byte, tenant, id string) []byte {
	buf, start := beginRecord(buf, opDelete, 2+len(tenant)+len(id))
	buf = binary.LittleEndian.AppendUint16(buf, uint16(len(tenant)))
	buf = append(buf, tenant...)
	buf = append(buf, id...)
	return endRecord(buf, start)
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
		if recordCRC(op, payload) != binary.LittleEndian.Uint32(data[off+5+n:]) {
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

// save writes a version 3 snapshot of the index and maps it in place of the old one. It runs the recall
// check first, so the snapshot records whether the quantised scan still holds. Caller holds the write lock.
func (ix *Index) save() error {
	flags := uint32(0)
	if ix.hasCodes() {
		ix.buildCodes()
		flags |= flagCodes
		if ix.opt.Quant == "binary" {
			ix.recentre() // rows added since the last snapshot move the mean
			flags |= flagBits
		}
		ix.checkRecall()
	}
	n := len(ix.rows)
	if err := os.MkdirAll(filepath.Dir(ix.path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(ix.path), ".memvec-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Seek(headerSize, io.SeekStart); err != nil {
		tmp.Close()
		return err
	}
	crcVec, crcRest := crc32.NewIEEE(), crc32.NewIEEE()
	w := bufio.NewWriterSize(io.MultiWriter(tmp, crcVec), 1<<20)
	for i := range n {
		w.Write(float32Bytes(ix.vecs.row(i))) // bufio keeps this cheap; errors surface at Flush
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	w = bufio.NewWriterSize(io.MultiWriter(tmp, crcRest), 1<<20)
	if flags&flagCodes != 0 {
		for i := range n {
			w.Write(int8Bytes(ix.codes.row(i)))
		}
		w.Write(make([]byte, pad4(n*ix.dim)))
		w.Write(float32Bytes(ix.scales[:n]))
	}
	if flags&flagBits != 0 {
		off := headerSize + n*ix.dim*4 + n*ix.dim + pad4(n*ix.dim) + n*4
		w.Write(make([]byte, pad8(off)))
		for i := range n {
			w.Write(uint64Bytes(ix.bits.row(i)))
		}
		w.Write(float32Bytes(ix.centre))
	}
	var metaLen uint64
	var buf []byte
	for i := range ix.rows {
		buf = ix.appendMeta(buf[:0], &ix.rows[i])
		metaLen += uint64(len(buf))
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	hdr := make([]byte, headerSize)
	copy(hdr, magicV3)
	binary.LittleEndian.PutUint32(hdr[8:], uint32(ix.dim))
	binary.LittleEndian.PutUint64(hdr[12:], uint64(n))
	binary.LittleEndian.PutUint32(hdr[20:], flags)
	binary.LittleEndian.PutUint64(hdr[24:], math.Float64bits(ix.recall))
	binary.LittleEndian.PutUint32(hdr[32:], uint32(ix.opt.Rescore))
	binary.LittleEndian.PutUint64(hdr[36:], metaLen)
	binary.LittleEndian.PutUint32(hdr[44:], crcVec.Sum32())
	binary.LittleEndian.PutUint32(hdr[48:], crcRest.Sum32())
	binary.LittleEndian.PutUint32(hdr[52:], uint32(ix.binFactor))
	binary.LittleEndian.PutUint32(hdr[56:], modeNum(ix.opt.Quant))
	binary.LittleEndian.PutUint32(hdr[60:], modeNum(ix.use))
	binary.LittleEndian.PutUint32(hdr[64:], crc32.ChecksumIEEE(hdr[:64]))
	binary.LittleEndian.PutUint32(hdr[68:], uint32(ix.rescore))
	binary.LittleEndian.PutUint32(hdr[72:], crc32.ChecksumIEEE(hdr[:72]))
	if _, err := tmp.WriteAt(hdr, 0); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if ix.useQuant() { // the quantised search touches few rows: do not keep the written ones cached
		dropCache(tmp, headerSize, int64(n)*int64(ix.dim)*4)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), ix.path); err != nil {
		return err
	}
	if ix.remap() {
		ix.maintainSparse(true)
		if ix.sp != nil {
			releasePages(int8Bytes(ix.codes.base)) // a fresh map, never written: the postings hold the codes
		}
	} else {
		ix.maintainSparse(true)
	}
	return nil
}

// remap replaces the storage with a map of the snapshot just written, so the heap tail and the pages
// copied on write are freed, and reports whether it did. The contents are equal, so a failure only
// keeps the old storage (and memory) until the next snapshot. Caller holds the write lock.
func (ix *Index) remap() bool {
	f, err := os.Open(ix.path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := mapFile(f, st.Size())
	if err != nil {
		return false
	}
	l, err := ix.layout(b)
	if err != nil || l.rows != len(ix.rows) || !nativeLE {
		unmap(b)
		return false
	}
	ix.attach(b, l)
	ix.advise()
	return true
}

// attach points the storage at the mapped snapshot b and drops the previous map.
func (ix *Index) attach(b []byte, l layout) {
	old := ix.mapped
	ix.vecs = seg[float32]{w: ix.dim, base: asFloat32(b[headerSize : headerSize+l.rows*ix.dim*4]), n: l.rows}
	if l.codes && ix.hasCodes() {
		ix.codes = seg[int8]{w: ix.dim, base: asInt8(b[l.codesOff : l.codesOff+l.rows*ix.dim]), n: l.rows}
	}
	if l.bits && ix.opt.Quant == "binary" {
		ix.bits = seg[uint64]{w: words(ix.dim), base: asUint64(b[l.bitsOff : l.bitsOff+l.rows*words(ix.dim)*8]), n: l.rows}
		ix.centre = decodeFloat32(b[l.centreOff : l.centreOff+ix.dim*4])
	}
	ix.mapped = b
	ix.warm = make([]uint64, (l.rows+63)/64)
	if old != nil {
		unmap(old)
	}
}

// advise sets the float32 map's read-ahead for the path searches take: off for the quantised search's
// scattered re-scores, on for the exact scan; and the int8 codes' the same way when the binary scan
// re-scores a few of them. Caller holds the write lock.
func (ix *Index) advise() {
	if ix.mapped != nil {
		adviseRandom(float32Bytes(ix.vecs.base), ix.useQuant())
		adviseRandom(int8Bytes(ix.codes.base), ix.scheme() == "binary")
	}
}

// layout is a parsed version 2 or 3 header.
type layout struct {
	version                                                int
	rows, codesOff, scalesOff, bitsOff, centreOff, metaOff int
	codes, bits                                            bool
	recall                                                 float64
	rescore, depth, binFactor                              int    // depth: the int8 re-score depth chosen, 0: rescore
	mode, use                                              string // v3: the check's setting and verdict
	crcRest                                                uint32
}

// layout checks b's version 2 or 3 header against its size and returns where each section starts.
func (ix *Index) layout(b []byte) (layout, error) {
	var l layout
	if len(b) < headerSize || (string(b[:8]) != magicV2 && string(b[:8]) != magicV3) {
		return l, errors.New("bad header")
	}
	l.version, l.mode, l.use = 2, "int8", "int8"
	crcAt := 52
	if string(b[:8]) == magicV3 {
		l.version, crcAt = 3, 64
	}
	if crc32.ChecksumIEEE(b[:crcAt]) != binary.LittleEndian.Uint32(b[crcAt:]) {
		return l, errors.New("header checksum mismatch")
	}
	if l.version == 3 {
		l.binFactor = int(binary.LittleEndian.Uint32(b[52:]))
		mode, use := binary.LittleEndian.Uint32(b[56:]), binary.LittleEndian.Uint32(b[60:])
		if mode >= uint32(len(modes)) || use >= uint32(len(modes)) {
			return l, errors.New("unknown quantisation in header")
		}
		l.mode, l.use = modes[mode], modes[use]
		l.bits = binary.LittleEndian.Uint32(b[20:])&flagBits != 0
	}
	if dim := int(binary.LittleEndian.Uint32(b[8:])); dim != ix.dim {
		return l, errDim{dim}
	}
	rows := binary.LittleEndian.Uint64(b[12:])
	if rows > uint64(len(b))/uint64(ix.dim*4) {
		return l, fmt.Errorf("size %d does not match header", len(b))
	}
	l.rows = int(rows)
	l.codes = binary.LittleEndian.Uint32(b[20:])&flagCodes != 0
	l.recall = math.Float64frombits(binary.LittleEndian.Uint64(b[24:]))
	l.rescore = int(binary.LittleEndian.Uint32(b[32:]))
	if l.version == 3 && crc32.ChecksumIEEE(b[:72]) == binary.LittleEndian.Uint32(b[72:]) {
		l.depth = int(binary.LittleEndian.Uint32(b[68:]))
	}
	metaLen := binary.LittleEndian.Uint64(b[36:])
	l.crcRest = binary.LittleEndian.Uint32(b[48:])
	off := headerSize + l.rows*ix.dim*4
	l.codesOff = off
	if l.codes {
		off += l.rows*ix.dim + pad4(l.rows*ix.dim)
		l.scalesOff = off
		off += l.rows * 4
	}
	if l.bits {
		if !l.codes || l.binFactor < 1 {
			return l, errors.New("binary codes without int8 codes or a candidate factor")
		}
		off += pad8(off)
		l.bitsOff = off
		off += l.rows * words(ix.dim) * 8
		l.centreOff = off
		off += ix.dim * 4
	}
	l.metaOff = off
	if metaLen > uint64(len(b)) || uint64(off)+metaLen != uint64(len(b)) {
		return l, fmt.Errorf("size %d does not match header", len(b))
	}
	return l, nil
}

type errDim struct{ dim int }

func (e errDim) Error() string { return fmt.Sprintf("dimension %d", e.dim) }

func pad4(n int) int { return (4 - n%4) % 4 }

func pad8(n int) int { return (8 - n%8) % 8 }

func (ix *Index) appendMeta(buf []byte, r *row) []byte {
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	str(r.id)
	str(r.chunk)
	str(ix.names.name(r.tenant))
	str(ix.names.name(r.kb))
	str(ix.names.name(r.doc))
	buf = binary.AppendUvarint(buf, uint64(len(r.tags)))
	for _, t := range r.tags {
		str(ix.names.name(t)[len("tag\x00"):])
	}
	return buf
}

// decodeMeta fills rows, ids and names from the metadata section.
func (ix *Index) decodeMeta(b []byte, n int) error {
	off := 0
	str := func() (string, bool) {
		l, k := binary.Uvarint(b[off:])
		if k <= 0 || l > uint64(len(b)-off-k) {
			return "", false
		}
		s := string(b[off+k : off+k+int(l)])
		off += k + int(l)
		return s, true
	}
	ix.rows = make([]row, n)
	for i := range n {
		var m metaRow
		var ok [5]bool
		m.ID, ok[0] = str()
		m.Chunk, ok[1] = str()
		m.Tenant, ok[2] = str()
		m.KB, ok[3] = str()
		m.Doc, ok[4] = str()
		if ok != [5]bool{true, true, true, true, true} {
			return fmt.Errorf("row %d", i)
		}
		nt, k := binary.Uvarint(b[off:])
		if k <= 0 || nt > uint64(len(b)-off) {
			return fmt.Errorf("row %d tags", i)
		}
		off += k
		r := row{id: m.ID, chunk: m.Chunk, tenant: ix.names.id(m.Tenant), kb: ix.names.id(m.KB), doc: ix.names.id(m.Doc)}
		for range nt {
			t, good := str()
			if !good {
				return fmt.Errorf("row %d tags", i)
			}
			r.tags = append(r.tags, ix.names.id("tag\x00"+t))
		}
		ix.rows[i] = r
		ix.byID[key(m.Tenant, m.ID)] = i
	}
	if off != len(b) {
		return errors.New("trailing bytes")
	}
	return nil
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
	var m [8]byte
	if _, err := io.ReadFull(f, m[:]); err == nil && (string(m[:]) == magicV2 || string(m[:]) == magicV3) {
		if err := ix.loadV2(f, st.Size(), corrupt); err != nil {
			return err
		}
		return ix.loadLog()
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
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
	if ix.hasCodes() { // converting a version 1 file is this index's build: quantise and check
		ix.buildCodes()
		ix.checkRecall()
	}
	return ix.loadLog()
}

// loadV2 maps a version 2 or 3 snapshot: the metadata is decoded and the codes checked, the vectors stay on
// disk until a search reads them.
func (ix *Index) loadV2(f *os.File, size int64, corrupt func(string, ...any) error) error {
	b, err := mapFile(f, size)
	if err != nil {
		return rag.E("memvec.Open", rag.KindUnavailable, err)
	}
	fail := func(err error) error {
		unmap(b)
		ix.rows, ix.byID, ix.names = nil, map[string]int{}, newInterner()
		return err
	}
	l, err := ix.layout(b)
	var ed errDim
	if errors.As(err, &ed) {
		return fail(rag.Errorf("memvec.Open", rag.KindInvalid, "%s holds %d-dimensional vectors but the index is configured for %d (a changed embedding model needs a re-index)", ix.path, ed.dim, ix.dim))
	}
	if err != nil {
		return fail(corrupt("%v", err))
	}
	if crc32.ChecksumIEEE(b[l.codesOff:]) != l.crcRest {
		return fail(corrupt("checksum mismatch"))
	}
	if err := ix.decodeMeta(b[l.metaOff:], l.rows); err != nil {
		return fail(corrupt("bad metadata: %v", err))
	}
	if !nativeLE { // a big-endian machine decodes onto the heap
		ix.vecs = seg[float32]{w: ix.dim}
		for i := range l.rows {
			ix.vecs.push(decodeFloat32(b[headerSize+i*ix.dim*4 : headerSize+(i+1)*ix.dim*4]))
		}
		unmap(b)
	} else {
		ix.attach(b, l)
	}
	if l.codes && ix.hasCodes() {
		ix.scales = decodeFloat32(b[l.scalesOff : l.scalesOff+l.rows*4])
		if !nativeLE {
			for i := range l.rows {
				ix.codes.push(asInt8(b[l.codesOff+i*ix.dim : l.codesOff+(i+1)*ix.dim]))
			}
		}
	}
	if l.bits && ix.opt.Quant == "binary" && !nativeLE {
		w := words(ix.dim)
		ix.bits = seg[uint64]{w: w}
		for i := range l.rows {
			ix.bits.push(decodeUint64(b[l.bitsOff+i*w*8 : l.bitsOff+(i+1)*w*8]))
		}
		ix.centre = decodeFloat32(b[l.centreOff : l.centreOff+ix.dim*4])
	}
	switch {
	case !ix.hasCodes():
	case !l.codes || (ix.opt.Quant == "binary" && !l.bits):
		// switched to a quantised scan since the last save, or a version 2 file opened binary: build the
		// codes and check now; the next snapshot stores them
		if ix.opt.Logf != nil {
			ix.opt.Logf("memvec: %s (snapshot version %d) has no %s codes: building them for %d rows and checking recall now; the next snapshot stores them", ix.path, l.version, ix.opt.Quant, l.rows)
		}
		ix.buildCodes()
		ix.checkRecall()
	case l.mode == ix.opt.Quant && l.rescore == ix.opt.Rescore:
		// measured with these settings; otherwise unknown (the setting is trusted) until the next save
		if l.version == 2 && !math.IsNaN(l.recall) && l.recall < ix.opt.MinRecall {
			l.use = "none"
		}
		ix.recall, ix.use = l.recall, l.use
		if l.use == "int8" && l.depth > 0 && l.depth <= ix.opt.Rescore {
			ix.rescore = l.depth
		}
		if l.bits {
			ix.binFactor = l.binFactor
		}
		if ix.use != ix.opt.Quant && ix.opt.Logf != nil {
			ix.opt.Logf("memvec: %s: the last recall check chose %s over %s (recall@10 %.3f, minimum %.2f; DOCMIND_VECTOR_RESCORE or DOCMIND_VECTOR_QUANT=none change it)", ix.path, ix.use, ix.opt.Quant, l.recall, ix.opt.MinRecall)
		}
	}
	ix.maintainSparse(true)
	if ix.mapped != nil && (ix.scheme() == "binary" || ix.sp != nil) {
		// The checksum read every int8 code through the map (and the postings' build, sparse.go); the
		// binary scan re-scores a few of them per query and the postings hold the rest, so let them go
		// from this process (they stay in the page cache).
		releasePages(int8Bytes(ix.codes.base))
	}
	ix.snapRows = l.rows
	ix.advise()
	return nil
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
	ix.vecs = seg[float32]{w: ix.dim, base: data, n: len(meta)} // heap memory as the base: written in place
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
