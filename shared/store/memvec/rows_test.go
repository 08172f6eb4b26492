package memvec

import (
	"slices"
	"testing"
)

// TestSegBlocks fills a segment past several tail blocks on top of a base, then checks every row, the
// spans a scan walks, a truncate at a block's edge and pushes after it.
func TestSegBlocks(t *testing.T) {
	const w = 3000 // 12 KB rows of float32: 64 rows to a 1 MiB block
	s := seg[float32]{w: w, base: make([]float32, 5*w), n: 5}
	rowOf := func(i int) []float32 {
		v := make([]float32, w)
		for d := range v {
			v[d] = float32(i*w + d)
		}
		return v
	}
	for i := range 5 {
		copy(s.row(i), rowOf(i))
	}
	const n = 5 + 64*3 + 7
	for i := 5; i < n; i++ {
		s.push(rowOf(i))
	}
	if s.n != n || len(s.tail) != 4 || 1<<s.shift != 64 {
		t.Fatalf("n %d, %d blocks of %d rows; want %d, 4 of 64", s.n, len(s.tail), 1<<s.shift, n)
	}
	for i := range n {
		if !slices.Equal(s.row(i), rowOf(i)) {
			t.Fatalf("row %d holds %v...", i, s.row(i)[:2])
		}
	}
	// spans cover [0, n) in order, stop at the base's end and at each block's end, and hold the rows
	var ends []int
	for i := 0; i < n; {
		sp, j := s.span(i, min(n, i+100))
		if len(sp) != (j-i)*w || sp[0] != rowOf(i)[0] || sp[len(sp)-1] != rowOf(j - 1)[w-1] {
			t.Fatalf("span [%d, %d) has %d elements or the wrong rows", i, j, len(sp))
		}
		ends, i = append(ends, j), j
	}
	if want := []int{5, 69, 133, 197, n}; !slices.Equal(ends, want) {
		t.Fatalf("spans end at %v, want %v", ends, want)
	}
	// truncating to a block's edge keeps one empty block; pushing again reuses it, then grows
	s.truncate(5 + 64)
	if len(s.tail) != 2 {
		t.Fatalf("after truncate: %d blocks, want 2 (one in use, one spare)", len(s.tail))
	}
	spare := &s.tail[1][0]
	for i := 5 + 64; i < 5+64*2+1; i++ {
		s.push(rowOf(i + 1000))
	}
	if &s.tail[1][0] != spare || len(s.tail) != 3 {
		t.Fatalf("the spare block was not reused, or no block was added: %d blocks", len(s.tail))
	}
	if got := s.row(5 + 64 + 10)[0]; got != rowOf(5 + 64 + 10 + 1000)[0] {
		t.Fatalf("row after re-push holds %v", got)
	}
	// a truncate into the base empties the tail but for one block; a push fills a free base slot first
	s.truncate(3)
	if len(s.tail) != 1 {
		t.Fatalf("after truncate into the base: %d blocks, want 1", len(s.tail))
	}
	s.push(rowOf(77))
	if s.n != 4 || !slices.Equal(s.base[3*w:4*w], rowOf(77)) {
		t.Fatal("push did not reuse the free base slot")
	}
}
