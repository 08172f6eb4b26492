package memvec

// dotI8Generic is the portable int8 kernel: the code row c (int8) against the query widened to int16.
// Eight independent int32 accumulators let the CPU overlap the multiply-adds; re-slicing to fixed
// 8-element windows lets the compiler drop the bounds checks inside the loop. Products are at most
// 127*127, so 1,024 dimensions stay far below int32's range (up to 133,000 dimensions).
func dotI8Generic(q []int16, c []int8) int32 {
	n := len(c)
	q = q[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 int32
	i := 0
	for ; i+8 <= n; i += 8 {
		qq := q[i : i+8 : i+8]
		cc := c[i : i+8 : i+8]
		s0 += int32(qq[0]) * int32(cc[0])
		s1 += int32(qq[1]) * int32(cc[1])
		s2 += int32(qq[2]) * int32(cc[2])
		s3 += int32(qq[3]) * int32(cc[3])
		s4 += int32(qq[4]) * int32(cc[4])
		s5 += int32(qq[5]) * int32(cc[5])
		s6 += int32(qq[6]) * int32(cc[6])
		s7 += int32(qq[7]) * int32(cc[7])
	}
	for ; i < n; i++ {
		s0 += int32(q[i]) * int32(c[i])
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}
