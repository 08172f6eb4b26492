package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer the server's goroutines may write while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `docmind serve` says where it serves on its first screen, after opening and migrating.
func TestServePrintsWhereItServes(t *testing.T) {
	data := t.TempDir()
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--no-demo", "--no-watch"}, &out, &out, func(string) string { return "" })
	}()
	poll(t, "the serving line", func() bool { return strings.Contains(out.String(), "docmind: serving at http://127.0.0.1:") })
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("serve exit %d:\n%s", code, out.String())
	}
	s := out.String()
	open, ready, serving := strings.Index(s, "docmind: opening the stores under "+data), strings.Index(s, "docmind: database ready ("), strings.Index(s, "docmind: serving at ")
	if open < 0 || ready < open || serving < ready || !strings.Contains(s, "(Ctrl-C stops)") {
		t.Fatalf("progress lines missing or out of order:\n%s", s)
	}
}

// A 401 from the server tells the CLI user which flag or variable carries a key, or that theirs was
// refused; the server's URL file is gone once it stops.
func TestAskServerUnauthorizedSaysHowToSignIn(t *testing.T) {
	m, base := startServer(t, func(m *Main) { m.NoDemo, m.NoWatch, m.Config.Auth.Mode = true, true, "keys" })
	if b, err := os.ReadFile(filepath.Join(m.Config.DataDir, serverURLFile)); err != nil || strings.TrimSpace(string(b)) != base+"/" {
		t.Fatalf("server.url: %q %v", b, err)
	}
	code, _, errOut := runCLI(t, nil, "ask", "--server", base, "q")
	if code != exitConfig || !strings.Contains(errOut, "401") || !strings.Contains(errOut, "--key") || !strings.Contains(errOut, "DOCMIND_API_KEY") {
		t.Fatalf("no key: exit %d: %s", code, errOut)
	}
	code, _, errOut = runCLI(t, map[string]string{"DOCMIND_API_KEY": "dm_notakey"}, "ask", "--server", base, "q")
	if code != exitConfig || !strings.Contains(errOut, "was refused") {
		t.Fatalf("a wrong key: exit %d: %s", code, errOut)
	}
	m.forgetURL()
	if _, err := os.Stat(filepath.Join(m.Config.DataDir, serverURLFile)); !os.IsNotExist(err) {
		t.Fatalf("server.url left behind: %v", err)
	}
}
