package awsrt

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowSecrets answers after a delay and counts reads in flight and per id.
type slowSecrets struct {
	delay    time.Duration
	vals     map[string]string
	mu       sync.Mutex
	reads    map[string]int
	inFlight atomic.Int32
	peak     atomic.Int32
}

func (s *slowSecrets) SecretString(ctx context.Context, id string) (string, error) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	s.mu.Lock()
	if s.reads == nil {
		s.reads = map[string]int{}
	}
	s.reads[id]++
	s.mu.Unlock()
	time.Sleep(s.delay)
	v, ok := s.vals[id]
	if !ok {
		return "", errors.New("no such secret")
	}
	return v, nil
}

// The secrets of a cold start are read at the same time, and one secret bound to several variables
// (Redis: password, username, tls) is read once.
func TestEnvReadsConcurrentlyOnce(t *testing.T) {
	r := &slowSecrets{delay: 50 * time.Millisecond, vals: map[string]string{
		"arn:sql":   `{"username":"app","password":"pw","host":"db","port":3306}`,
		"arn:redis": `{"username":"docmind","password":"rpw","tls":true}`,
		"arn:chat":  `{"api_key":"sk-1"}`,
	}}
	base := map[string]string{"DOCMIND_SQL_SECRET_ARN": "arn:sql", "DOCMIND_REDIS_SECRET_ARN": "arn:redis", "DOCMIND_CHAT_API_KEY_SECRET_ARN": "arn:chat"}
	getenv, err := Env(context.Background(), func(k string) string { return base[k] }, &Cache{Reader: r}, Bindings())
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"DOCMIND_REDIS_PASSWORD": "rpw", "DOCMIND_REDIS_USERNAME": "docmind", "DOCMIND_REDIS_TLS": "true", "DOCMIND_CHAT_API_KEY": "sk-1"} {
		if got := getenv(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if r.peak.Load() < 2 {
		t.Errorf("at most %d reads in flight at once, want the three secrets read together", r.peak.Load())
	}
	for id, n := range r.reads {
		if n != 1 {
			t.Errorf("secret %s read %d times, want once", id, n)
		}
	}
}

// A plain-string Redis secret is the password alone: no user name, TLS as DOCMIND_REDIS_TLS says.
// A bad tls value is an error naming the variable.
func TestRedisSecretShapes(t *testing.T) {
	for _, c := range []struct {
		secret, user, pass, tls string
		bad                     bool
	}{
		{secret: "plainpw", pass: "plainpw"},
		{secret: `{"password":"p"}`, pass: "p"},
		{secret: `{"auth_token":"t","tls":"true"}`, pass: "t", tls: "true"},
		{secret: `{"username":"u","password":"p","tls":false}`, user: "u", pass: "p", tls: "false"},
		{secret: `{"password":"p","tls":"sometimes"}`, bad: true},
	} {
		r := &slowSecrets{vals: map[string]string{"arn:redis": c.secret}}
		base := map[string]string{"DOCMIND_REDIS_SECRET_ARN": "arn:redis"}
		getenv, err := Env(context.Background(), func(k string) string { return base[k] }, &Cache{Reader: r}, Bindings())
		if c.bad {
			if err == nil {
				t.Errorf("%s: accepted", c.secret)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.secret, err)
		}
		if getenv("DOCMIND_REDIS_USERNAME") != c.user || getenv("DOCMIND_REDIS_PASSWORD") != c.pass || getenv("DOCMIND_REDIS_TLS") != c.tls {
			t.Errorf("%s: user %q pass %q tls %q; want %q %q %q", c.secret, getenv("DOCMIND_REDIS_USERNAME"), getenv("DOCMIND_REDIS_PASSWORD"),
				getenv("DOCMIND_REDIS_TLS"), c.user, c.pass, c.tls)
		}
	}
}

// A failed read is not remembered: the next request reads again.
func TestCacheForgetsFailures(t *testing.T) {
	r := &slowSecrets{vals: map[string]string{}}
	c := &Cache{Reader: r}
	if _, err := c.SecretString(context.Background(), "arn:x"); err == nil {
		t.Fatal("missing secret read")
	}
	r.vals = map[string]string{"arn:x": "v"}
	if v, err := c.SecretString(context.Background(), "arn:x"); err != nil || v != "v" {
		t.Errorf("second read: %q, %v; want v", v, err)
	}
}
