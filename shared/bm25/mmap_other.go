//go:build !unix

package bm25

import (
	"io"
	"os"
)

// mapRead reads f whole where mapping is not available.
func mapRead(f *os.File, size int64) ([]byte, func(), error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}
