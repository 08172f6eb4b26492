package answer

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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

func TestExtractiveCompose(t *testing.T) {
	evidence := []rank.Evidence{
		ev("handbook.docx", "# Leave\n\nFull-time employees receive 20 days of paid annual leave per year. The office has a kitchen on every floor. Unused leave carries over for one year.", 0.9),
		ev("faq.html", "Part-time employees receive annual leave in proportion to their hours. Parking is free for visitors.", 0.5),
		ev("prices.csv", "| sku | price |\n|---|---|\n| A1 | 30 |", 0.1),
	}
	got := Extractive{}.Compose("How many days of annual leave do full-time employees get?", evidence)
	lines := strings.Split(got, "\n")
	if lines[0] != OfflineNotice || lines[1] != "" {
		t.Fatalf("the answer must open with the offline notice:\n%s", got)
	}
	if !strings.Contains(got, "Full-time employees receive 20 days of paid annual leave per year. [1]") {
		t.Fatalf("the best sentence is missing or uncited:\n%s", got)
	}
	for _, bad := range []string{"kitchen", "Parking", "sku", "# Leave"} {
		if strings.Contains(got, bad) {
			t.Errorf("irrelevant text %q quoted:\n%s", bad, got)
		}
	}
	for _, l := range lines[2:] {
		m := bullet.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q is not a cited bullet", l)
		}
	}
	if c := Score(got, len(evidence), rank.Grade{Tier: rank.TierHigh}, false); c.Coverage != 1 {
		t.Fatalf("every quoted sentence carries a citation: %+v", c)
	}
	cn := Extractive{}.Compose("年假每年多少天", []rank.Evidence{ev("手册.md", "员工福利。年假每年 20 天，未休年假可顺延一年。食堂中午开放。", 0.8)})
	if !strings.Contains(cn, "年假每年 20 天，") && !strings.Contains(cn, "年假每年 20 天") || !strings.Contains(cn, "[1]") || strings.Contains(cn, "食堂") {
		t.Fatalf("Chinese extractive answer:\n%s", cn)
	}
	if got := (Extractive{}).Compose("anything", nil); got != NoEvidenceAnswer || strings.Contains(strings.ToLower(got), "does not exist") {
		t.Fatalf("no-evidence answer %q", got)
	}
	// Evidence found by meaning only (no shared term): nothing is quoted, and the answer says why.
	if sem := (Extractive{}).Compose("vacation entitlement", evidence[:1]); sem != NoMatchAnswer {
		t.Fatalf("semantic-only evidence: %s", sem)
	}
	// A sentence sharing one common word with the question is not quoted next to one that answers it.
	weak := Extractive{}.Compose("How many days of paid annual leave do full-time employees get?", []rank.Evidence{
		ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 0.9),
		ev("faq.html", "Changes take effect within one business day of our email confirmation.", 0.5)})
	if strings.Contains(weak, "business day") || !strings.Contains(weak, "20 days") {
		t.Fatalf("weak sentence quoted:\n%s", weak)
	}
	// Limits: at most PerSource from one source; another source only when it adds a question term.
	many := ev("long.md", strings.Repeat("Annual leave rules apply to everyone here. ", 1)+"Annual leave is booked in the portal. Annual leave needs approval by a lead. Annual leave expires after a year.", 1)
	got = Extractive{MaxSentences: 3, PerSource: 2}.Compose("annual leave", []rank.Evidence{many, evidence[1]})
	if n := strings.Count(got, "[1]"); n != 2 || strings.Contains(got, "[2]") {
		t.Fatalf("want 2 quotes from source 1 (PerSource 2) and none from source 2, which adds nothing:\n%s", got)
	}
	got = Extractive{MaxSentences: 3, PerSource: 2}.Compose("annual leave for part-time staff", []rank.Evidence{many, evidence[1]})
	if !strings.Contains(got, "Part-time employees receive annual leave in proportion to their hours. [2]") {
		t.Fatalf("source 2 adds the question's part-time and must be quoted:\n%s", got)
	}
}

func TestTokens(t *testing.T) {
	for _, s := range []string{"", "one", "a b  c\n- d [1]", "年假 20 天[1]。", OfflineNotice} {
		toks := Tokens(s)
		if strings.Join(toks, "") != s {
			t.Fatalf("Tokens(%q) = %q does not rebuild the input", s, toks)
		}
	}
	if toks := Tokens("年假"); len(toks) != 2 {
		t.Fatalf("CJK characters stream one at a time: %q", toks)
	}
}

func FuzzCompose(f *testing.F) {
	f.Add("leave days", "Employees get 20 days. [3] Something else entirely here.")
	f.Add("年假", "年假每年 20 天。")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, q, body string) {
		evidence := []rank.Evidence{ev("a", body, 1), ev("b", q+" "+body, 0.5)}
		got := Extractive{}.Compose(q, evidence)
		if !utf8.ValidString(got) && utf8.ValidString(q) && utf8.ValidString(body) {
			t.Fatalf("invalid UTF-8 from valid input: %q", got)
		}
		if _, invalid := Citations(got, len(evidence)); invalid != 0 {
			t.Fatalf("invalid citation in %q", got)
		}
	})
}

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
