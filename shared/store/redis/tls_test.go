package redis

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/docmind/docmind/shared/store/storetest"
)

// TestTLSAndAuth: against a TLS server that requires a named user's AUTH (ElastiCache Serverless with
// an RBAC user), the adapter works with TLS, the user name and the password, and its server
// certificate verified; without TLS, with a wrong password, or with an untrusted certificate it fails.
func TestTLSAndAuth(t *testing.T) {
	ca := storetest.NewCA(t)
	cert := ca.Server(t, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	m, err := miniredis.RunTLS(&tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.RequireUserAuth("docmind", "s3cret")
	ctx := context.Background()

	c := New(Options{Addr: m.Addr(), Username: "docmind", Password: "s3cret", TLS: true, RootCAs: ca.Pool(), Prefix: "p:"})
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("TLS with the user's AUTH: %v", err)
	}
	if err := c.Set(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Get("p:k"); err != nil || got != "v" {
		t.Errorf("server holds %q, %v; want v", got, err)
	}

	for _, b := range []struct {
		name string
		o    Options
		want string
	}{
		{"wrong password", Options{Username: "docmind", Password: "nope", TLS: true, RootCAs: ca.Pool()}, "WRONGPASS"},
		{"default user", Options{Password: "s3cret", TLS: true, RootCAs: ca.Pool()}, "WRONGPASS"},
		{"untrusted certificate", Options{Username: "docmind", Password: "s3cret", TLS: true}, "certificate"},
		{"no TLS", Options{Username: "docmind", Password: "s3cret"}, ""},
	} {
		t.Run(b.name, func(t *testing.T) {
			b.o.Addr, b.o.MaxRetries = m.Addr(), -1
			bad := New(b.o)
			defer bad.Close()
			err := bad.Ping(ctx)
			if err == nil || !strings.Contains(err.Error(), b.want) {
				t.Errorf("got %v, want an error containing %q", err, b.want)
			}
		})
	}
}
