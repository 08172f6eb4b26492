package memvec

import "golang.org/x/sys/cpu"

//go:noescape
func dotAVX2(a, b []float32) float32

var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dot returns the dot product of a and b[:len(a)]. On amd64 with AVX2 and FMA it runs the assembly
// kernel (memory-bandwidth bound on a flat scan); elsewhere the portable loop.
func dot(a, b []float32) float32 {
	if len(b) < len(a) {
		panic("memvec: dot of mismatched lengths")
	}
	if hasAVX2FMA {
		return dotAVX2(a, b)
	}
	return dotGeneric(a, b)
}

// Dot exposes the kernel for benchmarks (roofline).
func Dot(a, b []float32) float32 { return dot(a, b) }
