package mysql

import (
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
	"github.com/docmind/docmind/shared/store/storetest"
)

// TestTLSRDS: tls=rds connects to a MySQL-protocol server that requires TLS when its certificate chains
// to a trusted CA (here DOCMIND_MYSQL_CA_FILE's) and names the host; it refuses a certificate from an
// unknown CA and one for another host, and a connection without TLS is refused by the server.
func TestTLSRDS(t *testing.T) {
	ctx := context.Background()
	ca := storetest.NewCA(t)
	good := mysqltest.TLSServer(t, &tls.Config{Certificates: []tls.Certificate{ca.Server(t, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})}})
	caFile := ca.File(t)

	db, err := Open(ctx, "root@tcp("+good+")/?tls=rds", Options{CAFile: caFile}, nil)
	if err != nil {
		t.Fatalf("tls=rds with the server's CA: %v", err)
	}
	var one int
	if err := db.SQL().QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("query over tls=rds: %d, %v", one, err)
	}
	db.Close()

	other := storetest.NewCA(t)
	for _, c := range []struct {
		name, dsn string
		o         Options
		want      string
	}{
		{"unknown CA", "root@tcp(" + good + ")/?tls=rds", Options{CAFile: other.File(t)}, "certificate signed by unknown authority"},
		{"no CA file", "root@tcp(" + good + ")/?tls=rds", Options{}, "certificate signed by unknown authority"},
		// the server requires TLS, so the connections above that worked were encrypted
		{"plain", "root@tcp(" + good + ")/", Options{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.DialTimeout = 5 * time.Second
			_, err := Open(ctx, c.dsn, c.o, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}

	// a certificate for another host name, from the trusted CA
	wrongHost := mysqltest.TLSServer(t, &tls.Config{Certificates: []tls.Certificate{ca.Server(t, []string{"db.example.internal"}, nil)}})
	if _, err := Open(ctx, "root@tcp("+wrongHost+")/?tls=rds", Options{CAFile: caFile, DialTimeout: 5 * time.Second}, nil); err == nil ||
		!strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("certificate for another host: %v, want a host name verification error", err)
	}

	if _, err := Open(ctx, "root@tcp("+good+")/?tls=rds", Options{CAFile: filepath.Join(t.TempDir(), "missing.pem")}, nil); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("missing CA file: %v, want Invalid", err)
	}
}
