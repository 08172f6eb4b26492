// Package inittest measures a function's cold init as a deployment sees it: every store (MySQL, Redis,
// Milvus, Secrets Manager) is a real-protocol server on 127.0.0.1 behind a TCP proxy that adds a fixed
// delay to every round trip, so the figures count round trips, not loopback speed. Tests only.
package inittest

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
)

// DelayProxy forwards TCP connections to target, delivering every chunk rtt/2 after it was read in
// each direction: a request and its reply cost rtt more than on loopback; chunks keep their order and
// a busy connection is not slowed further (latency, not bandwidth).
func DelayProxy(t testing.TB, target string, rtt time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); delayed(up, c, rtt/2) }()
			go func() { defer wg.Done(); delayed(c, up, rtt/2) }()
		}
	}()
	return l.Addr().String()
}

type chunk struct {
	b  []byte
	at time.Time
}

func delayed(dst, src net.Conn, d time.Duration) {
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now().Add(d)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	for range ch {
	}
}

// SecretsManager is an httptest server answering GetSecretValue (the AWS JSON protocol) from secrets.
func SecretsManager(t testing.TB, secrets map[string]string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ SecretId string }
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &in)
		v, ok := secrets[in.SecretId]
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), "GetSecretValue") || !ok {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"__type":"ResourceNotFoundException","message":"no such secret"}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretId, "Name": in.SecretId, "SecretString": v})
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Env starts the stores, each behind a DelayProxy of rtt, sets the process's AWS variables (the SDK
// reads them: credentials, region, the Secrets Manager endpoint) and returns the function environment:
// the MySQL DSN, the Milvus token, the Redis password and a model key all come from secrets, as on AWS.
func Env(t *testing.T, rtt time.Duration) map[string]string {
	t.Helper()
	dsn := mysqltest.Database(t)
	i, j := strings.Index(dsn, "tcp("), strings.Index(dsn, ")")
	dsn = dsn[:i+4] + DelayProxy(t, dsn[i+4:j], rtt) + dsn[j:]
	r := miniredis.RunT(t)
	r.RequireAuth("rpw")
	mv := fakemilvus.StartWithToken(t, "root:Milvus")
	sm := SecretsManager(t, map[string]string{
		"arn:sql":    `{"dsn":"` + dsn + `"}`,
		"arn:redis":  `{"password":"rpw"}`,
		"arn:milvus": `{"token":"root:Milvus"}`,
		"arn:chat":   `{"api_key":"sk-test"}`,
	})
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SECRET")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", "http://"+DelayProxy(t, sm, rtt))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return map[string]string{
		"DOCMIND_SQL_DRIVER": "mysql", "DOCMIND_VECTOR_DRIVER": "milvus", "DOCMIND_KV_DRIVER": "redis", "DOCMIND_BLOB_DRIVER": "s3",
		"DOCMIND_SQL_SECRET_ARN": "arn:sql", "DOCMIND_REDIS_SECRET_ARN": "arn:redis", "DOCMIND_MILVUS_SECRET_ARN": "arn:milvus",
		"DOCMIND_CHAT_API_KEY_SECRET_ARN": "arn:chat", "DOCMIND_EMBED_API_KEY_SECRET_ARN": "arn:chat",
		"DOCMIND_MILVUS_ADDR": DelayProxy(t, mv.Addr(), rtt), "DOCMIND_REDIS_ADDR": DelayProxy(t, r.Addr(), rtt),
		"DOCMIND_S3_BUCKET": "docs", "DOCMIND_TENANT": "acme", "DOCMIND_AUTH": "keys",
		"DOCMIND_INGEST_STATE_MACHINE_ARN": "arn:aws:states:eu-west-1:123456789012:stateMachine:ingest",
	}
}

// Delays are the round-trip delays the figures are reported at.
var Delays = []time.Duration{0, 2 * time.Millisecond, 10 * time.Millisecond}

// Measure starts a function against every store behind a proxy adding each of Delays per round trip
// (secrets from a Secrets Manager endpoint, MySQL, Redis, Milvus) and logs its init time, the figures in
// docs/aws-runtime.md: the median of DOCMIND_INIT_RUNS runs at each delay (by default one run, which
// checks that init works over the delayed stores). Reproduce the figures with
//
//	DOCMIND_INIT_RUNS=9 go test -count=1 -run TestInitFigures -v ./functions/query/ ./functions/api/ ./functions/ingest/
func Measure(t *testing.T, name string, init func(getenv func(string) string) (func(), error)) {
	n, _ := strconv.Atoi(os.Getenv("DOCMIND_INIT_RUNS"))
	n = max(n, 1)
	for _, d := range Delays {
		t.Run(d.String(), func(t *testing.T) {
			env := Env(t, d)
			var took []time.Duration
			for range n {
				start := time.Now()
				closeFn, err := init(func(k string) string { return env[k] })
				took = append(took, time.Since(start))
				if err != nil {
					t.Fatalf("%s init at %v: %v", name, d, err)
				}
				if closeFn != nil {
					closeFn()
				}
			}
			slicesSort(took)
			t.Logf("%s init with %v per round trip: median %v (min %v, max %v, %d runs)", name, d, took[len(took)/2], took[0], took[len(took)-1], n)
		})
	}
}

func slicesSort(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}
