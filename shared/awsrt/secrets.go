package awsrt

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/docmind/docmind/shared/rag"
)

// SecretReader returns the string value of one secret. It must be safe for concurrent use (Env reads
// several secrets at once).
type SecretReader interface {
	SecretString(ctx context.Context, id string) (string, error)
}

// SecretsManager reads secrets with the Secrets Manager API.
type SecretsManager struct {
	Client interface {
		GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	}
}

// SecretString implements SecretReader. The error never includes the value; Unavailable for any API
// failure (a missing permission shows in the message, which names the secret, never its content).
func (m SecretsManager) SecretString(ctx context.Context, id string) (string, error) {
	out, err := m.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return "", rag.E("awsrt.SecretString", rag.KindUnavailable, fmt.Errorf("read secret %s: %w", id, err))
	}
	if out.SecretString == nil {
		return "", rag.Errorf("awsrt.SecretString", rag.KindInvalid, "secret %s has no string value", id)
	}
	return *out.SecretString, nil
}

// Cache remembers each secret for the life of the process: a Lambda reads a secret once per cold start,
// not once per invocation (a GetSecretValue costs latency and money, and throttles at scale). Callers
// asking for different secrets read them at the same time; callers asking for one being read wait for
// that read instead of starting another.
type Cache struct {
	Reader SecretReader
	mu     sync.Mutex
	vals   map[string]*secretRead
}

// secretRead is one secret's read: done closes when val and err are set.
type secretRead struct {
	done chan struct{}
	val  string
	err  error
}

// SecretString implements SecretReader, reading through to Reader on the first request only (a failed
// read is not remembered: the next request reads again).
func (c *Cache) SecretString(ctx context.Context, id string) (string, error) {
	c.mu.Lock()
	if c.vals == nil {
		c.vals = map[string]*secretRead{}
	}
	r, ok := c.vals[id]
	if !ok {
		r = &secretRead{done: make(chan struct{})}
		c.vals[id] = r
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-r.done:
			if r.err == nil {
				return r.val, nil
			}
			return c.retry(ctx, id, r)
		case <-ctx.Done():
			return "", rag.E("awsrt.SecretString", rag.KindUnavailable, ctx.Err())
		}
	}
	r.val, r.err = c.Reader.SecretString(ctx, id)
	close(r.done)
	return r.val, r.err
}

// retry forgets a failed read (unless another caller already did) and reads again.
func (c *Cache) retry(ctx context.Context, id string, failed *secretRead) (string, error) {
	c.mu.Lock()
	if c.vals[id] == failed {
		delete(c.vals, id)
	}
	c.mu.Unlock()
	return c.SecretString(ctx, id)
}

// Binding says which configuration variable a secret fills.
type Binding struct {
	ARNVar string // the variable that names the secret, e.g. DOCMIND_SQL_SECRET_ARN
	Var    string // the variable it fills, e.g. DOCMIND_SQL_DSN
	// Decode turns the secret string into the value; nil takes a plain string as is, or the first of
	// Fields present in a JSON object.
	Decode func(secret string) (string, error)
	Fields []string
	// Optional leaves Var unset when the secret is a plain string or a JSON object without any of
	// Fields (the Redis secret's username and tls), instead of failing.
	Optional bool
}

// Bindings are the secrets docmind's functions read: the Aurora DSN, the Milvus token, the model and web
// search API keys and the Redis password. A variable that is set directly wins over its secret.
func Bindings() []Binding {
	return []Binding{
		{ARNVar: "DOCMIND_SQL_SECRET_ARN", Var: "DOCMIND_SQL_DSN", Decode: MySQLDSN},
		{ARNVar: "DOCMIND_MILVUS_SECRET_ARN", Var: "DOCMIND_MILVUS_TOKEN", Fields: []string{"token", "api_key", "apiKey"}},
		{ARNVar: "DOCMIND_EMBED_API_KEY_SECRET_ARN", Var: "DOCMIND_EMBED_API_KEY", Fields: []string{"api_key", "apiKey", "key"}},
		{ARNVar: "DOCMIND_CHAT_API_KEY_SECRET_ARN", Var: "DOCMIND_CHAT_API_KEY", Fields: []string{"api_key", "apiKey", "key"}},
		{ARNVar: "DOCMIND_RERANK_API_KEY_SECRET_ARN", Var: "DOCMIND_RERANK_API_KEY", Fields: []string{"api_key", "apiKey", "key"}},
		{ARNVar: "DOCMIND_WEB_SEARCH_API_KEY_SECRET_ARN", Var: "DOCMIND_WEB_SEARCH_API_KEY", Fields: []string{"api_key", "apiKey", "key"}},
		{ARNVar: "DOCMIND_REDIS_SECRET_ARN", Var: "DOCMIND_REDIS_PASSWORD", Fields: []string{"password", "auth_token"}},
		// ElastiCache RBAC users (Valkey/Redis 7 and Serverless) log in with a user name; Serverless
		// accepts TLS connections only, so a secret may say tls true
		{ARNVar: "DOCMIND_REDIS_SECRET_ARN", Var: "DOCMIND_REDIS_USERNAME", Fields: []string{"username", "user"}, Optional: true},
		{ARNVar: "DOCMIND_REDIS_SECRET_ARN", Var: "DOCMIND_REDIS_TLS", Decode: redisTLS, Optional: true},
		// the agentic loop's MCP servers, whose headers carry credentials: the whole JSON array in a
		// secret, so no token sits in the function's environment (docs/mcp.md)
		{ARNVar: "DOCMIND_MCP_SERVERS_SECRET_ARN", Var: "DOCMIND_MCP_SERVERS", Decode: jsonArray},
	}
}

