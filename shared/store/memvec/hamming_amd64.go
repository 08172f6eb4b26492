package memvec

//go:noescape
func hammingRowsAVX2(q []uint64, codes []uint64, w int, out []int32)

// hammingRows writes popcount(q XOR row r) of the consecutive code rows (w words each) into out. On
// amd64 with AVX2 and a row of 4..124 words in steps of 4 (256..7,936 dimensions in steps of 256) it
// runs the assembly kernel, a 32-byte nibble-table popcount (VPSHUFB) with one call per block of rows;
// elsewhere the math/bits loop.
func hammingRows(q, codes []uint64, w int, out []int32) {
	if len(q) < w || len(codes) < len(out)*w {
		panic("memvec: hamming of mismatched lengths")
	}
	if hasAVX2 && w%4 == 0 && w <= 124 {
		hammingRowsAVX2(q, codes, w, out)
		return
	}
	hammingRowsGeneric(q, codes, w, out)
}
