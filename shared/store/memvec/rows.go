package memvec

// seg is fixed-width row storage in two parts: a base, usually a private memory map of the snapshot file
// (its pages come from disk when first touched and are never copied onto the heap), and a heap tail for
// rows appended since. The map is private, so writing a base row (an update, or a delete moving the last
// row into the hole) copies that one page onto anonymous memory and never writes the file; the next
// snapshot folds both parts into a new file and maps it again.
type seg[T float32 | int8 | uint64] struct {
	w    int // elements per row
	base []T // rows [0, len(base)/w)
	tail []T // rows from len(base)/w on
	n    int // rows in use
}

func (s *seg[T]) baseRows() int { return len(s.base) / s.w }

// row is row i's storage (capacity clipped, so an append through it cannot reach the next row).
func (s *seg[T]) row(i int) []T {
	if b := s.baseRows(); i < b {
		return s.base[i*s.w : (i+1)*s.w : (i+1)*s.w]
	} else {
		i -= b
	}
	return s.tail[i*s.w : (i+1)*s.w : (i+1)*s.w]
}

// push appends a row, reusing a base slot left free by deletes before growing the tail.
func (s *seg[T]) push(v []T) {
	if s.n < s.baseRows() {
		copy(s.row(s.n), v)
	} else {
		s.tail = append(s.tail, v[:s.w]...)
	}
	s.n++
}

// truncate keeps the first n rows.
func (s *seg[T]) truncate(n int) {
	s.n = n
	s.tail = s.tail[:max(0, n-s.baseRows())*s.w]
}

// reset drops every row and the map's slice (the caller unmaps it).
func (s *seg[T]) reset() { s.base, s.tail, s.n = nil, nil, 0 }
