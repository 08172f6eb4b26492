// Package linktest checks what a built Lambda binary really links, symbol by symbol: `go list -deps`
// counts an imported package even when the linker drops all of its code. shared/rank declares
// LLMReranker next to the rerank and grade code, so the rerank and grade functions import go-openai's
// package without linking any of it; the binary's symbol table is the proof. Tests only.
package linktest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/deptest"
)

// Symbols builds pkg as the Lambda build does (linux/arm64, no cgo, lambda.norpc, symbols kept) and
// returns the names of the functions in its symbol table, leaving out package initialisers: every
// imported package keeps its init and its package-level variables, which is not linking its code.
func Symbols(t *testing.T, pkg string) []string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bin, pkg)
	build.Env = append(build.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[len(f)-2] != "T" {
			continue
		}
		name := f[len(f)-1]
		if strings.HasSuffix(name, ".init") || strings.Contains(name, ".init.") {
			continue
		}
		names = append(names, name)
	}
	if len(names) < 500 {
		t.Fatalf("only %d symbols in %s", len(names), bin)
	}
	return names
}

// Forbid fails the test for every symbol of a forbidden package (a prefix of the import path) in pkg's
// binary, and checks that a package it must link is there, so an empty symbol table cannot pass.
func Forbid(t *testing.T, pkg, mustLink string, forbidden ...string) {
	t.Helper()
	found := map[string]int{}
	linked := false
	for _, s := range Symbols(t, pkg) {
		if strings.HasPrefix(s, mustLink+".") {
			linked = true
		}
		for _, f := range forbidden {
			if strings.HasPrefix(s, f+".") || strings.HasPrefix(s, f+"/") {
				found[f]++
			}
		}
	}
	if !linked {
		t.Errorf("%s does not link %s: the check looks at the wrong symbols", pkg, mustLink)
	}
	for f, n := range found {
		t.Errorf("%s links %d symbols of %s", pkg, n, f)
	}
}

// Computing checks a function that computes over what it is sent and holds no store or model client
// (rerank, grade): deptest's forbidden packages, then, unless -short (it builds the binary), no symbol of
// the Milvus client or of go-openai in pkg's binary, with shared/rank's code there.
func Computing(t *testing.T, pkg string) {
	t.Helper()
	deptest.Check(t, pkg)
	if testing.Short() {
		t.Log("-short: the symbol check builds the binary, skipped")
		return
	}
	Forbid(t, pkg, "github.com/docmind/docmind/shared/rank", "github.com/milvus-io/", "github.com/sashabaranov/go-openai")
}
