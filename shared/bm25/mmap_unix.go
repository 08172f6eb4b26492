//go:build unix

package bm25

import (
	"os"
	"syscall"
)

// mapRead maps f read-only for decoding: the snapshot's bytes are page cache, not a heap copy as large
// as the file next to the index being built from it.
func mapRead(f *os.File, size int64) ([]byte, func(), error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { syscall.Munmap(b) }, nil
}
