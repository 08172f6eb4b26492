package netx

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/deptest"
)

// TestNoOtherFetchClients is SR-11's static check: no production code uses the default client (which
// follows proxies, has no timeout and no address check), and the web search path takes its client from
// this package.
func TestNoOtherFetchClients(t *testing.T) {
	forbidden := regexp.MustCompile(`http\.(DefaultClient|DefaultTransport|Get|Post|PostForm|Head)\b`)
	root := filepath.Join("..", "..")
	deptest.EachSource(t, root, func(path string, b []byte) {
		for i, line := range strings.Split(string(b), "\n") {
			if forbidden.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d uses %s; fetch through netx.NewClient", path, i+1, forbidden.FindString(line))
			}
		}
	})
	wire, err := os.ReadFile(filepath.Join(root, "shared", "wire", "wire.go"))
	if err != nil || !regexp.MustCompile(`answer\.WebSearch\{[^}]*Client: netx\.NewClient`).Match(wire) {
		t.Fatal("the web search client must be built by netx.NewClient in shared/wire")
	}
}
