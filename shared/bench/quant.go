package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memvec"
)

// Quantised vector scan against the exact float32 scan of the same index, in the same run, at 100k and
// 1M vectors of 1,024 dimensions. The vectors are clustered, not uniform noise: a shared mean direction
// (embedding models' outputs all lean one way), a thousand points per cluster, and per-dimension spreads
// drawn log-normally over two orders of magnitude, so a few dimensions dominate each vector's largest
// component as they do in real embeddings; uniform noise would flatter the per-vector int8 scale.
//
// The index is built through the public path (Upsert, Close: a version 2 snapshot with codes and a recall
// check), then measured in a fresh process (QuantChild) so its resident memory is what a server opening
// that snapshot holds: the int8 codes and metadata, with the float32 rows left on disk behind the map.

// ChildCommand starts this program measuring one snapshot (docmind bench wires itself in); nil measures
// in-process, where the build's heap inflates the resident memory figure.
var ChildCommand func(args ...string) *exec.Cmd

// QuantVector is the "vector-int8" suite.
func QuantVector(ctx context.Context, o Options) ([]Row, error) {
	const dim = 1024
	sizes := []int{100_000, 1_000_000}
	if o.Quick {
		sizes = []int{30_000}
	}
	var rows []Row
	for _, n := range sizes {
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		dir, err := os.MkdirTemp("", "docmind-bench-int8-")
		if err != nil {
			return rows, err
		}
		r, err := quantAt(ctx, dir, n, dim, o)
		os.RemoveAll(dir)
		rows = append(rows, r...)
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// QuantResult is what the child reports.
type QuantResult struct {
	OpenMS       float64   `json:"open_ms"`
	RSSBase      int64     `json:"rss_base"`      // before Open: the program itself
	RSSOpen      int64     `json:"rss_open"`      // after Open
	RSSInt8      int64     `json:"rss_int8"`      // after the int8 queries, before any exact scan
	RSSAnonInt8  int64     `json:"rss_anon_int8"` // of which anonymous (heap)
	RSSExact     int64     `json:"rss_exact"`     // after the exact scans (their pages are file-backed, reclaimable)
	Int8MS       []float64 `json:"int8_ms"`
	ExactMS      []float64 `json:"exact_ms"`
	Recall       float64   `json:"recall"`
	Status       string    `json:"status"`
	SnapshotSize int64     `json:"snapshot_size"`
}

func quantAt(ctx context.Context, dir string, n, dim int, o Options) ([]Row, error) {
	path := filepath.Join(dir, "vectors.bin")
	gen := newClusters(n, dim, uint64(n))
	buildStart := time.Now()
	// rounds of at most 250k rows, each closed into a snapshot: the heap holds one round, not the index
	const round = 250_000
	for lo := 0; lo < n; lo += round {
		ix, err := memvec.OpenWith(path, dim, memvec.Options{Quant: "int8"})
		if err != nil {
			return nil, err
		}
		recs := make([]rag.VectorRecord, 0, 1000)
		for i := lo; i < min(n, lo+round); i++ {
			recs = append(recs, rag.VectorRecord{ID: fmt.Sprintf("v%07d", i), Tenant: "t", KBID: "k", DocumentID: fmt.Sprintf("d%d", i/50), Vector: gen.next()})
			if len(recs) == cap(recs) {
				if err := ix.Upsert(ctx, recs); err != nil {
					ix.Close()
					return nil, err
				}
				recs = recs[:0]
			}
		}
		if err := ix.Upsert(ctx, recs); err != nil {
			ix.Close()
			return nil, err
		}
		if err := ix.Close(); err != nil {
			return nil, err
		}
	}
	build := time.Since(buildStart)
	reps := max(o.Reps, 20)
	args := []string{path, strconv.Itoa(dim), strconv.Itoa(n), strconv.Itoa(reps)}
	var res QuantResult
	if ChildCommand != nil {
		cmd := ChildCommand(args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("measuring child: %w", err)
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return nil, fmt.Errorf("measuring child said %q: %w", out, err)
		}
	} else {
		var err error
		if res, err = MeasureQuant(ctx, args); err != nil {
			return nil, err
		}
	}
	size := fmt.Sprintf("%dk x %d", n/1000, dim)
	if n >= 1_000_000 {
		size = fmt.Sprintf("%dM x %d", n/1_000_000, dim)
	}
	toD := func(ms []float64) []time.Duration {
		out := make([]time.Duration, len(ms))
		for i, m := range ms {
			out[i] = time.Duration(m * 1e6)
		}
		return out
	}
	it, et := toD(res.Int8MS), toD(res.ExactMS)
	speed := PairedSpeedup(it, et)
	gb := func(b int64) float64 { return float64(b) / (1 << 30) }
	where := "fresh process"
	if ChildCommand == nil {
		where = "in-process (build heap included)"
	}
	note := fmt.Sprintf("int8 p50 %.2f ms p99 %.2f ms, exact p50 %.2f ms p99 %.2f ms; clustered vectors; %s", ms(Median(it)), ms(Percentile(it, 0.99)), ms(Median(et)), ms(Percentile(et, 0.99)), res.Status)
	rows := []Row{
		{Suite: "vector-int8", What: "int8 scan + float32 re-score, top-10, " + size + " vs exact float32 scan", Ours: ms(Median(it)), Reference: ms(Median(et)), RefName: "exact float32 scan (same index)",
			Unit: "ms/query", Ratio: speed, Target: ">= 2x", Pass: pass(speed >= 2), Note: note},
		{Suite: "vector-int8", What: "recall@10 of the int8 scan against exact, " + size, Ours: res.Recall, Unit: "recall", Target: ">= 0.99", Pass: pass(res.Recall >= 0.99),
			Note: fmt.Sprintf("%d queries near the clusters, not in the index", len(res.Int8MS))},
		{Suite: "vector-int8", What: "resident memory after open + int8 queries, " + size, Ours: gb(res.RSSInt8), Unit: "GiB", Target: map[bool]string{true: "<= 1.5 GB", false: ""}[n >= 1_000_000],
			Pass: map[bool]*bool{true: pass(float64(res.RSSInt8) <= 1.5e9), false: nil}[n >= 1_000_000],
			Note: fmt.Sprintf("%s; %.2f GiB before open (the program), %.2f GiB after open; anonymous %.2f GiB; %.2f GiB after the exact scans (file pages, reclaimable); snapshot %.2f GiB", where, gb(res.RSSBase), gb(res.RSSOpen), gb(res.RSSAnonInt8), gb(res.RSSExact), gb(res.SnapshotSize))},
		{Suite: "vector-int8", What: "open (start-up) of the snapshot, " + size, Ours: res.OpenMS, Unit: "ms",
			Note: fmt.Sprintf("reads header, metadata and codes; the float32 rows stay on disk; build %.0f s", build.Seconds())},
	}
	return rows, nil
}

// MeasureQuant opens the snapshot at args[0] (dim args[1], rows args[2]) with int8 and times args[3]
// queries each way, interleaved; QuantChild runs it in a fresh process.
func MeasureQuant(ctx context.Context, args []string) (QuantResult, error) {
	var res QuantResult
	if len(args) != 4 {
		return res, fmt.Errorf("want path dim rows reps, got %q", args)
	}
	dim, err1 := strconv.Atoi(args[1])
	n, err2 := strconv.Atoi(args[2])
	reps, err3 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return res, fmt.Errorf("bad arguments %q", args)
	}
	if st, err := os.Stat(args[0]); err == nil {
		res.SnapshotSize = st.Size()
	}
	res.RSSBase, _ = rss()
	start := time.Now()
	ix, err := memvec.OpenWith(args[0], dim, memvec.Options{Quant: "int8"})
	if err != nil {
		return res, err
	}
	defer ix.Close()
	res.OpenMS = ms(time.Since(start))
	res.RSSOpen, _ = rss()
	res.Status = ix.Quant().String()
	gen := newClusters(n, dim, uint64(n)) // same clusters as the build, fresh points
	gen.r = rand.New(rand.NewPCG(uint64(n), 99))
	queries := make([][]float32, reps)
	for i := range queries {
		queries[i] = gen.next()
	}
	f := rag.Filter{Tenant: "t"}
	int8Hits := make([][]rag.Hit, reps)
	for i, q := range queries { // codes paged in: the steady state a server reaches after its first queries
		if int8Hits[i], err = ix.Search(ctx, q, 10, f); err != nil {
			return res, err
		}
	}
	res.RSSInt8, res.RSSAnonInt8 = rss()
	// the exact reference at its best: the whole file in the page cache (read, not mapped), so its scan
	// runs at memory speed instead of waiting on the disk
	if err := warm(args[0]); err != nil {
		return res, err
	}
	i := 0
	var exactHits [][]rag.Hit
	t := Interleave(1, reps, func() {
		ix.Search(ctx, queries[i%reps], 10, f)
	}, func() {
		h, _ := ix.SearchExact(ctx, queries[i%reps], 10, f)
		if len(exactHits) < reps && i > 0 {
			exactHits = append(exactHits, h)
		}
		i++
	})
	res.RSSExact, _ = rss()
	for _, d := range t[0] {
		res.Int8MS = append(res.Int8MS, ms(d))
	}
	for _, d := range t[1] {
		res.ExactMS = append(res.ExactMS, ms(d))
	}
	var found, total int
	for qi, ex := range exactHits { // round 0 is the warm-up: exactHits[qi] answers queries[qi+1]
		got := int8Hits[(qi+1)%reps]
		for _, e := range ex {
			total++
			if slices.ContainsFunc(got, func(h rag.Hit) bool { return h.ID == e.ID }) {
				found++
			}
		}
	}
	if total > 0 {
		res.Recall = float64(found) / float64(total)
	}
	return res, nil
}

func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Read(buf); err != nil {
			return nil // io.EOF, or a read error the scan would meet anyway
		}
	}
}

