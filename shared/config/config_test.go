package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestEnvOverlay(t *testing.T) {
	c, err := Load("", env(map[string]string{
		"DOCMIND_ADDR":                  "127.0.0.1:9999",
		"DOCMIND_SQL_DRIVER":            "mysql",
		"DOCMIND_SQL_DSN":               "u:p@tcp(db:3306)/docmind",
		"DOCMIND_SQL_CONN_MAX_LIFETIME": "90s",
		"DOCMIND_REDIS_TLS":             "true",
		"DOCMIND_VECTOR_DIM":            "1024",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Addr != "127.0.0.1:9999" || c.SQL.Driver != "mysql" || c.SQL.ConnMaxLifetime != 90*time.Second || !c.KV.RedisTLS || c.Vector.Dim != 1024 {
		t.Fatalf("overlay not applied: %+v", c)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	_, err := Load("", env(map[string]string{
		"DOCMIND_SQL_DRIVER":            "postgres",
		"DOCMIND_VECTOR_DRIVER":         "milvus",
		"DOCMIND_KV_DRIVER":             "redis",
		"DOCMIND_SQL_CONN_MAX_LIFETIME": "10m",
		"DOCMIND_TENANT":                "a b",
	}))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want *ValidationError, got %v", err)
	}
	for _, want := range []string{"DOCMIND_SQL_DRIVER", "DOCMIND_MILVUS_ADDR", "DOCMIND_REDIS_ADDR", "DOCMIND_SQL_CONN_MAX_LIFETIME", "DOCMIND_TENANT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	if len(ve.Problems) != 5 {
		t.Errorf("got %d problems, want 5: %q", len(ve.Problems), ve.Problems)
	}
}

func TestParseErrorsReportedTogether(t *testing.T) {
	_, err := Load("", env(map[string]string{"DOCMIND_VECTOR_DIM": "big", "DOCMIND_READ_TIMEOUT": "forever", "DOCMIND_REDIS_TLS": "maybe"}))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 3 {
		t.Fatalf("want 3 problems, got %v", err)
	}
}

func TestConfigFileStrict(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"server":{"addr":"127.0.0.1:7000"},"chunking":{"child_chars":300}}`), 0o600)
	c, err := Load(good, env(map[string]string{"DOCMIND_ADDR": "127.0.0.1:7001"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Addr != "127.0.0.1:7001" {
		t.Errorf("env must override the file: got %s", c.Server.Addr)
	}
	if c.Chunking.ChildChars != 300 {
		t.Errorf("file value not applied: %d", c.Chunking.ChildChars)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"server":{"adr":"x"}}`), 0o600)
	if _, err := Load(bad, env(nil)); err == nil || !strings.Contains(err.Error(), "adr") {
		t.Fatalf("unknown field must be reported, got %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json"), env(nil)); err == nil {
		t.Fatal("missing file must be an error")
	}
}

func TestRedacted(t *testing.T) {
	c := Default()
	c.Chat.APIKey = "sk-canary-123"
	c.SQL.DSN = "user:hunter2@tcp(db)/x"
	r := c.Redacted()
	for k, v := range r {
		if s, ok := v.(string); ok && (strings.Contains(s, "canary") || strings.Contains(s, "hunter2")) {
			t.Errorf("%s leaks a secret: %q", k, s)
		}
	}
	if r["chat.api_key"] != "[redacted]" || r["embeddings.api_key"] != "" {
		t.Errorf("redaction markers wrong: %v %v", r["chat.api_key"], r["embeddings.api_key"])
	}
}

func TestVarsCoverEveryEnvTag(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Vars() {
		if !strings.HasPrefix(v.Env, "DOCMIND_") || v.Doc == "" {
			t.Errorf("var %+v lacks env prefix or doc", v)
		}
		if seen[v.Env] {
			t.Errorf("duplicate env %s", v.Env)
		}
		seen[v.Env] = true
	}
	if len(seen) < 30 {
		t.Errorf("only %d vars", len(seen))
	}
}

