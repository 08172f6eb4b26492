package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestUploadRSS measures the resident memory of a `docmind serve` process while uploads are in flight:
// a measuring command, not a check (it fails only when the uploads themselves fail). Off unless
// DOCMIND_UPLOAD_RSS is set:
//
//	DOCMIND_UPLOAD_RSS=1 go test -count=1 -run TestUploadRSS -v ./cmd/docmind/
//
// DOCMIND_UPLOAD_RSS_N uploads (default 8) of DOCMIND_UPLOAD_RSS_BYTES each (default 63 MiB, under the
// default 64 MiB limit on the whole body) are sent at once to a freshly started server (default
// settings; --no-demo so the demo's PDF engine is not in the figure). A larger file needs two settings
// raised: DOCMIND_MAX_BODY_BYTES to fit it, and DOCMIND_READ_TIMEOUT (30 s by default, the time the
// whole body may take) to 30 min. DOCMIND_UPLOAD_RSS_BIN measures another
// build of docmind (for example main's, for a before/after in one run). VmRSS is sampled every 20 ms:
// the figures are the idle RSS before, the peak while every upload was in flight, and the peak until the
// last one was answered (the first finished upload's ingestion may start before that).
func TestUploadRSS(t *testing.T) {
	if os.Getenv("DOCMIND_UPLOAD_RSS") == "" {
		t.Skip("a measuring command: set DOCMIND_UPLOAD_RSS=1 (see the comment for its settings)")
	}
	n := rssEnvInt(t, "DOCMIND_UPLOAD_RSS_N", 8)
	size := rssEnvInt(t, "DOCMIND_UPLOAD_RSS_BYTES", 63<<20)
	bin := os.Getenv("DOCMIND_UPLOAD_RSS_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "docmind")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--no-demo", "--addr", addr, "--data", t.TempDir())
	cmd.Env = os.Environ()
	if size > 63<<20 { // the default limit bounds the whole body, multipart framing included
		cmd.Env = append(cmd.Env, "DOCMIND_MAX_BODY_BYTES="+strconv.Itoa(size+1<<20), "DOCMIND_READ_TIMEOUT=30m")
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	base := "http://" + addr
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not start")
		}
	}
	resp, err := http.Post(base+"/api/kbs", "application/json", strings.NewReader(`{"name":"rss"}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create the knowledge base: %v %v", resp, err)
	}
	resp.Body.Close()
	time.Sleep(2 * time.Second)
	idle := procRSS(t, cmd.Process.Pid)

	var peakAll, peakAny atomic.Int64
	var inFlight atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			v := procRSS(t, cmd.Process.Pid)
			if v > peakAny.Load() {
				peakAny.Store(v)
			}
			if inFlight.Load() == int64(n) && v > peakAll.Load() {
				peakAll.Store(v)
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- streamUpload(base, fmt.Sprintf("big%d.txt", i), size, &inFlight)
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	mb := func(kb int64) string { return fmt.Sprintf("%.0f MB", float64(kb)/1000) }
	t.Logf("%d uploads of %d bytes at once in %v: idle %s; peak with all %d in flight %s (%.1f MB per upload over idle); peak until the last was answered %s",
		n, size, took.Round(time.Second), mb(idle), n, mb(peakAll.Load()), float64(peakAll.Load()-idle)/1000/float64(n), mb(peakAny.Load()))
}

// streamUpload sends one multipart file of size bytes, generated as it is sent; inFlight counts the uploads
// whose first file byte has gone and whose answer has not come.
func streamUpload(base, name string, size int, inFlight *atomic.Int64) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", name)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		line := []byte("The device holds forty litres and runs for nine hours on one charge.\n")
		buf := bytes.Repeat(line, 1<<16/len(line)+1)[:1<<16]
		inFlight.Add(1)
		w := bufio.NewWriterSize(fw, 1<<16)
		for left := size; left > 0; {
			k := min(left, len(buf))
			if _, err := w.Write(buf[:k]); err != nil {
				pw.CloseWithError(err)
				return
			}
			left -= k
		}
		w.Flush()
		pw.CloseWithError(mw.Close())
	}()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/api/kbs/rss/documents", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	inFlight.Add(-1)
	if err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("upload %s: %d %s", name, resp.StatusCode, body)
	}
	return nil
}

// procRSS is the process's resident set in kB (VmRSS).
func procRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}

func rssEnvInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