// rss returns this process's resident set and its anonymous part, in bytes.
func rss() (total, anon int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.Sys), int64(m.Sys)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			total = kb << 10
		case "RssAnon":
			anon = kb << 10
		}
	}
	return total, anon
}

// clusters generates the suite's vectors: mean + centre + noise, each dimension scaled by its spread.
type clusters struct {
	dim     int
	spread  []float64
	mean    []float64
	centres [][]float64
	r       *rand.Rand
}

func newClusters(n, dim int, seed uint64) *clusters {
	r := rand.New(rand.NewPCG(seed, 7))
	c := &clusters{dim: dim, spread: make([]float64, dim), mean: make([]float64, dim), r: r}
	for d := range dim {
		c.spread[d] = math.Exp(r.NormFloat64())
		c.mean[d] = 0.6 * r.NormFloat64()
	}
	c.centres = make([][]float64, max(1, n/1000))
	for i := range c.centres {
		c.centres[i] = make([]float64, dim)
		for d := range dim {
			c.centres[i][d] = r.NormFloat64()
		}
	}
	return c
}

func (c *clusters) next() []float32 {
	ce := c.centres[c.r.IntN(len(c.centres))]
	v := make([]float32, c.dim)
	for d := range v {
		v[d] = float32((c.mean[d] + ce[d] + 0.7*c.r.NormFloat64()) * c.spread[d])
	}
	return v
}
