package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/store/memkv"
)

// Through /api/chat: the third identical question is answered from the cache and keeps what the
// first answers carried: the MEDIUM band and its warning event, the claims, the injection flags, and
// a timeline saying it came from the cache and which turn it replays.
func TestChatCachedAnswerKeepsWarning(t *testing.T) {
	f := newChatFixtureWith(t, false, func(d *Deps) {
		p := d.Chat.(*answer.Pipeline)
		p.Cache = &answer.SemanticCache{KV: memkv.New(nil, 1000), Embedder: embed.NewOffline(256), Catalog: d.Library.(answer.Catalog)}
	})
	const q = `{"question":"How many days of annual leave?","kbs":["handbook"]}`
	var turns []answer.Done
	var warned []bool
	var cached []string // the cached event's data, per ask ("" without one)
	for range 3 {
		events := readSSE(t, f.post(t, q))
		warn, c := false, ""
		for _, e := range events {
			warn = warn || e.name == "confidence_warning"
			if e.name == answer.EventCached {
				c = string(e.data)
			}
		}
		turns, warned, cached = append(turns, doneOf(t, events)), append(warned, warn), append(cached, c)
	}
	first, third := turns[1], turns[2]
	if turns[0].FromCache || first.FromCache || !third.FromCache {
		t.Fatalf("from_cache %v %v %v: the answer is cached once its question was asked twice", turns[0].FromCache, first.FromCache, third.FromCache)
	}
	if first.Confidence.Band != answer.BandMedium || !warned[1] || !warned[2] {
		t.Fatalf("band %s, warned %v: the cached MEDIUM answer must keep its warning", first.Confidence.Band, warned)
	}
	if third.Confidence.Band != first.Confidence.Band || third.Confidence.Score != first.Confidence.Score || third.Confidence.Reason != first.Confidence.Reason ||
		len(third.Claims) != len(first.Claims) || third.InjectionFlags == nil {
		t.Fatalf("replayed %+v, first %+v", third.Confidence, first.Confidence)
	}
	if third.Cached == nil || !strings.Contains(third.Cached.Question, "annual leave") || third.Cached.AnsweredAt.IsZero() || len(third.Cached.StageMS) < 2 {
		b, _ := json.Marshal(third.Cached)
		t.Fatalf("cached origin %s: the replay must say which turn it comes from, with that turn's timeline", b)
	}
	// the replay's timeline opens with the cached event, done's cached object (issue #20 item 5); this
	// fixture stores no conversation, so no message is named (TestPaths/CACHE checks the stored ids)
	want, _ := json.Marshal(third.Cached)
	if cached[0] != "" || cached[1] != "" || cached[2] != string(want) || first.MessageID != "" || strings.Contains(cached[2], "message_id") {
		t.Fatalf("cached events %q, want the third to be %s", cached, want)
	}
	if _, ok := third.StageMS["cache"]; !ok || len(third.StageMS) != 1 {
		t.Fatalf("the replay's own timeline is the cache step: %v", third.StageMS)
	}
}
