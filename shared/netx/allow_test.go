package netx

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestParseAllowList(t *testing.T) {
	p, h, err := ParseAllowList("wiki.corp, 10.0.0.0/8 127.0.0.1,Intranet.Example.")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	if len(p) != 2 || p[0] != want[0] || p[1] != want[1] {
		t.Errorf("prefixes = %v; want %v", p, want)
	}
	if len(h) != 2 || h[0] != "wiki.corp" || h[1] != "intranet.example" {
		t.Errorf("hosts = %v; want wiki.corp, intranet.example", h)
	}
	if _, _, err := ParseAllowList("ok.host, bad_host!, 10.0.0.0/99"); err == nil || !strings.Contains(err.Error(), "bad_host!") ||
		!strings.Contains(err.Error(), "10.0.0.0/99") {
		t.Errorf("bad list error = %v; want both bad entries named", err)
	}
}

// A loopback server is refused by default, reachable when its address is allowed by CIDR, and
// reachable by a listed host name (localhost) but not by another name for the same address.
func TestAllowHostsAndPrefixes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	byName := "http://localhost:" + u.Port() + "/"
	get := func(c *http.Client, target string) error {
		resp, err := c.Get(target)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(NewClient(Options{}), srv.URL); !errors.Is(err, ErrBlocked) {
		t.Fatalf("default client to loopback: %v; want ErrBlocked", err)
	}
	if err := get(NewClient(Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}), srv.URL); err != nil {
		t.Fatalf("allowed by CIDR: %v", err)
	}
	if err := get(NewClient(Options{AllowHosts: []string{"localhost"}}), byName); err != nil {
		t.Fatalf("allowed by host name: %v", err)
	}
	if err := get(NewClient(Options{AllowHosts: []string{"wiki.corp"}}), byName); !errors.Is(err, ErrBlocked) {
		t.Fatalf("another host name listed: %v; want ErrBlocked", err)
	}
}
