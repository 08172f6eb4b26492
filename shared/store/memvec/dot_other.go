//go:build !amd64

package memvec

// dot returns the dot product of a and b[:len(a)] (portable loop; arm64 Lambdas use this).
func dot(a, b []float32) float32 { return dotGeneric(a, b) }

// Dot exposes the kernel for benchmarks (roofline).
func Dot(a, b []float32) float32 { return dot(a, b) }
