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

// SecretReader returns the string value of one secret.
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
// not once per invocation (a GetSecretValue costs latency and money, and throttles at scale).
type Cache struct {
	Reader SecretReader
	mu     sync.Mutex
	vals   map[string]string
}

// SecretString implements SecretReader, reading through to Reader on the first request only.
func (c *Cache) SecretString(ctx context.Context, id string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.vals[id]; ok {
		return v, nil
	}
	v, err := c.Reader.SecretString(ctx, id)
	if err != nil {
		return "", err
	}
	if c.vals == nil {
		c.vals = map[string]string{}
	}
	c.vals[id] = v
	return v, nil
}

// Binding says which configuration variable a secret fills.
type Binding struct {
	ARNVar string // the variable that names the secret, e.g. DOCMIND_SQL_SECRET_ARN
	Var    string // the variable it fills, e.g. DOCMIND_SQL_DSN
	// Decode turns the secret string into the value; nil takes a plain string as is, or the first of
	// Fields present in a JSON object.
	Decode func(secret string) (string, error)
	Fields []string
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
	}
}

// Env resolves every binding whose ARN variable is set and whose target variable is not, and returns a
// getenv that serves the resolved values over base. Call it once at init: secrets are read then (through
// r, which should be a Cache), never at invocation. Errors name the variable and the secret, never a value.
func Env(ctx context.Context, base func(string) string, r SecretReader, bindings []Binding) (func(string) string, error) {
	vals := map[string]string{}
	for _, b := range bindings {
		arn := base(b.ARNVar)
		if arn == "" || base(b.Var) != "" {
			continue
		}
		s, err := r.SecretString(ctx, arn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.ARNVar, err)
		}
		decode := b.Decode
		if decode == nil {
			decode = fieldOrPlain(b.Fields)
		}
		v, err := decode(s)
		if err != nil {
			return nil, rag.E("awsrt.Env", rag.KindInvalid, fmt.Errorf("%s (secret %s): %w", b.ARNVar, arn, err))
		}
		vals[b.Var] = v
	}
	return func(k string) string {
		if v, ok := vals[k]; ok {
			return v
		}
		return base(k)
	}, nil
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

func fieldOrPlain(fields []string) func(string) (string, error) {
	return func(s string) (string, error) {
		t, isJSON, err := trimSecret(s)
		if err != nil || !isJSON {
			return t, err
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
