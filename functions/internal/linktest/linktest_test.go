package linktest

import (
	"strings"
	"testing"
)

// TestDetects: the check must be able to fail. The query function holds the chat model's client, the
// Milvus adapter the Milvus client, and this package's tests link testing.
func TestDetects(t *testing.T) {
	for _, c := range []struct{ pkg, mustList, want string }{
		{"github.com/docmind/docmind/functions/query", "github.com/docmind/docmind/shared/rank", "github.com/sashabaranov/go-openai"},
		{"github.com/docmind/docmind/shared/store/milvus", "github.com/docmind/docmind/shared/rag", "github.com/milvus-io/milvus/client/v2"},
	} {
		if hits := Listed(t, c.pkg, c.mustList, nil, ModelAndStoreClients); !strings.Contains(strings.Join(hits, "\n"), c.want) {
			t.Errorf("%s: found %v, want %s among them", c.pkg, hits, c.want)
		}
	}
	if got := Listed(t, "github.com/docmind/docmind/functions/internal/linktest", "testing", []string{"testing"}, nil); len(got) != 1 {
		t.Errorf("linktest lists testing %d times, want once", len(got))
	}
}
