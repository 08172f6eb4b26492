package rag

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"unicode"
)

// MaxIDLen bounds every id that reaches a store.
const MaxIDLen = 64

// ValidateID accepts 1-64 characters of [A-Za-z0-9_-]. Ids that pass can be placed in SQL, cache keys and
// Milvus filter expressions without quoting problems; everything else is refused at the boundary.
func ValidateID(what, id string) error {
	if id == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%s is longer than %d bytes", what, MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return fmt.Errorf("%s %q has a character outside [A-Za-z0-9_-]", what, truncate(id, 80))
		}
	}
	return nil
}

// ValidateTag accepts 1-64 bytes of printable text without quotes (ASCII, typographic or full-width),
// backslashes or control characters (tags come from headings and front matter, so they may be CJK; the
// chunker strips quote marks before a heading becomes a tag).
func ValidateTag(tag string) error {
	if tag == "" || len(tag) > MaxIDLen {
		return fmt.Errorf("tag must be 1-%d bytes", MaxIDLen)
	}
	for _, r := range tag {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\'' || r == '\\' || r == '`' || r == 0xFFFD ||
			unicode.In(r, unicode.Pi, unicode.Pf) || r == '\uFF02' || r == '\uFF07' || r == '\u201E' || r == '\u201A' {
			return fmt.Errorf("tag %q has a forbidden character", truncate(tag, 80))
		}
	}
	return nil
}

// idBytes is the id alphabet as a table: a metadata filter's restriction validates thousands of ids
// per search leg, and the table is a third of the comparisons' cost.
var idBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	return t
}()

func idByte(c byte) bool { return idBytes[c] }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// NewID returns a random 26-character lowercase hex id with a short prefix naming what it identifies
// ("kb", "doc", "msg", ...).
func NewID(prefix string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the runtime guarantees this never happens
	}
	return prefix + "_" + hex.EncodeToString(b[:])
}

// VectorID derives the deterministic vector id of a child chunk: the same (kb, document, content hash,
// occurrence) always gives the same id, so retries and re-ingests upsert instead of duplicating.
func VectorID(kbID, documentID, contentHash string, occurrence int) string {
	h := sha256.New()
	for _, p := range []string{kbID, documentID, contentHash, strconv.Itoa(occurrence)} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "v" + hex.EncodeToString(h.Sum(nil)[:20]) // 41 characters, fits Milvus VarChar(64)
}

// ValidateIDs validates every id of a list (see ValidateID).
func ValidateIDs(what string, ids []string) error {
	for _, id := range ids {
		if err := ValidateID(what, id); err != nil {
			return err
		}
	}
	return nil
}
