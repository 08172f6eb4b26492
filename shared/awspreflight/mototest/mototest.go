// Package mototest starts moto_server (the AWS emulator, a Python tool) for a test: on 127.0.0.1, a free
// port, stopped when the test ends; the test skips, saying what to install, when it is missing.
package mototest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// Start runs moto_server and returns its URL. The port is picked free and then handed to moto, so
// another process can take it in between (go test runs packages at once, several of them start
// moto): a moto that exits before it answers is started again on another port, and the answer must
// come while this one runs, not from someone else's.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server is not installed (python3 -m pip install 'moto[server]==5.2.1'; .ci/run does)")
	}
	var last string
	for range 3 {
		url, out, ok := start(t, bin)
		if ok {
			return url
		}
		last = out
	}
	t.Fatalf("moto_server did not start on three ports; it said:\n%s", last)
	return ""
}

// start runs moto on a free port and waits for it to answer: ok false (and what it printed) when it
// exited first; a fatal error when it neither answers nor exits in 30 s.
func start(t testing.TB, bin string) (url, out string, ok bool) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var buf bytes.Buffer
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	probe := &http.Client{Timeout: 2 * time.Second} // the emulator on loopback, not a fetch (netx's rule)
	for i := 0; ; i++ {
		select {
		case <-exited:
			return "", buf.String(), false
		default:
		}
		if r, err := probe.Get(url + "/moto-api/"); err == nil {
			r.Body.Close()
			// a moto that lost the port exits at once; one that answered and still runs owns it
			select {
			case <-exited:
				return "", buf.String(), false
			case <-time.After(200 * time.Millisecond):
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			return url, "", true
		}
		if i == 300 {
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("moto_server did not start in 30 s; it said:\n%s", buf.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
