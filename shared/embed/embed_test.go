package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/text"
)

func cos(a, b []float32) float64 {
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d
}

func TestOfflineDeterministicNormalisedAndLexical(t *testing.T) {
	e := NewOffline(256)
	vs, err := e.Embed(context.Background(), []string{"投保年龄为18至60周岁", "投保年龄 60 周岁", "The server shuts down gracefully", "", "投保年龄为18至60周岁"})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d has norm^2 %v", i, n)
		}
	}
	if cos(vs[0], vs[4]) < 0.9999 {
		t.Error("same text, different vectors")
	}
	if cos(vs[0], vs[1]) <= cos(vs[0], vs[2]) {
		t.Errorf("overlapping Chinese texts (%.3f) not closer than unrelated English (%.3f)", cos(vs[0], vs[1]), cos(vs[0], vs[2]))
	}
}

// TestOfflineVectorIsItsDefinition checks the hashing fast path against the definition it replaced:
// features' strings, counted in a map, each hashed with hash/fnv. Vectors stored by earlier versions
// must keep matching the queries embedded by this one.
func TestOfflineVectorIsItsDefinition(t *testing.T) {
	reference := func(dim int, s string) []float32 {
		tf := map[string]int{}
		for _, f := range features(s) {
			tf[f]++
		}
		v := make([]float32, dim)
		for f, n := range tf {
			h := fnv.New64a()
			h.Write([]byte(f))
			x := h.Sum64()
			w := float32(1 + math.Log(float64(n)))
			if x>>63 == 1 {
				w = -w
			}
			v[int(x%uint64(dim))] += w
		}
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if norm == 0 {
			v[0] = 1
			return v
		}
		for i := range v {
			v[i] *= float32(1 / math.Sqrt(norm))
		}
		return v
	}
	texts := []string{"", "  ,.; ", "The server shuts down GRACEFULLY; the server restarts.", "投保年龄为18至60周岁，投保年龄", "Straße ÉCOLE naïve 42x", "混合 mixed 文本text，再来 text 文本", "日本語のテキスト と 한국어 텍스트", strings.Repeat("word ", 50) + "词词词"}
	for _, dim := range []int{7, 256} {
		e := NewOffline(dim)
		got, err := e.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range texts {
			want := reference(dim, s)
			for d := range want {
				if math.Abs(float64(got[i][d]-want[d])) > 1e-6 {
					t.Fatalf("dim %d, %q: component %d is %v, the definition gives %v", dim, s, d, got[i][d], want[d])
				}
			}
		}
	}
}

// fakeAPI is an OpenAI-compatible /embeddings endpoint that fails the first `fail` calls with status.
type fakeAPI struct {
	mu       sync.Mutex
	calls    int
	fail     int
	status   int
	inflight atomic.Int32
	maxIn    atomic.Int32
	dim      int
	sizes    []int
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxIn.Load()
		if n <= m || f.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(5 * time.Millisecond)
	var req struct {
		Input []string `json:"input"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.calls++
	failing := f.calls <= f.fail
	f.sizes = append(f.sizes, len(req.Input))
	f.mu.Unlock()
	if failing {
		w.WriteHeader(f.status)
		fmt.Fprintf(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
		return
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
		Object    string    `json:"object"`
	}
	var data []item
	for i, s := range req.Input {
		v := make([]float32, f.dim)
		v[len(s)%f.dim] = 1
		data = append(data, item{Index: i, Embedding: v, Object: "embedding"})
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m"})
}

func newClient(t *testing.T, f *fakeAPI, slept *[]time.Duration) *OpenAI {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	e, err := NewOpenAI(OpenAIOptions{BaseURL: srv.URL, APIKey: "k", Model: "m", Dim: f.dim, BatchSize: 10, Concurrency: 3,
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*slept = append(*slept, d)
			mu.Unlock()
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestOpenAIRetries429ThenSucceeds(t *testing.T) {
	f := &fakeAPI{fail: 2, status: 429, dim: 8}
	var slept []time.Duration
	e := newClient(t, f, &slept)
	vs, err := e.Embed(context.Background(), []string{"a", "bb", "ccc"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || vs[1][2] != 1 {
		t.Fatalf("vectors out of order: %v", vs)
	}
	if f.calls != 3 || len(slept) != 2 || slept[0] < time.Second || slept[1] < 2*time.Second || slept[1] > 3*time.Second {
		t.Fatalf("calls %d, backoff %v; want 3 calls after 1 s and 2 s (+jitter)", f.calls, slept)
	}
}

func TestOpenAIGivesUpAfterThreeRetries(t *testing.T) {
	f := &fakeAPI{fail: 100, status: 503, dim: 8}
	var slept []time.Duration
	e := newClient(t, f, &slept)
	_, err := e.Embed(context.Background(), []string{"a"})
	if rag.KindOf(err) != rag.KindUnavailable || f.calls != 4 {
		t.Fatalf("err %v (%v), calls %d; want Unavailable after 4 attempts", rag.KindOf(err), err, f.calls)
	}
	if len(slept) != 3 || slept[2] != 4*time.Second {
		t.Fatalf("backoff %v, want 1s 2s 4s", slept)
	}
}

func TestOpenAINoRetryOnBadRequest(t *testing.T) {
	f := &fakeAPI{fail: 100, status: 400, dim: 8}
	var slept []time.Duration
	e := newClient(t, f, &slept)
	_, err := e.Embed(context.Background(), []string{"a"})
	if rag.KindOf(err) != rag.KindInvalid || f.calls != 1 {
		t.Fatalf("400: kind %v, calls %d", rag.KindOf(err), f.calls)
	}
}

func TestOpenAIBatchesAndConcurrency(t *testing.T) {
	f := &fakeAPI{dim: 8}
	var slept []time.Duration
	e := newClient(t, f, &slept)
	texts := make([]string, 95)
	for i := range texts {
		texts[i] = fmt.Sprint(i)
	}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 95 || f.calls != 10 {
		t.Fatalf("%d vectors in %d calls, want 95 in 10", len(vs), f.calls)
	}
	for _, n := range f.sizes {
		if n > 10 {
			t.Fatalf("batch of %d > 10", n)
		}
	}
	if m := f.maxIn.Load(); m > 3 {
		t.Fatalf("%d requests in flight, concurrency is 3", m)
	}
}

// features are the offline embedder's terms as strings (the definition featureHashes hashes): lower-cased Latin/digit words, and for CJK runs each
// character and each overlapping bigram.
func features(s string) []string {
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
