package memvec

//go:noescape
func dotI8AVX2(q []int16, c []int8) int32

var hasAVX2 = hasAVX2FMA

// dotI8 returns the dot product of the int16-widened query q[:len(c)] and the int8 code row c. On amd64
// with AVX2 it runs the assembly kernel (sign-extend 16 codes, multiply-add pairs into 8 int32 lanes);
// the pure Go loop is about four times slower there, which would lose to the float32 assembly scan.
func dotI8(q []int16, c []int8) int32 {
	if len(q) < len(c) {
		panic("memvec: int8 dot of mismatched lengths")
	}
	if hasAVX2 {
		return dotI8AVX2(q, c)
	}
	return dotI8Generic(q, c)
}
