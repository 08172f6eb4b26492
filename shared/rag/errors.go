// Package rag is docmind's vocabulary: the domain types (knowledge bases, documents, chunks, hits, filters,
// answers) and the error kinds every layer classifies failures into. It imports no adapter and no other
// docmind package, so every other package can depend on it.
package rag

import (
	"errors"
	"fmt"
)

// Kind classifies an error by what the caller should do about it. Kinds are translated only at the edges:
// HTTP status codes in the HTTP layer, Lambda errorType names for Step Functions Retry/Catch.
type Kind uint8

const (
	KindUnknown     Kind = iota
	KindInvalid          // the input is wrong; retrying the same input fails again
	KindNotFound         // the thing does not exist (or is outside the caller's tenant: never say which)
	KindConflict         // a uniqueness or version rule refused the write
	KindUnavailable      // a dependency is down or timed out; retrying later may succeed
	KindPermission       // the caller is not allowed to do this
	KindTerminal         // the work can never succeed (a poison document); never retried
	KindInternal         // a bug or an invariant broken on our side
	// KindUnauthenticated: the request carries no valid credential (HTTP 401). Distinct from Permission
	// (a known caller who may not do this).
	KindUnauthenticated
)

var kindNames = [...]string{"Unknown", "Invalid", "NotFound", "Conflict", "Unavailable", "Permission", "Terminal", "Internal", "Unauthenticated"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Error is a classified error: Op names where it happened ("sqlite.GetDocument"), Kind what it means, Err the cause.
type Error struct {
	Op   string
	Kind Kind
	Err  error
}

func (e *Error) Error() string {
	switch {
	case e.Op != "" && e.Err != nil:
		return e.Op + ": " + e.Err.Error()
	case e.Err != nil:
		return e.Err.Error()
	case e.Op != "":
		return e.Op + ": " + e.Kind.String()
	}
	return e.Kind.String()
}

func (e *Error) Unwrap() error { return e.Err }

// E builds a classified error. A nil err with a kind still makes an error (e.g. E(op, KindNotFound, nil)).
func E(op string, kind Kind, err error) error {
	return &Error{Op: op, Kind: kind, Err: err}
}

// Errorf is E with a formatted cause.
func Errorf(op string, kind Kind, format string, args ...any) error {
	return &Error{Op: op, Kind: kind, Err: fmt.Errorf(format, args...)}
}

// KindOf returns the kind of the outermost classified error in err's chain, KindUnknown for an unclassified
// error and for nil. A context deadline or cancellation that nobody classified counts as Unavailable.
func KindOf(err error) Kind {
	if err == nil {
		return KindUnknown
	}
	var e *Error
	for cur := err; errors.As(cur, &e); cur = e.Err {
		if e.Kind != KindUnknown {
			return e.Kind
		}
		if e.Err == nil {
			break
		}
	}
	if isContextErr(err) {
		return KindUnavailable
	}
	return KindUnknown
}

// Is reports whether err is classified as kind.
func Is(err error, kind Kind) bool { return KindOf(err) == kind }
