package chunk

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unsafe"
)

// arena hands out the pieces' texts and hashes as substrings of a few large buffers rather than one
// allocation each: a thousand small allocations per document, and the garbage collection they
// triggered, were a sixth of Split. A piece is written at the end of the current block and never
// touched again, so earlier substrings stay valid (strings.Builder's own guarantee); when a piece
// does not fit, a new block starts and the old one lives on as long as its pieces do. The cost is
// that keeping one piece's text keeps its whole block, about the size of the document.
type arena struct {
	b     strings.Builder
	block int // size of a new block
}

func newArena(block int) *arena {
	a := &arena{block: max(block, 4096)}
	a.b.Grow(a.block)
	return a
}

// reserve makes room for n more bytes in the current block, starting a new block when they do not
// fit (growing the builder instead would copy everything written so far).
func (a *arena) reserve(n int) {
	if a.b.Cap()-a.b.Len() >= n {
		return
	}
	a.b = strings.Builder{}
	a.b.Grow(max(n, a.block))
}

// mark is where the next write starts; since returns what was written from a mark on.
func (a *arena) mark() int { return a.b.Len() }

func (a *arena) since(mark int) string { return a.b.String()[mark:] }

// hash is the hex SHA-256 of s, written into the arena.
func (a *arena) hash(s string) string {
	// SHA-256 reads the bytes in place: converting to []byte would copy every chunk and parent once
	// more (a tenth of chunking time), and Sum256 neither keeps nor modifies its input.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	a.reserve(len(h))
	m := a.mark()
	a.b.Write(h[:])
	return a.since(m)
}
