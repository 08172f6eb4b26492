// Package lambdatest holds the small fixtures the functions' tests share: testdata events decoded into
// their types, and the start-up checks every function owes (a store-opening function refuses the
// embedded drivers; a storeless one starts under the template's Globals). It imports no adapter, so the
// smallest functions' tests stay small; the embedded knowledge base is kbtest's. Tests only.
package lambdatest

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// ReadJSON decodes the file at path (relative to the test's package, usually testdata/...) into a T,
// failing the test if it cannot be read or decoded.
func ReadJSON[T any](t testing.TB, path string) T {
	t.Helper()
	var v T
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TemplateGlobals returns the store drivers template.yaml's Globals set for every function.
func TemplateGlobals() map[string]string {
	return map[string]string{"DOCMIND_SQL_DRIVER": "mysql", "DOCMIND_VECTOR_DRIVER": "milvus", "DOCMIND_KV_DRIVER": "redis", "DOCMIND_BLOB_DRIVER": "s3"}
}

// StartsStoreless checks a function that opens no store: under the template's Globals alone (no DSN,
// no address) start must succeed.
func StartsStoreless(t testing.TB, start func(getenv func(string) string) error) {
	t.Helper()
	globals := TemplateGlobals()
	if err := start(func(k string) string { return globals[k] }); err != nil {
		t.Errorf("with the template's Globals only: %v, want a start (the function opens no store)", err)
	}
}

// RefusesEmbeddedStores checks a function's start-up with no environment at all, that is with the
// embedded drivers of the defaults: start must fail with awsenv's rule (a Lambda's disk and memory vanish
// between invocations) before it opens anything.
func RefusesEmbeddedStores(t testing.TB, start func(getenv func(string) string) error) {
	t.Helper()
	if err := start(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "in a Lambda") {
		t.Errorf("started with the embedded defaults: %v, want the refusal naming the drivers a Lambda must use", err)
	}
}
