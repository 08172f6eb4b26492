//go:build !amd64

package memvec

func hammingRows(q, codes []uint64, w int, out []int32) {
	if len(q) < w || len(codes) < len(out)*w {
		panic("memvec: hamming of mismatched lengths")
	}
	hammingRowsGeneric(q, codes, w, out)
}
