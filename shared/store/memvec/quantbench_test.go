//go:build linux

package memvec

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// BenchmarkQuantSchemes measures the three scans of one index against each other in one run, at 100k
// and 1M vectors of 1,024 dimensions (embeddingLike: clustered, a shared mean direction, log-normal
// per-dimension spreads): latency and CPU per query, throughput as a ratio to the exact float32 scan,
// recall@10 against exact on fresh queries, the fan-out over GOMAXPROCS shards against one shard, and
// resident memory of a fresh process that opens the snapshot and runs binary queries.
//
// The index is built through the public path (OpenWith, Upsert, Close: a version 3 snapshot with both
// codes and the recall check) in $MEMVEC_BENCH_DIR or a temporary directory (at 1M it needs ~11 GB
// free: the 5.3 GB snapshot and its temporary successor), then reopened mapped. The queries are timed
// interleaved, query by query, so load on a shared machine falls on every scheme alike. Run with
// -benchtime 1x: one iteration is the whole measurement.
//
//	nice go test -run '^$' -bench QuantSchemes -benchtime 1x -timeout 2h ./shared/store/memvec
func BenchmarkQuantSchemes(b *testing.B) {
	sizes := []int{100_000, 1_000_000}
	if v, err := strconv.Atoi(os.Getenv("MEMVEC_BENCH_N")); err == nil { // a quick run at another size
		sizes = []int{v}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			for b.Loop() {
				quantSchemesAt(b, n)
			}
		})
	}
}

const benchDim = 1024

