// Package embed turns texts into vectors: an offline embedder that needs no model and no network, and
// a client for any OpenAI-compatible embeddings API with batching, bounded concurrency, retries with
// exponential backoff and a shared rate limiter.
package embed

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"unicode"

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

func (o *Offline) vector(s string) []float32 {
	tf := map[string]int{}
	for _, f := range Features(s) {
		tf[f]++
	}
	v := make([]float32, o.dim)
	for f, n := range tf {
		h := fnv.New64a()
		h.Write([]byte(f))
		x := h.Sum64()
		w := float32(1 + math.Log(float64(n)))
		if x>>63 == 1 {
			w = -w
		}
		v[int(x%uint64(o.dim))] += w
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

// Features are the offline embedder's terms: lower-cased Latin/digit words, and for CJK runs each
// character and each overlapping bigram.
func Features(s string) []string {
	var out []string
	var word strings.Builder
	var cjk []rune
	flushWord := func() {
		if word.Len() > 0 {
			out = append(out, "w:"+word.String())
			word.Reset()
		}
	}
	flushCJK := func() {
		for i, r := range cjk {
			out = append(out, "c:"+string(r))
			if i+1 < len(cjk) {
				out = append(out, "b:"+string(cjk[i:i+2]))
			}
		}
		cjk = cjk[:0]
	}
	for _, r := range s {
		switch {
		case text.IsCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushCJK()
			word.WriteRune(unicode.ToLower(r))
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
	return out
}
