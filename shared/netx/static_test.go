package netx

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoOtherFetchClients is SR-11's static check: no production code uses the default client (which
// follows proxies, has no timeout and no address check), and the web search path takes its client from
// this package.
func TestNoOtherFetchClients(t *testing.T) {
	forbidden := regexp.MustCompile(`http\.(DefaultClient|DefaultTransport|Get|Post|PostForm|Head)\b`)
	root := filepath.Join("..", "..")
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
		for i, line := range strings.Split(string(b), "\n") {
			if forbidden.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d uses %s; fetch through netx.NewClient", path, i+1, forbidden.FindString(line))
			}
		}
		return nil
	})
	if err != nil || scanned < 50 {
		t.Fatalf("scanned %d files: %v", scanned, err)
	}
	wire, err := os.ReadFile(filepath.Join(root, "shared", "wire", "wire.go"))
	if err != nil || !regexp.MustCompile(`answer\.WebSearch\{[^}]*Client: netx\.NewClient`).Match(wire) {
		t.Fatal("the web search client must be built by netx.NewClient in shared/wire")
	}
}
