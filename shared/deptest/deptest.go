// Package deptest checks what a binary links (tailscale's tstest/deptest idea): a Lambda must not carry
// the embedded adapters, test helpers or test-only servers.
package deptest

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Forbidden are packages no Lambda binary may link.
var Forbidden = []string{
	"testing",
	"net/http/httptest",
	"github.com/docmind/docmind/shared/store/memvec",
	"github.com/docmind/docmind/shared/store/sqlite",
	"github.com/docmind/docmind/shared/store/memkv",
	"github.com/docmind/docmind/shared/store/fsblob",
	"github.com/docmind/docmind/shared/store/storetest",
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus",
	// the hand-written second Milvus client, removed: every function uses shared/store/milvus over the
	// official client, and a second one must not come back
	"github.com/docmind/docmind/shared/store/milvus/milvuslite",
	"github.com/docmind/docmind/shared/store/mysql/mysqltest",
	"modernc.org/sqlite",
	"github.com/dolthub/go-mysql-server",
	"github.com/alicebob/miniredis/v2",
	"github.com/johannesboyne/gofakes3",
}

// ThirdPartyImporters may import a forbidden standard-library test package: the Milvus client's
// utility module links testify (and so "testing" and "net/http/httptest") into every program that uses
// it. That cannot be removed without forking the client; the check still fails if any other package,
// ours above all, imports them.
var ThirdPartyImporters = []string{"github.com/milvus-io/milvus/pkg/v2/", "github.com/stretchr/testify/"}

// Check lists the dependencies of pkg as built for a Lambda (linux/arm64, no cgo, lambda.norpc) and
// fails the test for every forbidden one.
func Check(t *testing.T, pkg string) {
	t.Helper()
	for _, v := range Violations(t, pkg) {
		t.Error(v)
	}
}

// Violations returns one line per forbidden dependency of pkg.
func Violations(t *testing.T, pkg string) []string {
	t.Helper()
	var out []string
	cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "-f", `{{.ImportPath}} {{join .Imports " "}}`, pkg)
	cmd.Env = append(cmd.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	listed, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, listed)
	}
	lines := strings.Split(strings.TrimSpace(string(listed)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list returned only %d packages: %s", len(lines), listed)
	}
	forbidden := func(p string) bool {
		for _, f := range Forbidden {
			if p == f || strings.HasPrefix(p, f+"/") {
				return true
			}
		}
		return false
	}
	thirdParty := func(p string) bool {
		for _, prefix := range ThirdPartyImporters {
			if strings.HasPrefix(p, prefix) {
				return true
			}
		}
		return false
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		importer := fields[0]
		if forbidden(importer) && importer != "testing" && importer != "net/http/httptest" { // those two: by importer, below
			out = append(out, pkg+" links "+importer)
		}
		for _, imp := range fields[1:] {
			if (imp == "testing" || imp == "net/http/httptest") && !thirdParty(importer) {
				out = append(out, pkg+" links "+imp+" through "+importer)
			}
		}
	}
	return out
}

// EachSource calls fn with every production Go file under root (test files, testdata, node_modules and
// .git left out) and its text, for static checks of what production code may call; it fails t when
// the walk fails or finds fewer than 50 files (root is wrong).
func EachSource(t testing.TB, root string, fn func(path string, src []byte)) {
	t.Helper()
	var scanned int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		fn(path, b)
		return nil
	})
	if err != nil || scanned < 50 {
		t.Fatalf("scanned %d files under %s: %v", scanned, root, err)
	}
}
