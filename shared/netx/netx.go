// Package netx is the one hardened HTTP client for every URL docmind fetches on a user's behalf
// (RELIABILITY.md SR-11): http and https only, the peer address checked at dial time (after DNS, so a
// name that resolves to a private address is refused too), proxy variables ignored, redirects capped and
// re-checked, responses capped in size and time.
package netx

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Options configure a client.
type Options struct {
	Timeout      time.Duration  // whole request, default 15 s
	MaxRedirects int            // default 3
	MaxBytes     int64          // response body cap, default 8 MiB
	Deny         []netip.Prefix // extra ranges to refuse (the VPC CIDRs)
	// Allow lists ranges that are permitted although not global (tests, on-premises services). Empty in
	// production.
	Allow []netip.Prefix
	// AllowHosts lists host names that may be dialled whatever they resolve to (an intranet wiki named
	// in DOCMIND_CONNECTOR_ALLOW_HOSTS): compared with the request's host, case-insensitively, exactly.
	AllowHosts []string
}

// ErrBlocked is returned when a request targets a refused address or scheme.
var ErrBlocked = errors.New("netx: destination not allowed")

// ErrTooLarge is returned when a response body exceeds MaxBytes.
var ErrTooLarge = errors.New("netx: response too large")

// special are non-global ranges that netip's predicates do not cover.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"), netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("100::/64"), netip.MustParsePrefix("2001::/23"),
}

// Allowed reports whether ip may be dialled under o.
func (o Options) Allowed(ip netip.Addr) bool {
	ip = ip.Unmap() // ::ffff:10.0.0.1 is 10.0.0.1
	for _, p := range o.Allow {
		if p.Contains(ip) {
			return true
		}
	}
	if !ip.IsValid() || !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range append(special[:len(special):len(special)], o.Deny...) {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// NewClient returns the hardened client.
func NewClient(o Options) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = 3
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 8 << 20
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !o.Allowed(ap.Addr()) {
			return fmt.Errorf("%w: %s", ErrBlocked, address)
		}
		return nil
	}}
	tr := &http.Transport{
		Proxy:                 nil, // proxy variables are ignored: a proxy would dial on our behalf, unchecked
		DialContext:           o.dial(dialer),
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second,
		MaxIdleConns:          16,
		IdleConnTimeout:       60 * time.Second,
	}
	return &http.Client{
		Timeout:   o.Timeout,
		Transport: capped{tr, o.MaxBytes},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > o.MaxRedirects {
				return fmt.Errorf("netx: more than %d redirects", o.MaxRedirects)
			}
			return checkScheme(req) // the new address is checked again when it is dialled
		},
	}
}

func checkScheme(r *http.Request) error {
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q", ErrBlocked, r.URL.Scheme)
	}
	return nil
}

// capped refuses other schemes and caps response bodies.
type capped struct {
	rt  http.RoundTripper
	max int64
}

func (c capped) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := checkScheme(r); err != nil {
		return nil, err
	}
	resp, err := c.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > c.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, resp.ContentLength)
	}
	resp.Body = &limited{rc: resp.Body, left: c.max}
	return resp, nil
}

type limited struct {
	rc   io.ReadCloser
	left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.rc.Read(one[:]); n > 0 {
			return 0, ErrTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limited) Close() error { return l.rc.Close() }
