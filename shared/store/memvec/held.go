package memvec

import (
	"errors"
	"fmt"
)

// ErrHeld matches (errors.Is) the error Open returns when another process has the index open, so a
// command can tell its user where the running server is instead of only that the index is busy.
var ErrHeld = errors.New("the vector index is open in another process")

// heldError names the held index; it is ErrHeld.
type heldError struct{ path string }

func (e *heldError) Error() string {
	return fmt.Sprintf("the vector index %s is open in another docmind process (stop it, or drop files into <data>/inbox for the running server to ingest)", e.path)
}

func (e *heldError) Is(target error) bool { return target == ErrHeld }
