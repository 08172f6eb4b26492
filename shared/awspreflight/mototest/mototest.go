// Package mototest starts moto_server (the AWS emulator, a Python tool) for a test: on 127.0.0.1, a free
// port, stopped when the test ends; the test skips, saying what to install, when it is missing.
package mototest

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// Start runs moto_server and returns its URL.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server is not installed (python3 -m pip install 'moto[server]==5.2.1'; .ci/run does)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	probe := &http.Client{Timeout: 2 * time.Second} // the emulator on loopback, not a fetch (netx's rule)
	for i := 0; ; i++ {
		if r, err := probe.Get(url + "/moto-api/"); err == nil {
			r.Body.Close()
			return url
		}
		if i == 300 {
			t.Fatal("moto_server did not start in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