// The chat settings added for issue #5 are validated with the rest.
func TestValidateChatSettings(t *testing.T) {
	_, err := Load("", env(map[string]string{
		"DOCMIND_CACHE_THRESHOLD":   "1.5",
		"DOCMIND_CHAT_AGENT_ROUNDS": "5",
		"DOCMIND_MEMORY_MAX":        "0",
		"DOCMIND_CACHE_TTL":         "0s",
		"DOCMIND_CHAT_PRICE_INPUT":  "-1",
	}))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 5 {
		t.Fatalf("want 5 problems, got %v", err)
	}
	for _, want := range []string{"DOCMIND_CACHE_THRESHOLD", "DOCMIND_CHAT_AGENT_ROUNDS", "DOCMIND_MEMORY_MAX", "DOCMIND_CACHE_TTL", "DOCMIND_CHAT_PRICE_INPUT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

func TestValidateAuthSettings(t *testing.T) {
	for name, c := range map[string]struct {
		vars map[string]string
		want []string
	}{
		"unknown mode": {map[string]string{"DOCMIND_AUTH": "oauth"}, []string{"DOCMIND_AUTH"}},
		"jwt without keys, issuer or audience": {map[string]string{"DOCMIND_AUTH": "jwt"},
			[]string{"DOCMIND_JWT_JWKS_URL", "DOCMIND_JWT_ISSUER"}},
		"short dev secret": {map[string]string{"DOCMIND_AUTH": "keys,jwt", "DOCMIND_JWT_HS256_SECRET": "short", "DOCMIND_JWT_ISSUER": "i", "DOCMIND_JWT_AUDIENCE": "a"},
			[]string{"at least 32 bytes"}},
		"bad origins and negative limits": {map[string]string{"DOCMIND_ALLOWED_ORIGINS": "https://ok.example, ftp://x, https://a.example/path",
			"DOCMIND_RATE_LIMIT_PER_MINUTE": "-1"}, []string{`"ftp://x"`, `"https://a.example/path"`, "must not be negative"}},
	} {
		_, err := Load("", env(c.vars))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: want a validation error, got %v", name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not mention %s:\n%v", name, w, err)
			}
		}
		if strings.Contains(err.Error(), "https://ok.example\"") {
			t.Errorf("%s: a valid origin was reported: %v", name, err)
		}
	}
	ok := map[string]string{"DOCMIND_AUTH": "keys,jwt", "DOCMIND_JWT_JWKS_URL": "https://cognito-idp.eu-west-1.amazonaws.com/p/.well-known/jwks.json",
		"DOCMIND_JWT_ISSUER": "https://cognito-idp.eu-west-1.amazonaws.com/p", "DOCMIND_JWT_AUDIENCE": "client-1,client-2",
		"DOCMIND_ALLOWED_ORIGINS": "https://chat.example.com", "DOCMIND_RATE_LIMIT_PER_MINUTE": "30", "DOCMIND_DAILY_TOKEN_BUDGET": "200000"}
	if c, err := Load("", env(ok)); err != nil || len(List(c.Auth.Audience)) != 2 {
		t.Fatalf("a Cognito configuration: %v (audiences %v)", err, List(c.Auth.Audience))
	}
}

// The extraction memory budget: a byte count from the environment or the file, at least 32 MiB.
func TestExtractMemory(t *testing.T) {
	if got := Default().Ingest.ExtractMemory; got != 512<<20 {
		t.Errorf("default extract memory %d, want 512 MiB", got)
	}
	c, err := Load("", env(map[string]string{"DOCMIND_EXTRACT_MEMORY": "1073741824"}))
	if err != nil || c.Ingest.ExtractMemory != 1<<30 {
		t.Fatalf("DOCMIND_EXTRACT_MEMORY=1 GiB: %d, %v", c.Ingest.ExtractMemory, err)
	}
	file := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(file, []byte(`{"ingest":{"extract_memory":268435456}}`), 0o600)
	if c, err := Load(file, env(nil)); err != nil || c.Ingest.ExtractMemory != 256<<20 {
		t.Fatalf("ingest.extract_memory in the file: %d, %v", c.Ingest.ExtractMemory, err)
	}
	for raw, want := range map[string]string{
		"512MiB":  `DOCMIND_EXTRACT_MEMORY: "512MiB" is not an integer`,
		"0":       "DOCMIND_EXTRACT_MEMORY: must be at least 33554432 bytes (32 MiB), got 0",
		"-5":      "DOCMIND_EXTRACT_MEMORY: must be at least 33554432 bytes (32 MiB), got -5",
		"1048576": "DOCMIND_EXTRACT_MEMORY: must be at least 33554432 bytes (32 MiB), got 1048576",
	} {
		_, err := Load("", env(map[string]string{"DOCMIND_EXTRACT_MEMORY": raw}))
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0] != want {
			t.Errorf("DOCMIND_EXTRACT_MEMORY=%s: got %v, want the one problem %q", raw, err, want)
		}
	}
}

