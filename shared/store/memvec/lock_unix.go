//go:build unix

package memvec

import (
	"errors"
	"os"
	"strings"
	"syscall"

	"github.com/docmind/docmind/shared/rag"
)

// lockFile takes an exclusive, non-blocking lock on path. Two processes appending to one log and
// compacting one snapshot would lose each other's vectors, so the second one is refused.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, rag.E("memvec.Open", rag.KindUnavailable, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, rag.E("memvec.Open", rag.KindConflict, &heldError{strings.TrimSuffix(path, ".lock")})
		}
		return nil, rag.E("memvec.Open", rag.KindUnavailable, err)
	}
	return f, nil
}
