package deptest

import (
	"strings"
	"testing"
)

// The check must be able to fail: the local binary links the embedded adapters on purpose.
func TestDetectsEmbeddedAdapters(t *testing.T) {
	v := strings.Join(Violations(t, "github.com/docmind/docmind/cmd/docmind"), "\n")
	for _, want := range []string{"shared/store/sqlite", "shared/store/memvec", "modernc.org/sqlite"} {
		if !strings.Contains(v, want) {
			t.Errorf("violations of cmd/docmind lack %s:\n%s", want, v)
		}
	}
}
