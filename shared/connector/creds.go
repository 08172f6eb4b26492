package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// Credentials are a connector's secret values by key ("email", "token", "client_secret"). They print
// and log as "[redacted]": a credential never reaches a log line or an error message.
type Credentials map[string]string

func (Credentials) String() string          { return "[redacted]" }
func (Credentials) LogValue() slog.Value    { return slog.StringValue("[redacted]") }
func (c Credentials) GoString() string      { return "[redacted]" }
func (c Credentials) Get(key string) string { return c[key] }

// CredentialRef says where a connector's credentials are kept; it is part of the connector's
// configuration, the credentials themselves never are.
type CredentialRef struct {
	// Secret is a Secrets Manager secret id or ARN holding a JSON object of the keys (on AWS).
	Secret string `json:"credentials_secret,omitempty"`
	// File is a local JSON file holding the keys (readable by docmind only).
	File string `json:"credentials_file,omitempty"`
}

// SecretReader reads a secret's string (awsrt.SecretsManager, cached).
type SecretReader interface {
	SecretString(ctx context.Context, id string) (string, error)
}

// EnvName is the variable that supplies key for connector name: DOCMIND_CONNECTOR_<NAME>_<KEY>, with
// the name upper-cased and "-" turned into "_".
func EnvName(name, key string) string {
	up := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
	return "DOCMIND_CONNECTOR_" + up(name) + "_" + up(key)
}

// LoadCredentials gathers the keys a connector needs: from its secret when one is named (secrets must
// then be set), else from its file when one is named, then from variables for keys still missing.
// Invalid, naming the missing keys and where they may be given (never a value), when any is missing.
func LoadCredentials(ctx context.Context, name string, ref CredentialRef, keys []string, getenv func(string) string, secrets SecretReader) (Credentials, error) {
	const op = "connector.LoadCredentials"
	c := Credentials{}
	var raw string
	switch {
	case ref.Secret != "":
		if secrets == nil {
			return nil, rag.Errorf(op, rag.KindInvalid, "connector %s names a secret but no secrets store is configured here; use credentials_file or variables", name)
		}
		s, err := secrets.SecretString(ctx, ref.Secret)
		if err != nil {
			return nil, fmt.Errorf("read the credentials secret of %s: %w", name, err)
		}
		raw = s
	case ref.File != "":
		b, err := os.ReadFile(ref.File)
		if err != nil {
			return nil, rag.Errorf(op, rag.KindInvalid, "read the credentials file of %s: %v", name, err)
		}
		raw = string(b)
	}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			// the decoder's message may quote the secret's text: say only what is wrong
			return nil, rag.Errorf(op, rag.KindInvalid, "the credentials of %s are not a JSON object of strings", name)
		}
	}
	var missing []string
	for _, k := range keys {
		if c[k] == "" && getenv != nil {
			c[k] = getenv(EnvName(name, k))
		}
		if c[k] == "" {
			missing = append(missing, k+" (or "+EnvName(name, k)+")")
		}
	}
	if len(missing) > 0 {
		return nil, rag.Errorf(op, rag.KindInvalid, "connector %s lacks credentials: %s", name, strings.Join(missing, ", "))
	}
	return c, nil
}

// The settings keys of a CredentialRef.
const (
	KeyCredentialsFile   = "credentials_file"
	KeyCredentialsSecret = "credentials_secret"
)

// CredentialSource says where a connector's credentials come from, for display: "file", "secret",
// "variables" (a type that signs in and names neither) or "none" (web, which needs none).
func CredentialSource(typ, settings string) string {
	var raw map[string]json.RawMessage
	json.Unmarshal([]byte(settings), &raw)
	switch {
	case raw[KeyCredentialsSecret] != nil:
		return "secret"
	case raw[KeyCredentialsFile] != nil:
		return "file"
	case typ == "web":
		return "none"
	}
	return "variables"
}

// PublicSettings returns a connector's settings without where its credentials are kept: an API
// shows what a connector reads, not the server's paths or secret names. "{}" for settings that are
// not a JSON object.
func PublicSettings(settings string) json.RawMessage {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(settings), &raw); err != nil || raw == nil {
		return json.RawMessage("{}")
	}
	delete(raw, KeyCredentialsFile)
	delete(raw, KeyCredentialsSecret)
	b, _ := json.Marshal(raw)
	return b
}
