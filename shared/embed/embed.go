// Package embed turns texts into vectors: an offline embedder that needs no model and no network, and
// a client for any OpenAI-compatible embeddings API with batching, bounded concurrency, retries with
// exponential backoff and a shared rate limiter.
package embed

import (
	"context"
	"math"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/text"
)

// Offline is the deterministic local embedder (DESIGN.md section 9): hashed features of lower-cased
// words and CJK character bigrams (and single CJK characters), signed, weighted by 1+log(tf), then
// L2-normalised. It captures lexical overlap only, which is what an offline demo can honestly offer.
type Offline struct{ dim int }

// NewOffline returns an offline embedder of the given dimension.
func NewOffline(dim int) *Offline { return &Offline{dim: dim} }

// Dim is the vector dimension.
func (o *Offline) Dim() int { return o.dim }

// Name identifies the model (stored with the index so a model change is noticed).
func (o *Offline) Name() string { return "offline-hash-v1" }

// Embed implements the embedder; it never fails except on a cancelled context.
func (o *Offline) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = o.vector(t)
	}
	return out, nil
}

// vector hashes each feature of s (featureHashes: FNV-1a of the feature strings, computed as the text is read,
// without building them), counts repeats by sorting the hashes, and adds each feature's signed weight to
// the bucket its hash picks. Ingestion embeds every chunk this way with the offline provider: the
// strings and the count map it used to build were a third of ingestion's allocations.
func (o *Offline) vector(s string) []float32 {
	hs := featureHashes(s)
	slices.Sort(hs)
	v := make([]float32, o.dim)
	for i := 0; i < len(hs); {
		j := i + 1
		for j < len(hs) && hs[j] == hs[i] {
			j++
		}
		x := hs[i]
		w := float32(1 + math.Log(float64(j-i)))
		if x>>63 == 1 {
			w = -w
		}
		v[int(x%uint64(o.dim))] += w
		i = j
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		v[0] = 1 // an empty text still gets a valid unit vector
		return v
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// fnv1a is an FNV-1a 64-bit hash being written (hash/fnv's, without the interface and the allocation).
type fnv1a uint64

const fnvOffset, fnvPrime fnv1a = 14695981039346656037, 1099511628211

func (h fnv1a) bytes(b ...byte) fnv1a {
	for _, c := range b {
		h = (h ^ fnv1a(c)) * fnvPrime
	}
	return h
}

func (h fnv1a) rune(r rune) fnv1a {
	var b [utf8.UTFMax]byte
	return h.bytes(b[:utf8.EncodeRune(b[:], r)]...)
}

// featureHashes is the FNV-1a hash of each of the offline embedder's terms: lower-cased Latin/digit
// words ("w:" + word), and for CJK runs each character ("c:" + it) and each overlapping bigram
// ("b:" + both). embed_test's features builds them as strings, the definition this must equal.
func featureHashes(s string) []uint64 {
	out := make([]uint64, 0, len(s)/4+4)
	word, inWord := fnvOffset.bytes('w', ':'), false
	var prev rune // the CJK run's previous character, or -1
	prev = -1
	for _, r := range s {
		switch {
		case text.IsCJK(r):
			if inWord {
				out, inWord = append(out, uint64(word)), false
			}
			if prev >= 0 {
				out = append(out, uint64(fnvOffset.bytes('b', ':').rune(prev).rune(r)))
			}
			out = append(out, uint64(fnvOffset.bytes('c', ':').rune(r)))
			prev = r
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			prev = -1
			if !inWord {
				word, inWord = fnvOffset.bytes('w', ':'), true
			}
			word = word.rune(unicode.ToLower(r))
		default:
			prev = -1
			if inWord {
				out, inWord = append(out, uint64(word)), false
			}
		}
	}
	if inWord {
		out = append(out, uint64(word))
	}
	return out
}