func quantSchemesAt(b *testing.B, n int) {
	dir := os.Getenv("MEMVEC_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("quant-%d.bin", n))
	os.Remove(path)
	os.Remove(path + ".log")
	defer os.Remove(path)
	g := newEmbeddingLike(n, benchDim, uint64(n))
	start := time.Now()
	buildSnapshot(b, path, g, n)
	b.Logf("%d x %d: built and snapshotted in %s", n, benchDim, time.Since(start).Round(time.Second))
	debug.FreeOSMemory()

	// resident memory first, in a fresh process, before this one's scans fill the page cache
	mem := residentChild(b, path)

	ix, err := OpenWith(path, benchDim, Options{Quant: "binary"})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	st := ix.Quant()
	b.Logf("status after open: %s", st)
	if st.Use != "binary" {
		b.Fatalf("the recall check did not keep binary: %s", st)
	}
	queries := make([][]float32, 40)
	for i := range queries {
		queries[i] = make([]float32, benchDim)
		g.next(queries[i])
	}
	f := rag.Filter{Tenant: "t"}
	ix.mu.RLock()
	m, _, _ := ix.matcher(f)
	binFactor := ix.binFactor
	ix.mu.RUnlock()
	type scheme struct {
		name string
		run  func(q []float32) []scored
	}
	schemes := []scheme{
		{"exact", func(q []float32) []scored { return ix.searchExact(q, 10, m) }},
		{"int8", func(q []float32) []scored { return ix.searchQuant(q, 10, m, ix.rescore) }},
		{"binary", func(q []float32) []scored { return ix.searchBinary(q, 10, m, binFactor) }},
	}
	for _, q := range queries[:2] { // warm: the exact scan reads the mapped rows into the page cache once
		qn, _ := normalize(q)
		ix.mu.RLock()
		for _, s := range schemes {
			s.run(qn)
		}
		ix.mu.RUnlock()
	}
	lat := map[string][]float64{}
	cpu := map[string]float64{}
	found := map[string]int{}
	for _, q := range queries {
		qn, _ := normalize(q)
		ix.mu.RLock()
		var exact []scored
		for _, s := range schemes {
			c0, t0 := cpuTime(), time.Now()
			got := ix.best(s.run(qn), 10)
			lat[s.name] = append(lat[s.name], float64(time.Since(t0).Microseconds())/1000)
			cpu[s.name] += float64((cpuTime() - c0).Microseconds()) / 1000
			if s.name == "exact" {
				exact = got
			}
			for _, e := range exact {
				if slices.ContainsFunc(got, func(x scored) bool { return x.row == e.row }) {
					found[s.name]++
				}
			}
		}
		ix.mu.RUnlock()
	}
	// the fan-out: binary over GOMAXPROCS shards against one shard, interleaved
	procs := runtime.GOMAXPROCS(0)
	var one, all []float64
	var cpuOne, cpuAll float64
	for _, q := range queries {
		qn, _ := normalize(q)
		ix.mu.RLock()
		for _, p := range []int{1, procs} {
			prev := runtime.GOMAXPROCS(p)
			c0, t0 := cpuTime(), time.Now()
			ix.searchBinary(qn, 10, m, binFactor)
			d, c := float64(time.Since(t0).Microseconds())/1000, float64((cpuTime()-c0).Microseconds())/1000
			runtime.GOMAXPROCS(prev)
			if p == 1 {
				one, cpuOne = append(one, d), cpuOne+c
			} else {
				all, cpuAll = append(all, d), cpuAll+c
			}
		}
		ix.mu.RUnlock()
	}
	nq := float64(len(queries))
	for _, s := range schemes {
		med := median(lat[s.name])
		b.ReportMetric(med, s.name+"-ms/q")
		b.ReportMetric(cpu[s.name]/nq, s.name+"-cpu-ms/q")
		b.ReportMetric(float64(found[s.name])/(10*nq), s.name+"-recall@10")
		b.ReportMetric(median(ratios(lat["exact"], lat[s.name])), s.name+"-x-exact")
	}
	b.ReportMetric(median(ratios(lat["int8"], lat["binary"])), "binary-x-int8")
	b.ReportMetric(median(ratios(one, all)), fmt.Sprintf("binary-%dshards-x-1shard", procs))
	b.ReportMetric(cpuAll/cpuOne, "binary-shards-cpu-ratio")
	b.ReportMetric(float64(mem.RSS)/1e9, "rss-GB")
	b.ReportMetric(float64(mem.Anon)/1e9, "rss-anon-GB")
	load, _ := os.ReadFile("/proc/loadavg")
	b.Logf("%d x %d, GOMAXPROCS %d, binary factor %d, load average %s", n, benchDim, procs, binFactor, strings.TrimSpace(string(load)))
	b.Logf("p50 ms: exact %.2f, int8 %.2f, binary %.2f (1 shard %.2f); cpu ms/q: exact %.2f, int8 %.2f, binary %.2f (1 shard %.2f, %d shards %.2f)",
		median(lat["exact"]), median(lat["int8"]), median(lat["binary"]), median(one), cpu["exact"]/nq, cpu["int8"]/nq, cpu["binary"]/nq, cpuOne/nq, procs, cpuAll/nq)
	b.Logf("resident after open + %d binary queries (fresh process): %.3f GB (anonymous %.3f, program before open %.3f); open %.2f s", mem.Queries, float64(mem.RSS)/1e9, float64(mem.Anon)/1e9, float64(mem.Base)/1e9, mem.OpenSec)
}

// buildSnapshot writes n vectors of g through the public path and closes the index (the snapshot and
// its recall check).
func buildSnapshot(b *testing.B, path string, g *embeddingLike, n int) {
	ix, err := OpenWith(path, benchDim, Options{Quant: "binary", Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const batch = 4096
	vecs := make([]float32, batch*benchDim)
	recs := make([]rag.VectorRecord, 0, batch)
	for i := 0; i < n; i += batch {
		recs = recs[:0]
		for j := range min(batch, n-i) {
			v := vecs[j*benchDim : (j+1)*benchDim]
			g.next(v)
			recs = append(recs, rag.VectorRecord{ID: fmt.Sprintf("c%07d", i+j), Tenant: "t", KBID: "kb", DocumentID: fmt.Sprintf("d%d", (i+j)/8), Vector: v})
		}
		if err := ix.Upsert(ctx, recs); err != nil {
			b.Fatal(err)
		}
		if i+batch < n {
			// Skip the write-ahead log of all but the last batch: Close snapshots every row anyway, and
			// the log's copy of a million vectors would hold 4 GB more on the heap.
			ix.mu.Lock()
			ix.pending = ix.pending[:0]
			ix.mu.Unlock()
		}
	}
	if err := ix.Close(); err != nil {
		b.Fatal(err)
	}
}

type residentResult struct {
	Base, RSS, Anon int64
	OpenSec         float64
	Queries         int
}

// residentChild runs TestResidentChild in a fresh copy of this test binary on the snapshot.
func residentChild(b *testing.B, path string) residentResult {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestResidentChild$", "-test.v")
	cmd.Env = append(os.Environ(), "MEMVEC_RESIDENT_SNAPSHOT="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "RESIDENT "); ok {
			var r residentResult
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				b.Fatal(err)
			}
			return r
		}
	}
	b.Fatalf("child printed no result:\n%s", out)
	return residentResult{}
}

// TestResidentChild is the fresh process of BenchmarkQuantSchemes: open the snapshot binary, run
// queries, print the resident set. Skipped unless the benchmark started it.
func TestResidentChild(t *testing.T) {
	path := os.Getenv("MEMVEC_RESIDENT_SNAPSHOT")
	if path == "" {
		t.Skip("started by BenchmarkQuantSchemes only")
	}
	var r residentResult
	r.Base, _ = residentSet()
	t0 := time.Now()
	ix, err := OpenWith(path, benchDim, Options{Quant: "binary"})
	if err != nil {
		t.Fatal(err)
	}
	r.OpenSec = time.Since(t0).Seconds()
	g := newEmbeddingLike(1000, benchDim, 99)
	q := make([]float32, benchDim)
	for range 40 {
		g.next(q)
		if _, err := ix.Search(context.Background(), q, 10, rag.Filter{Tenant: "t"}); err != nil {
			t.Fatal(err)
		}
		r.Queries++
	}
	runtime.GC()
	r.RSS, r.Anon = residentSet()
	j, _ := json.Marshal(r)
	fmt.Printf("RESIDENT %s\n", j)
	ix.Close()
}

// residentSet returns this process's resident set and its anonymous part, in bytes.
func residentSet() (total, anon int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			total = kb << 10
		case "RssAnon":
			anon = kb << 10
		}
	}
	return total, anon
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// ratios are a[i]/b[i]: how many times faster b's query i ran than a's.
func ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / max(b[i], 1e-6)
	}
	return out
}
