//go:build !unix

package memvec

import (
	"io"
	"os"
)

const mmapSupported = false

// mapFile reads the whole file where mmap does not exist (the index then lives on the heap).
func mapFile(f *os.File, size int64) ([]byte, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(f, b)
	return b, err
}

func unmap([]byte) error { return nil }

func adviseRandom([]byte, bool) {}

func releasePages([]byte) {}

func willNeed([]byte) {}

const pageSize = 4096
