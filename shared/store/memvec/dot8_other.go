//go:build !amd64

package memvec

// dotI8 returns the dot product of q[:len(c)] and the code row c (portable loop; arm64 Lambdas use this).
func dotI8(q []int16, c []int8) int32 { return dotI8Generic(q, c) }
