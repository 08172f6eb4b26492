package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/llm/llmtest"
)

// BenchmarkChatStreams is RELIABILITY STR-01: N concurrent SSE streams on loopback (200 by default,
// DOCMIND_BENCH_STREAMS to change) against the real server on the demo knowledge base and embedded
// stores, with a fake model streaming 500 tokens 20 ms apart (DOCMIND_BENCH_TOKENS to change; 3 makes a
// burst-only run for profiling). It reports time to first event and to first
// token, docmind's own overhead before the first token (the client's time to first token minus the fake
// model's own, per stream), the p99 gap between tokens, errors, peak RSS and goroutines left after.
//
//	go test ./cmd/docmind -run '^$' -bench ChatStreams -benchtime 1x
func BenchmarkChatStreams(b *testing.B) {
	n := 200
	if v, err := strconv.Atoi(os.Getenv("DOCMIND_BENCH_STREAMS")); err == nil && v > 0 {
		n = v
	}
	tokens, gap := 500, 20*time.Millisecond
	if v, err := strconv.Atoi(os.Getenv("DOCMIND_BENCH_TOKENS")); err == nil && v > 1 {
		tokens = v
	}
	answerText := strings.TrimSpace(strings.Repeat("leave ", tokens-1)) + " [1]."
	fake := llmtest.New(b, func(c llmtest.Call) llmtest.Reply {
		if strings.Contains(c.System(), "You analyse one question") {
			return llmtest.Reply{Content: `{"scope":"KB_QUERY","rewrite":"","intent":"policy","complexity":"simple","specificity":"precise",` +
				`"decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":[]}`}
		}
		if strings.Contains(c.Last(), "Warm-up") {
			return llmtest.Reply{Content: "Twenty days [1]."}
		}
		return llmtest.Reply{Content: answerText, Gap: gap}
	})
	_, base := startServer(b, func(m *Main) {
		c := &m.Config.Chat
		c.Provider, c.BaseURL, c.APIKey, c.MainModel, c.SmallModel = "openai", fake.URL, "sk-test", "main", "small"
		c.CacheEnabled = false
	})
	waitDemo(b, base)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	for b.Loop() {
		// Warm-up: a few short concurrent answers fill the connection pools (the model client keeps idle
		// connections, which are not leaks), then the goroutine baseline is taken.
		var warm sync.WaitGroup
		for i := range 4 {
			warm.Go(func() {
				body := fmt.Sprintf(`{"question":"Warm-up %d: paid annual leave?","kbs":["demo"]}`, i)
				if resp, err := client.Post(base+"/api/chat", "application/json", strings.NewReader(body)); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		warm.Wait()
		fake.Calls()
		time.Sleep(200 * time.Millisecond)
		baseline := runtime.NumGoroutine()
		type result struct {
			start, meta, first, done time.Time
			maxGap                   time.Duration
			gaps                     []time.Duration
			err                      error
		}
		results := make([]result, n)
		stages := map[string][]float64{}
		var stageMu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := &results[i]
				body, _ := json.Marshal(map[string]any{"question": fmt.Sprintf("Stream %d: how many days of paid annual leave do full-time employees get?", i), "kbs": []string{"demo"}})
				r.start = time.Now()
				resp, err := client.Post(base+"/api/chat", "application/json", bytes.NewReader(body))
				if err != nil {
					r.err = err
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				var last time.Time
				name := ""
				for sc.Scan() {
					line := sc.Text()
					if v, ok := strings.CutPrefix(line, "event: "); ok {
						name = v
						continue
					}
					if !strings.HasPrefix(line, "data: ") {
						continue
					}
					now := time.Now()
					switch name {
					case "meta":
						r.meta = now
					case "token":
						if r.first.IsZero() {
							r.first = now
						} else {
							r.gaps = append(r.gaps, now.Sub(last))
						}
						last = now
					case "error":
						r.err = fmt.Errorf("error event: %s", line)
					case "done":
						r.done = now
						var d struct {
							StageMS map[string]int64 `json:"stage_ms"`
						}
						_ = json.Unmarshal([]byte(line[6:]), &d)
						stageMu.Lock()
						for k, v := range d.StageMS {
							stages[k] = append(stages[k], float64(v))
						}
						stageMu.Unlock()
					}
				}
				if r.err == nil && r.done.IsZero() {
					r.err = fmt.Errorf("no done event (%v)", sc.Err())
				}
			})
		}
		wg.Wait()
		// The fake's own time to first token, per stream, from its record of the answer calls.
		own := map[int]time.Duration{}
		for _, c := range fake.Calls() {
			if c.Stream && !c.FirstDelta.IsZero() {
				var i int
				if _, err := fmt.Sscanf(c.Last()[strings.Index(c.Last(), "Stream "):], "Stream %d:", &i); err == nil {
					own[i] = c.FirstDelta.Sub(c.Received)
				}
			}
		}
		var ttfe, ttft, overhead, gaps []float64
		errs := 0
		for i, r := range results {
			if r.err != nil {
				errs++
				b.Logf("stream %d: %v", i, r.err)
				continue
			}
			ttfe = append(ttfe, ms(r.meta.Sub(r.start)))
			ttft = append(ttft, ms(r.first.Sub(r.start)))
			overhead = append(overhead, ms(r.first.Sub(r.start)-own[i]))
			for _, g := range r.gaps {
				gaps = append(gaps, ms(g))
			}
		}
		// Where the time before the first token goes, per pipeline stage (done.stage_ms).
		for _, k := range slices.Sorted(maps.Keys(stages)) {
			b.Logf("stage %-20s p50 %5.0f ms  p99 %5.0f ms", k, pct(stages[k], 0.5), pct(stages[k], 0.99))
		}
		client.CloseIdleConnections()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > baseline+5 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		left := runtime.NumGoroutine() - baseline
		b.ReportMetric(float64(errs), "errors")
		b.ReportMetric(pct(ttfe, 0.50), "ttfe-p50-ms")
		b.ReportMetric(pct(ttfe, 0.99), "ttfe-p99-ms")
		b.ReportMetric(pct(ttft, 0.50), "ttft-p50-ms")
		b.ReportMetric(pct(ttft, 0.95), "ttft-p95-ms")
		b.ReportMetric(pct(ttft, 0.99), "ttft-p99-ms")
		b.ReportMetric(pct(overhead, 0.50), "overhead-p50-ms")
		b.ReportMetric(pct(overhead, 0.99), "overhead-p99-ms")
		b.ReportMetric(pct(gaps, 0.99), "gap-p99-ms")
		b.ReportMetric(float64(left), "goroutines-left")
		b.ReportMetric(peakRSSMiB(), "peak-rss-MiB")
		if errs > 0 || left > 5 {
			b.Fatalf("%d of %d streams failed; %d goroutines left over the baseline", errs, n, left)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1)+0.5)]
}

// peakRSSMiB reads the process's peak resident set (Linux; 0 elsewhere).
func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
