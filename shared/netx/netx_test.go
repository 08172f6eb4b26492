package netx

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestAllowed(t *testing.T) {
	o := Options{Deny: []netip.Prefix{netip.MustParsePrefix("52.1.0.0/16")}}
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700:4700::1111": true, "52.2.3.4": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "::1": false, "::": false, "fe80::1": false, "fc00::1": false,
		"::ffff:10.0.0.1": false, "::ffff:169.254.169.254": false, "64:ff9b::a9fe:a9fe": false, "224.0.0.1": false,
		"198.18.0.1": false, "240.0.0.1": false, "52.1.9.9": false,
	} {
		if got := o.Allowed(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestClientRefusesPrivateDestinations(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") }))
	defer srv.Close()
	c := NewClient(Options{})
	for _, u := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), "http://[::ffff:127.0.0.1]:1/", "ftp://example.com/", "file:///etc/passwd"} {
		if resp, err := c.Get(u); err == nil || !errors.Is(err, ErrBlocked) {
			if resp != nil {
				resp.Body.Close()
			}
			t.Errorf("GET %s: %v, want ErrBlocked", u, err)
		}
	}
}

func TestClientRedirectsSizeAndProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:9")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fine") })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 2000)) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := NewClient(Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, MaxBytes: 1000, MaxRedirects: 2})
	resp, err := c.Get(srv.URL + "/ok")
	if err != nil {
		t.Fatalf("allowed destination (and the proxy variables must be ignored): %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "fine" {
		t.Fatalf("body %q", b)
	}
	if resp, err := c.Get(srv.URL + "/big"); err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("oversized body: %v", err)
		}
	} else if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized body: %v", err)
	}
	if _, err := c.Get(srv.URL + "/loop"); err == nil || !strings.Contains(err.Error(), "redirects") {
		t.Fatalf("redirect loop: %v", err)
	}
	if _, err := c.Get(srv.URL + "/to-file"); !errors.Is(err, ErrBlocked) {
		t.Fatalf("redirect to file://: %v", err)
	}
}
