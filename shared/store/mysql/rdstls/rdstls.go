// Package rdstls is the TLS configuration of MySQL connections to Aurora and RDS: a DSN with tls=rds
// verifies the server's certificate and host name against the RDS certificate bundle embedded at build
// time (rdsca/*.pem, fetched from the AWS trust store; see rdsca/README.md), an operator's CA file
// (DOCMIND_MYSQL_CA_FILE) and the system roots (RDS Proxy presents an Amazon Trust Services certificate,
// which the system roots hold). It imports only the MySQL driver, so every function can link it.
package rdstls

import (
	"crypto/tls"
	"crypto/x509"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Name is the value of the DSN's tls parameter that selects this configuration.
const Name = "rds"

//go:embed rdsca
var bundled embed.FS

// Bundled returns the PEM files embedded from rdsca/ (none when the bundle was not fetched at build).
func Bundled() map[string][]byte {
	out := map[string][]byte{}
	entries, _ := fs.ReadDir(bundled, "rdsca")
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".pem") {
			continue
		}
		if b, err := bundled.ReadFile(path.Join("rdsca", e.Name())); err == nil {
			out[e.Name()] = b
		}
	}
	return out
}

// Roots are the certificates tls=rds trusts: the system pool (empty when the system has none), every
// embedded PEM and caFile's (when not empty). It reports how many PEM sources it added beyond the
// system pool. Errors: a caFile that cannot be read or holds no certificate, an embedded file that
// holds none (a bundle fetched as an HTML error page must fail the start, not every connection).
func Roots(caFile string) (*x509.CertPool, int, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	n := 0
	for name, b := range Bundled() {
		if !pool.AppendCertsFromPEM(b) {
			return nil, 0, fmt.Errorf("embedded RDS bundle %s holds no PEM certificate", name)
		}
		n++
	}
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, 0, fmt.Errorf("DOCMIND_MYSQL_CA_FILE: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, 0, fmt.Errorf("DOCMIND_MYSQL_CA_FILE %s holds no PEM certificate", caFile)
		}
		n++
	}
	return pool, n, nil
}

// Config is the tls.Config of tls=rds: TLS 1.2 or later, certificates verified against Roots(caFile).
// ServerName is left empty: the driver sets it to each DSN's host, so the host name is verified too.
func Config(caFile string) (*tls.Config, error) {
	pool, _, err := Roots(caFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// Register makes tls=rds known to the MySQL driver (its registry is by name and process-wide, so a DSN
// can name it). Call it before parsing a DSN that may name it; calling it again replaces it.
func Register(caFile string) error {
	c, err := Config(caFile)
	if err != nil {
		return err
	}
	return mysql.RegisterTLSConfig(Name, c)
}

// Uses reports whether dsn asks for tls=rds.
func Uses(dsn string) bool {
	i := strings.LastIndex(dsn, "?")
	if i < 0 {
		return false
	}
	for _, kv := range strings.Split(dsn[i+1:], "&") {
		if kv == "tls="+Name {
			return true
		}
	}
	return false
}
