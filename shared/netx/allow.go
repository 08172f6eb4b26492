package netx

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// dial checks the peer address at dial time (dialer.Control), except for a host named in AllowHosts,
// which is trusted whatever it resolves to.
func (o Options) dial(checked *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if len(o.AllowHosts) == 0 {
		return checked.DialContext
	}
	open := &net.Dialer{Timeout: checked.Timeout}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err == nil {
			for _, h := range o.AllowHosts {
				if strings.EqualFold(h, host) {
					return open.DialContext(ctx, network, addr)
				}
			}
		}
		return checked.DialContext(ctx, network, addr)
	}
}

// ParseAllowList reads an allow list such as DOCMIND_CONNECTOR_ALLOW_HOSTS: host names and CIDRs (or
// single addresses) separated by commas or spaces. Every bad entry is reported.
func ParseAllowList(s string) (prefixes []netip.Prefix, hosts []string, err error) {
	var bad []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if p, perr := netip.ParsePrefix(f); perr == nil {
			prefixes = append(prefixes, p.Masked())
			continue
		}
		if a, aerr := netip.ParseAddr(f); aerr == nil {
			prefixes = append(prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		if validHost(f) {
			hosts = append(hosts, strings.ToLower(strings.TrimSuffix(f, ".")))
			continue
		}
		bad = append(bad, f)
	}
	if len(bad) > 0 {
		return nil, nil, fmt.Errorf("not a host name, address or CIDR: %s", strings.Join(bad, ", "))
	}
	return prefixes, hosts, nil
}

// validHost accepts a DNS name of letters, digits, hyphens and dots.
func validHost(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
