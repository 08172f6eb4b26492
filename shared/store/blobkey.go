package store

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

// MaxBlobKeyLen is S3's key limit.
const MaxBlobKeyLen = 1024

// ValidateBlobKey enforces the Blobs key rules, identically for every adapter, so a key that works on one
// machine works on S3 and cannot escape a directory adapter's root.
func ValidateBlobKey(key string) error {
	const op = "store.ValidateBlobKey"
	switch {
	case key == "":
		return rag.Errorf(op, rag.KindInvalid, "blob key is empty")
	case len(key) > MaxBlobKeyLen:
		return rag.Errorf(op, rag.KindInvalid, "blob key is longer than %d bytes", MaxBlobKeyLen)
	case !utf8.ValidString(key):
		return rag.Errorf(op, rag.KindInvalid, "blob key is not valid UTF-8")
	case strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/"):
		return rag.Errorf(op, rag.KindInvalid, "blob key %q must not start or end with /", key)
	case strings.ContainsAny(key, "\x00\\"):
		return rag.Errorf(op, rag.KindInvalid, "blob key has a NUL or backslash")
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return rag.Errorf(op, rag.KindInvalid, "blob key %q has an empty, . or .. segment", key)
		}
		for _, r := range seg {
			if r < 0x20 || r == 0x7f {
				return rag.Errorf(op, rag.KindInvalid, "blob key has a control character")
			}
		}
	}
	return nil
}

// ValidateBlobPrefix accepts "" (everything) or a prefix that would be a valid key on its own or when
// followed by a name (a trailing / is allowed).
func ValidateBlobPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := ValidateBlobKey(strings.TrimSuffix(prefix, "/") + "/x"); err != nil {
		return fmt.Errorf("blob prefix %q: %w", prefix, err)
	}
	return nil
}