// Env resolves every binding whose ARN variable is set and whose target variable is not, and returns a
// getenv that serves the resolved values over base. The secrets are read at the same time (through r,
// which should be a Cache, so a secret bound to several variables is read once): a cold start waits for
// the slowest read, not their sum. Call it once at init: secrets are read then, never at invocation.
// Errors name the variable and the secret, never a value; with several failures, the first binding's.
func Env(ctx context.Context, base func(string) string, r SecretReader, bindings []Binding) (func(string) string, error) {
	type result struct {
		val string
		set bool
		err error
	}
	results := make([]result, len(bindings))
	var wg sync.WaitGroup
	for i, b := range bindings {
		arn := base(b.ARNVar)
		if arn == "" || base(b.Var) != "" {
			continue
		}
		wg.Go(func() {
			s, err := r.SecretString(ctx, arn)
			if err != nil {
				results[i].err = fmt.Errorf("%s: %w", b.ARNVar, err)
				return
			}
			decode := b.Decode
			if decode == nil {
				decode = fieldOrPlain(b.Fields, b.Optional)
			}
			v, err := decode(s)
			if err != nil {
				results[i].err = rag.E("awsrt.Env", rag.KindInvalid, fmt.Errorf("%s (secret %s): %w", b.ARNVar, arn, err))
				return
			}
			results[i] = result{val: v, set: v != "" || !b.Optional}
		})
	}
	wg.Wait()
	vals := map[string]string{}
	for i, res := range results {
		if res.err != nil {
			return nil, res.err
		}
		if res.set {
			vals[bindings[i].Var] = res.val
		}
	}
	return func(k string) string {
		if v, ok := vals[k]; ok {
			return v
		}
		return base(k)
	}, nil
}

// jsonArray takes a secret that must be a JSON array as it is (the MCP servers' list).
func jsonArray(secret string) (string, error) {
	t := strings.TrimSpace(secret)
	var v []json.RawMessage
	if err := json.Unmarshal([]byte(t), &v); err != nil {
		return "", fmt.Errorf("secret is not a JSON array")
	}
	return t, nil
}

// redisTLS reads the Redis secret's "tls" (true or false, as a JSON bool or string); "" (unset) for a
// plain-string secret or one without it, so DOCMIND_REDIS_TLS keeps its own value.
func redisTLS(secret string) (string, error) {
	t, isJSON, err := trimSecret(secret)
	if err != nil || !isJSON {
		return "", err
	}
	var s struct {
		TLS any `json:"tls"`
	}
	if err := json.Unmarshal([]byte(t), &s); err != nil {
		return "", fmt.Errorf("secret is neither a plain string nor a JSON object")
	}
	switch v := s.TLS.(type) {
	case nil:
		return "", nil
	case bool:
		return strconv.FormatBool(v), nil
	case string:
		if b, err := strconv.ParseBool(v); err == nil {
			return strconv.FormatBool(b), nil
		}
	}
	return "", fmt.Errorf("secret field tls must be true or false")
}

// trimSecret trims a secret's value and tells whether it is a JSON object; anything else is the value
// itself. An empty secret is an error: a variable filled with "" would pass for unset.
func trimSecret(secret string) (string, bool, error) {
	t := strings.TrimSpace(secret)
	if t == "" {
		return "", false, fmt.Errorf("empty secret")
	}
	return t, strings.HasPrefix(t, "{"), nil
}

func fieldOrPlain(fields []string, optional bool) func(string) (string, error) {
	return func(s string) (string, error) {
		t, isJSON, err := trimSecret(s)
		if err != nil {
			return "", err
		}
		if !isJSON {
			if optional {
				return "", nil // a plain string is the binding's main value (the password), not this one
			}
			return t, nil
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(t), &m); err != nil {
			return "", fmt.Errorf("secret is neither a plain string nor a JSON object")
		}
		for _, f := range fields {
			if v, ok := m[f].(string); ok && v != "" {
				return v, nil
			}
		}
		if optional {
			return "", nil
		}
		return "", fmt.Errorf("secret JSON has none of the fields %v", fields)
	}
}

// MySQLDSN decodes the database secret: a plain DSN, a JSON object with "dsn", or the JSON that RDS and
// Aurora write for a managed or rotated secret ({"username","password","host","port","dbname"}). The
// host may be overridden with DOCMIND_SQL_HOST (the RDS Proxy endpoint) by the caller's environment.
func MySQLDSN(secret string) (string, error) {
	t, isJSON, err := trimSecret(secret)
	if err != nil || !isJSON {
		return t, err
	}
	var s struct {
		DSN      string          `json:"dsn"`
		Username string          `json:"username"`
		Password string          `json:"password"`
		Host     string          `json:"host"`
		Port     json.RawMessage `json:"port"` // RDS writes a number, hand-made secrets often a string
		DBName   string          `json:"dbname"`
	}
	if err := json.Unmarshal([]byte(t), &s); err != nil {
		return "", fmt.Errorf("database secret is not valid JSON")
	}
	if s.DSN != "" {
		return s.DSN, nil
	}
	if s.Username == "" || s.Host == "" {
		return "", fmt.Errorf("database secret needs dsn, or username and host")
	}
	port := strings.Trim(string(s.Port), `"`)
	if port == "" {
		port = "3306"
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", fmt.Errorf("database secret port is not a number")
	}
	if s.DBName == "" {
		s.DBName = "docmind"
	}
	c := mysqldrv.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = s.Username, s.Password, "tcp", s.Host+":"+port, s.DBName
	return c.FormatDSN(), nil
}
