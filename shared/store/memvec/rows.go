package memvec

import "unsafe"

// seg is fixed-width row storage in two parts: a base, usually a private memory map of the snapshot file
// (its pages come from disk when first touched and are never copied onto the heap), and a heap tail for
// rows appended since. The map is private, so writing a base row (an update, or a delete moving the last
// row into the hole) copies that one page onto anonymous memory and never writes the file; the next
// snapshot folds both parts into a new file and maps it again.
//
// The tail is a list of blocks of 1<<shift rows (about 1 MiB each), not one slice: a slice grown row by
// row is copied into a larger one each time it fills, and append grows a large slice by a quarter, so a
// tail of 400 MB (100k rows of 1024 dimensions) was copied and its new pages touched about four times
// over while ingestion held the index's lock. A block is allocated once and never moves.
type seg[T float32 | int8 | uint64] struct {
	w     int   // elements per row
	base  []T   // rows [0, len(base)/w)
	tail  [][]T // rows from len(base)/w on, 1<<shift to a block
	shift uint  // set by the first push into the tail
	n     int   // rows in use
}

// blockBytes is the tail's block size: large enough that a scan over a block runs long, small enough
// that a small index does not hold much unused capacity.
const blockBytes = 1 << 20

func (s *seg[T]) baseRows() int { return len(s.base) / s.w }

// row is row i's storage (capacity clipped, so an append through it cannot reach the next row).
func (s *seg[T]) row(i int) []T {
	if b := s.baseRows(); i < b {
		return s.base[i*s.w : (i+1)*s.w : (i+1)*s.w]
	} else {
		i -= b
	}
	blk, j := s.tail[i>>s.shift], i&(1<<s.shift-1)
	return blk[j*s.w : (j+1)*s.w : (j+1)*s.w]
}

// span is the contiguous storage of rows i up to at most j (exclusive), and where it ends: a scan over
// [i, j) walks it span by span (a span never crosses from the base into the tail, nor between blocks).
func (s *seg[T]) span(i, j int) ([]T, int) {
	if b := s.baseRows(); i < b {
		j = min(j, b)
		return s.base[i*s.w : j*s.w], j
	}
	t := i - s.baseRows()
	blk, at := s.tail[t>>s.shift], t&(1<<s.shift-1)
	end := min(j, i+(1<<s.shift)-at)
	return blk[at*s.w : (at+end-i)*s.w], end
}

// push appends a row, reusing a base slot left free by deletes before growing the tail.
func (s *seg[T]) push(v []T) {
	if s.n < s.baseRows() {
		copy(s.row(s.n), v)
		s.n++
		return
	}
	if s.shift == 0 {
		var z T
		for s.shift = 1; (2<<s.shift)*s.w*int(unsafe.Sizeof(z)) <= blockBytes; s.shift++ {
		}
	}
	t := s.n - s.baseRows()
	if t>>s.shift == len(s.tail) {
		s.tail = append(s.tail, make([]T, (1<<s.shift)*s.w))
	}
	copy(s.row(s.n), v[:s.w])
	s.n++
}

// truncate keeps the first n rows. Of the blocks left with no row in use it keeps one, so deletes and
// inserts at a block's edge (a document ingested again) do not allocate a block each time.
func (s *seg[T]) truncate(n int) {
	s.n = n
	if len(s.tail) == 0 {
		return
	}
	used := (max(0, n-s.baseRows()) + 1<<s.shift - 1) >> s.shift
	if len(s.tail) > used+1 {
		clear(s.tail[used+1:])
		s.tail = s.tail[:used+1]
	}
}

// reset drops every row and the map's slice (the caller unmaps it).
func (s *seg[T]) reset() { s.base, s.tail, s.n = nil, nil, 0 }