func TestVectorQuantSetting(t *testing.T) {
	c, err := Load("", env(nil))
	if err != nil || c.Vector.Quant != "binary" || c.Vector.Rescore != 8 {
		t.Fatalf("default: %+v %v", c.Vector, err)
	}
	c, err = Load("", env(map[string]string{"DOCMIND_VECTOR_QUANT": "int8", "DOCMIND_VECTOR_RESCORE": "4"}))
	if err != nil || c.Vector.Quant != "int8" || c.Vector.Rescore != 4 {
		t.Fatalf("overlay: %+v %v", c.Vector, err)
	}
	_, err = Load("", env(map[string]string{"DOCMIND_VECTOR_QUANT": "int4", "DOCMIND_VECTOR_RESCORE": "0"}))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 || !strings.Contains(err.Error(), "DOCMIND_VECTOR_QUANT") || !strings.Contains(err.Error(), "DOCMIND_VECTOR_RESCORE") {
		t.Fatalf("want both settings refused, got %v", err)
	}
}

// DOCMIND_OCR and DOCMIND_OCR_LANGS: defaults, the overlay, and one clear problem per bad value.
func TestOCRSettings(t *testing.T) {
	if d := Default().Ingest; d.OCR != "auto" || d.OCRLangs != "auto" {
		t.Errorf("defaults %q %q, want auto auto", d.OCR, d.OCRLangs)
	}
	c, err := Load("", env(map[string]string{"DOCMIND_OCR": "tesseract", "DOCMIND_OCR_LANGS": "eng+chi_sim"}))
	if err != nil || c.Ingest.OCR != "tesseract" || c.Ingest.OCRLangs != "eng+chi_sim" {
		t.Fatalf("overlay: %+v, %v", c.Ingest, err)
	}
	for _, tc := range []struct{ key, raw, want string }{
		{"DOCMIND_OCR", "vision", `DOCMIND_OCR: vision reads pages with the chat model: set DOCMIND_CHAT_PROVIDER=openai (with DOCMIND_CHAT_BASE_URL or DOCMIND_CHAT_API_KEY) and a model that takes images in DOCMIND_OCR_MODEL or DOCMIND_CHAT_MAIN_MODEL`},
		{"DOCMIND_OCR", "on", `DOCMIND_OCR: "on" is not one of auto, off, tesseract, textract, vision`},
		{"DOCMIND_OCR_LANGS", "eng+", `DOCMIND_OCR_LANGS: "eng+" is not auto or Tesseract language names joined by + (eng+chi_sim)`},
		{"DOCMIND_OCR_LANGS", "eng;rm -rf", `DOCMIND_OCR_LANGS: "eng;rm -rf" is not auto or Tesseract language names joined by + (eng+chi_sim)`},
	} {
		_, err := Load("", env(map[string]string{tc.key: tc.raw}))
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0] != tc.want {
			t.Errorf("%s=%s: got %v, want the one problem %q", tc.key, tc.raw, err, tc.want)
		}
	}
	for _, ok := range []string{"off", "auto", "textract"} {
		if _, err := Load("", env(map[string]string{"DOCMIND_OCR": ok})); err != nil {
			t.Errorf("DOCMIND_OCR=%s: %v", ok, err)
		}
	}
	c, err = Load("", env(map[string]string{"DOCMIND_OCR": "vision", "DOCMIND_OCR_MODEL": "gpt-4o-mini", "DOCMIND_CHAT_PROVIDER": "openai",
		"DOCMIND_CHAT_API_KEY": "k", "DOCMIND_CHAT_MAIN_MODEL": "m"}))
	if err != nil || c.Ingest.OCR != "vision" || c.Ingest.OCRModel != "gpt-4o-mini" {
		t.Errorf("vision with a chat model: %+v, %v", c.Ingest, err)
	}
}

// TestSQLiteMemoryMap: the map's size is read from the environment and held to what SQLite accepts.
func TestSQLiteMemoryMap(t *testing.T) {
	c, err := Load("", env(map[string]string{"DOCMIND_SQL_MMAP_MB": "0"}))
	if err != nil || c.SQL.MmapMB != 0 {
		t.Fatalf("DOCMIND_SQL_MMAP_MB=0: %+v, %v", c.SQL, err)
	}
	if Default().SQL.MmapMB != 2047 {
		t.Errorf("default map %d MiB, want all of SQLite's 2047", Default().SQL.MmapMB)
	}
	for _, v := range []string{"-1", "2048"} {
		if _, err := Load("", env(map[string]string{"DOCMIND_SQL_MMAP_MB": v})); err == nil || !strings.Contains(err.Error(), "DOCMIND_SQL_MMAP_MB") {
			t.Errorf("DOCMIND_SQL_MMAP_MB=%s: %v, want a problem naming it", v, err)
		}
	}
}
