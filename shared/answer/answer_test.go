package answer

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

func TestCitations(t *testing.T) {
	used, invalid := Citations("a [2] b [1] c [2] d [7] e [0] f [x] [12]", 3)
	if len(used) != 2 || used[0] != 2 || used[1] != 1 || invalid != 3 {
		t.Fatalf("used %v invalid %d", used, invalid)
	}
}

func TestBand(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{{0.85, BandHigh}, {0.8499, BandMedium}, {0.60, BandMedium}, {0.5999, BandLow}, {0, BandLow}, {1, BandHigh}} {
		if got := Band(c.s); got != c.want {
			t.Errorf("Band(%v) = %s, want %s", c.s, got, c.want)
		}
	}
}

func TestScore(t *testing.T) {
	high := rank.Grade{Tier: rank.TierHigh, TopScore: 0.95}
	full := "Leave is twenty days a year [1]. Unused leave carries over one year [2]."
	if c := Score(full, 2, high, true); c.Band != BandHigh || c.Coverage != 1 || c.Signal != 0.95 {
		t.Fatalf("fully cited, strong rerank: %+v", c)
	}
	half := "Leave is twenty days a year [1]. Nobody knows what happens to the rest of it."
	if c := Score(half, 2, high, true); c.Band != BandMedium || c.Coverage != 0.5 {
		t.Fatalf("half cited: %+v", c)
	}
	if c := Score(full, 2, rank.Grade{Tier: rank.TierLow, TopScore: 0.1}, true); c.Band != BandLow || c.Score != 0.35 {
		t.Fatalf("weak rerank must pull the band down: %+v", c)
	}
	if c := Score(full, 2, rank.Grade{Tier: rank.TierLow, TopScore: 9}, false); c.Signal != 0.3 || c.Band != BandLow {
		t.Fatalf("without a reranker the tier stands in for the score: %+v", c)
	}
	if c := Score("No citations at all in this sentence.", 2, high, true); c.Band != BandLow || c.Score != 0 {
		t.Fatalf("uncited answer: %+v", c)
	}
	bad := full + " Also see this other claim here [9]. And one more claim here [8]."
	c := Score(bad, 2, high, true)
	if c.Invalid != 2 || c.Score >= Score(full, 2, high, true).Score {
		t.Fatalf("invalid citations must cost: %+v", c)
	}
	if c := Score(full, 0, rank.Grade{NoEvidence: true}, true); c.Band != BandLow || c.Invalid != 2 {
		t.Fatalf("no sources: %+v", c)
	}
}

func ev(file, text string, score float64) rank.Evidence {
	return rank.Evidence{ChunkID: "c_" + file, DocumentID: "doc_" + file, KBID: "kb_1", FileName: file, Text: text, ChildText: text, Score: score}
}

var bullet = regexp.MustCompile(`^- (.+) \[(\d+)\]$`)

type fakeRetriever struct {
	res *retrieve.Result
	err error
	got retrieve.Query
}

func (f *fakeRetriever) Retrieve(_ context.Context, q retrieve.Query) (*retrieve.Result, error) {
	f.got = q
	return f.res, f.err
}

type recorder struct{ names []string }

func (r *recorder) emit(name string, v any) error {
	r.names = append(r.names, name)
	return nil
}

// protocol is what Run emits: done is the edge's, sent after it stored the answer, so Run never sends it.
var protocol = regexp.MustCompile(`^understanding routing retrieval grader rerank start (token )*token( confidence_warning)?$`)

func TestPipelineRun(t *testing.T) {
	evidence := []rank.Evidence{ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 0.9)}
	fr := &fakeRetriever{res: &retrieve.Result{Evidence: evidence, Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.9}, Degraded: []string{"vector"}}}
	p := &Pipeline{Retriever: fr}
	var rec recorder
	done, err := p.Run(context.Background(), Request{Tenant: "acme", KBIDs: []string{"kb_1"}, Question: "  annual leave days?  "}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if seq := strings.Join(rec.names, " "); !protocol.MatchString(seq) {
		t.Fatalf("event order %q", seq)
	}
	if fr.got.Text != "annual leave days?" || fr.got.Filter.Tenant != "acme" || len(fr.got.Filter.KBIDs) != 1 {
		t.Fatalf("the retriever got %+v: tenant and KB scope must travel with the query", fr.got)
	}
	if !done.Sources[0].Cited || !strings.Contains(done.Answer, "[1]") || done.IsFallback {
		t.Fatalf("done %+v", done)
	}
	if strings.Join(done.Degraded, ",") != "llm,vector" {
		t.Fatalf("degraded %v must name the missing LLM and the retriever's fallbacks", done.Degraded)
	}
	if done.Confidence.Band == "" || done.StageMS["retrieval"] < 0 {
		t.Fatalf("confidence/timings %+v %v", done.Confidence, done.StageMS)
	}

	// Nothing retrieved: the fallback answer, LOW, with a warning.
	fr.res = &retrieve.Result{Grade: rank.Grade{Tier: rank.TierLow, NoEvidence: true}}
	rec = recorder{}
	done, err = p.Run(context.Background(), Request{Tenant: "acme", Question: "quantum gravity?"}, rec.emit)
	if err != nil || !done.IsFallback || done.Confidence.Band != BandLow || !strings.HasSuffix(strings.Join(rec.names, " "), "token confidence_warning") {
		t.Fatalf("fallback: %+v %v %v", done, rec.names, err)
	}

	// The token cap ends the stream early and says so.
	fr.res = &retrieve.Result{Evidence: evidence, Grade: rank.Grade{Tier: rank.TierHigh}}
	p.MaxTokens = 5
	rec = recorder{}
	if done, err = p.Run(context.Background(), Request{Tenant: "acme", Question: "annual leave"}, rec.emit); err != nil || !done.Truncated || strings.Count(strings.Join(rec.names, " "), "token") != 5 {
		t.Fatalf("token cap: %+v %v", done, rec.names)
	}
}

func TestPipelineRejectsAndFails(t *testing.T) {
	p := &Pipeline{Retriever: &fakeRetriever{err: rag.Errorf("x", rag.KindUnavailable, "both legs down")}, MaxQuestionRunes: 10}
	for _, req := range []Request{
		{Tenant: "acme", Question: "   "},
		{Tenant: "acme", Question: "this question is too long"},
		{Tenant: "acme", Question: "\xff"},
		{Tenant: "bad tenant!", Question: "q"},
		{Tenant: "acme", KBIDs: []string{"kb_1' OR 1=1"}, Question: "q"},
	} {
		if err := p.Check(req); !rag.Is(err, rag.KindInvalid) {
			t.Errorf("Check(%+v) = %v, want invalid", req, err)
		}
		var rec recorder
		if _, err := p.Run(context.Background(), req, rec.emit); err == nil || len(rec.names) != 0 {
			t.Errorf("Run(%+v) emitted %v", req, rec.names)
		}
	}
	var rec recorder
	if _, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "q"}, rec.emit); !rag.Is(err, rag.KindUnavailable) || slices.Contains(rec.names, "start") {
		t.Fatalf("retrieval failure: %v after %v", err, rec.names)
	}
	// A client that goes away stops the stream.
	stop := errors.New("client gone")
	p.Retriever = &fakeRetriever{res: &retrieve.Result{Grade: rank.Grade{NoEvidence: true}}}
	n := 0
	_, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "q"}, func(name string, _ any) error {
		if n++; name == "token" {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("emit error must end the run: %v", err)
	}
}
