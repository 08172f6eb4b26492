//go:build unix

package memvec

import (
	"os"
	"syscall"
)

const mmapSupported = true

// mapFile maps f privately: pages are read from the file when first touched and count as page cache,
// not heap; writes to them stay in this process (copy-on-write) and never reach the file.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
}

func unmap(b []byte) error {
	if b == nil {
		return nil
	}
	return syscall.Munmap(b)
}
