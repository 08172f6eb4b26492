// Package linktest checks what the computing functions (rerank, grade) depend on. Until the chat-model
// reranker moved to shared/rank/llmrank, shared/rank imported go-openai, so these functions listed it
// and only their symbol tables could show the linker had dropped it; now `go list -deps` itself must
// not name it. Tests only.
package linktest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/deptest"
)

// ModelAndStoreClients are what a function that computes over what it is sent must not list: the
// Milvus client and the chat model's client.
var ModelAndStoreClients = []string{"github.com/milvus-io/", "github.com/sashabaranov/go-openai"}

// Deps lists pkg's dependencies as the Lambda build sees them (linux/arm64, no cgo, lambda.norpc).
func Deps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", pkg)
	cmd.Env = append(cmd.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// Listed returns the dependencies of pkg that are one of exact or start with one of prefixes, and
// fails the test unless mustList is among them all, so a listing that came back empty cannot pass.
func Listed(t *testing.T, pkg, mustList string, exact, prefixes []string) []string {
	t.Helper()
	var hits []string
	found := false
	for _, d := range Deps(t, pkg) {
		found = found || d == mustList
		for _, e := range exact {
			if d == e {
				hits = append(hits, d)
			}
		}
		for _, p := range prefixes {
			if strings.HasPrefix(d, p) {
				hits = append(hits, d)
			}
		}
	}
	if !found {
		t.Errorf("%s does not list %s: the check looks at the wrong list", pkg, mustList)
	}
	return hits
}

// Computing checks a function that computes over what it is sent and holds no store or model client
// (rerank, grade): deptest's forbidden packages, and neither `testing` nor a package of the Milvus
// client or go-openai among its dependencies, with shared/rank there.
func Computing(t *testing.T, pkg string) {
	t.Helper()
	deptest.Check(t, pkg)
	for _, d := range Listed(t, pkg, "github.com/docmind/docmind/shared/rank", []string{"testing"}, ModelAndStoreClients) {
		t.Errorf("%s lists %s", pkg, d)
	}
}
