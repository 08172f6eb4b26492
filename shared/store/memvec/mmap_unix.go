//go:build unix

package memvec

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
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

// adviseRandom turns read-ahead off for b (the float32 rows) when random is set, or back to the
// default. The quantised search re-scores a few scattered rows per query; read-ahead would pull their
// neighbours from disk and map them, growing resident memory for nothing. The exact scan reads every row
// in order and wants the default.
func adviseRandom(b []byte, random bool) {
	if len(b) == 0 {
		return
	}
	advice := unix.MADV_NORMAL
	if random {
		advice = unix.MADV_RANDOM
	}
	_ = unix.Madvise(b, advice) // advice only: the index works without it
}

// releasePages drops b's pages from this process's resident set (MADV_DONTNEED; advice only). Only for
// pages never written through the private map: a written page's copy would be lost. The file's pages
// stay in the page cache and are mapped again when touched.
func releasePages(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
	}
}

// willNeed asks the kernel to start reading b's pages from the file now (MADV_WILLNEED; advice only), so
// that many scattered rows are read at once instead of one page fault after another.
func willNeed(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_WILLNEED)
	}
}

var pageSize = os.Getpagesize()
