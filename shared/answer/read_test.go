package answer

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/text"
)

// fakeDocuments holds documents as their chunks, in order.
type fakeDocuments struct {
	chunks map[string][]rag.Chunk
	names  map[string]string
}

func (f *fakeDocuments) ListChunks(_ context.Context, tenant, id string) ([]rag.Chunk, error) {
	var out []rag.Chunk
	for _, c := range f.chunks[id] {
		if c.Tenant == tenant {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeDocuments) GetDocument(_ context.Context, tenant, id string) (rag.Document, error) {
	if _, ok := f.names[id]; !ok {
		return rag.Document{}, rag.Errorf("fake", rag.KindNotFound, "no document %s", id)
	}
	return rag.Document{ID: id, Tenant: tenant, FileName: f.names[id]}, nil
}

// longDocument is a generated handbook of n sections, each a parent and a child chunk whose first
// sentence names its section ("Section 17 covers topic17."), the sizes varying so that an even sample
// of them does not fit its budget as is.
func longDocument(id, kb string, n int) []rag.Chunk {
	var out []rag.Chunk
	for i := range n {
		body := fmt.Sprintf("## Section %d\n\nSection %d covers topic%d in this handbook. ", i+1, i+1, i+1) +
			strings.Repeat(fmt.Sprintf("Further detail on topic%d follows the policy of the company. ", i+1), 3+i%7)
		for _, level := range []string{rag.LevelParent, rag.LevelChild} {
			out = append(out, rag.Chunk{ID: fmt.Sprintf("%s_%s_%03d", id, level, i), Tenant: "acme", KBID: kb, DocumentID: id, Level: level,
				Index: i, Content: body, Chapter: fmt.Sprintf("Handbook > Section %d", i+1)})
		}
	}
	return out
}

// failRetriever fails the test when searched: the reading must not search.
type failRetriever struct{ t *testing.T }

func (f failRetriever) Retrieve(context.Context, retrieve.Query) (*retrieve.Result, error) {
	f.t.Error("the reading searched instead of reading the document")
	return &retrieve.Result{}, nil
}

// eventRecorder keeps each event's payload as JSON.
type eventRecorder struct{ events map[string][]json.RawMessage }

func (r *eventRecorder) emit(name string, v any) error {
	if r.events == nil {
		r.events = map[string][]json.RawMessage{}
	}
	b, err := json.Marshal(v)
	r.events[name] = append(r.events[name], b)
	return err
}

// Issue #20 item 6: a summary question over a selected 60-section document reads its passages in
// order, evenly sampled over beginning, middle and end, within the token budget; each quote says which
// part of the document it comes from, and the search is never run.
func TestReadingSummary(t *testing.T) {
	docs := &fakeDocuments{chunks: map[string][]rag.Chunk{"doc_h": longDocument("doc_h", "kb_1", 60)}, names: map[string]string{"doc_h": "handbook.md"}}
	p := &Pipeline{Retriever: failRetriever{t}, Documents: docs, ReadTokens: 1200}
	for _, q := range []string{"Summarise this document", "What is this document about?", "总结这份文档"} {
		t.Run(q, func(t *testing.T) {
			var rec eventRecorder
			done, err := p.Run(context.Background(), Request{Tenant: "acme", KBIDs: []string{"kb_1"}, DocumentIDs: []string{"doc_h"}, Question: q}, rec.emit)
			if err != nil {
				t.Fatal(err)
			}
			var route RoutingEvent
			_ = json.Unmarshal(rec.events[EventRouting][0], &route)
			var retrieval RetrievalEvent
			_ = json.Unmarshal(rec.events[EventRetrieval][0], &retrieval)
			if done.Path != PathSelectedDoc || route.Reason != "SELECTED_DOC_READ" || retrieval.Read == nil {
				t.Fatalf("path %s, route %+v, read %+v", done.Path, route, retrieval.Read)
			}
			read := retrieval.Read
			if read.Passages != 60 || read.Sampled < 3 || read.Sampled >= 60 || read.Tokens > read.BudgetTokens || read.BudgetTokens != 1200 {
				t.Fatalf("read stats %+v", read)
			}
			// the sources are the sample in document order, from the first section to the last,
			// evenly spaced, with sequential scores
			var idx []int
			for i, s := range done.Sources {
				if s.Part == nil || s.Part.Of != 60 || s.DocumentID != "doc_h" {
					t.Fatalf("source %d: %+v", i, s)
				}
				idx = append(idx, s.Part.Index)
				if i > 0 && s.Score >= done.Sources[i-1].Score {
					t.Errorf("scores are not sequential: %v then %v", done.Sources[i-1].Score, s.Score)
				}
			}
			if idx[0] != 1 || idx[len(idx)-1] != 60 {
				t.Fatalf("the beginning and the end are not both read: %v", idx)
			}
			gaps := map[int]bool{}
			wheres := map[string]bool{}
			for i, s := range done.Sources {
				wheres[s.Part.Where] = true
				if i > 0 {
					gaps[idx[i]-idx[i-1]] = true
				}
			}
			if len(gaps) > 2 || !wheres["beginning"] || !wheres["middle"] || !wheres["end"] {
				t.Fatalf("not an even sample over beginning, middle and end: %v (%v)", idx, wheres)
			}
			// the answer quotes the first, a middle and the last section in order, each under its part
			zh := strings.Contains(q, "总结")
			partRe := regexp.MustCompile(`part (\d+) of 60, (beginning|middle|end): Handbook > Section (\d+) \(handbook.md\)`)
			if zh {
				partRe = regexp.MustCompile(`第 (\d+) 部分（共 60 部分，(开头|中部|结尾)）：Handbook > Section (\d+) \(handbook.md\)`)
			}
			parts := partRe.FindAllStringSubmatch(done.Answer, -1)
			if len(parts) < 3 || parts[0][1] != "1" || parts[len(parts)-1][1] != "60" {
				t.Fatalf("parts named in the answer: %v\n%s", parts, done.Answer)
			}
			last := 0
			for _, m := range parts {
				var n int
				fmt.Sscan(m[1], &n)
				if n <= last || m[1] != m[3] {
					t.Fatalf("parts out of order or mislabelled: %v", parts)
				}
				last = n
			}
			for _, want := range []string{"Section 1 covers topic1 in this handbook. [1]", fmt.Sprintf("Section 60 covers topic60 in this handbook. [%d]", len(done.Sources))} {
				if !strings.Contains(done.Answer, want) {
					t.Errorf("the answer lacks %q:\n%s", want, done.Answer)
				}
			}
			var warn ConfidenceWarningEvent
			if ws := rec.events[EventConfidenceWarning]; len(ws) == 1 {
				_ = json.Unmarshal(ws[0], &warn)
			}
			if done.Confidence.Band == BandHigh || !strings.HasPrefix(done.Confidence.Reason, readingReason) || warn.Message != readingWarning {
				t.Errorf("a summary's confidence %+v, warning %+v", done.Confidence, warn)
			}
			if done.Abstained || len(done.Claims) == 0 {
				t.Errorf("abstained %v, claims %d", done.Abstained, len(done.Claims))
			}
			for _, c := range done.Claims {
				if !c.Supported {
					t.Errorf("a quote is not supported by the passage it cites: %+v", c)
				}
			}
		})
	}
}

// sampleEvenly keeps every passage when they fit, else an even spread within the budget, first and
// last included, and cuts passages to their share when the spread still does not fit.
func TestSampleEvenly(t *testing.T) {
	var chunks []rag.Chunk
	for _, c := range longDocument("d", "kb", 200) {
		if c.Level == rag.LevelChild {
			chunks = append(chunks, c)
		}
	}
	all, cut := sampleEvenly(chunks[:5], 100000)
	if len(all) != 5 || cut {
		t.Fatalf("a document that fits is read whole: %d passages, cut %v", len(all), cut)
	}
	for _, budget := range []int{200, 1000, 3000, 6000} {
		got, _ := sampleEvenly(chunks, budget)
		tokens := 0
		for _, s := range got {
			tokens += text.EstimateTokens(s.text)
		}
		if tokens > budget || len(got) < 3 || got[0].index != 0 || got[len(got)-1].index != 199 {
			t.Errorf("budget %d: %d passages, %d tokens, first %d last %d", budget, len(got), tokens, got[0].index, got[len(got)-1].index)
		}
		for k := 2; k < len(got); k++ {
			if d1, d2 := got[k].index-got[k-1].index, got[k-1].index-got[k-2].index; d1-d2 > 1 || d2-d1 > 1 {
				t.Errorf("budget %d: uneven gaps %d and %d", budget, d2, d1)
			}
		}
	}
}

// A specific question about selected documents still searches, within them; a selected document
// outside the request's knowledge bases is never read; a runtime without the port searches.
func TestReadingScope(t *testing.T) {
	docs := &fakeDocuments{chunks: map[string][]rag.Chunk{"doc_h": longDocument("doc_h", "kb_1", 10)}, names: map[string]string{"doc_h": "handbook.md"}}
	evidence := []rank.Evidence{ev("handbook.md", "Section 3 covers topic3 in this handbook.", 0.9)}
	fr := &fakeRetriever{res: &retrieve.Result{Evidence: evidence, Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.9}}}
	p := &Pipeline{Retriever: fr, Documents: docs}
	done, err := p.Run(context.Background(), Request{Tenant: "acme", DocumentIDs: []string{"doc_h"}, Question: "Which section covers topic3?"}, (&recorder{}).emit)
	if err != nil || done.Path != PathSelectedDoc || len(fr.got.Filter.DocumentIDs) != 1 || done.Sources[0].Part != nil {
		t.Fatalf("a specific question: %v %+v, searched %+v", err, done, fr.got)
	}
	done, err = p.Run(context.Background(), Request{Tenant: "acme", KBIDs: []string{"kb_other"}, DocumentIDs: []string{"doc_h"}, Question: "Summarise this document"}, (&recorder{}).emit)
	if err != nil || len(done.Sources) != 0 || strings.Contains(done.Answer, "topic") {
		t.Fatalf("a document outside the request's knowledge bases was read: %v %+v", err, done)
	}
	done, err = p.Run(context.Background(), Request{Tenant: "other", DocumentIDs: []string{"doc_h"}, Question: "Summarise this document"}, (&recorder{}).emit)
	if err != nil || len(done.Sources) != 0 {
		t.Fatalf("another tenant's document was read: %v %+v", err, done)
	}
	fr.got = retrieve.Query{}
	p.Documents = nil
	done, err = p.Run(context.Background(), Request{Tenant: "acme", DocumentIDs: []string{"doc_h"}, Question: "Summarise this document"}, (&recorder{}).emit)
	if err != nil || len(fr.got.Filter.DocumentIDs) != 1 {
		t.Fatalf("without the port the summary is searched within the selection: %v %+v", err, fr.got)
	}
}

// With a model, the prompt lists the sampled passages in order, each with its part, and asks for the
// parts; the answer ends with where each cited passage comes from, streamed like the answer.
func TestReadingWithModel(t *testing.T) {
	docs := &fakeDocuments{chunks: map[string][]rag.Chunk{"doc_h": longDocument("doc_h", "kb_1", 30)}, names: map[string]string{"doc_h": "handbook.md"}}
	model := &fakeLLM{deltas: []string{"The handbook opens with topic1 [1] ", "and closes with topic30 [3]."}}
	p := &Pipeline{Retriever: failRetriever{t}, Documents: docs, LLM: model, Model: "main", ReadTokens: 300}
	var tokens strings.Builder
	emit := func(name string, v any) error {
		if te, ok := v.(TokenEvent); ok {
			tokens.WriteString(te.Text)
		}
		return nil
	}
	done, err := p.Run(context.Background(), Request{Tenant: "acme", DocumentIDs: []string{"doc_h"}, Question: "Give me an overview of this document"}, emit)
	if err != nil {
		t.Fatal(err)
	}
	user := model.got.Messages[len(model.got.Messages)-1].Content
	sys := model.got.Messages[0].Content
	if !strings.Contains(sys, "say which part each cited passage comes from") ||
		!strings.Contains(user, "[1] handbook.md - Handbook > Section 1 (part 1 of 30, beginning: Handbook > Section 1)") ||
		!strings.Contains(user, "(part 30 of 30, end: Handbook > Section 30)") {
		t.Fatalf("prompt:\n%s\n%s", sys, user)
	}
	for _, want := range []string{"Where the cited passages come from:", "- (1) handbook.md — part 1 of 30, beginning", "- (3) handbook.md — part 30 of 30, end"} {
		if !strings.Contains(done.Answer, want) {
			t.Errorf("the answer lacks %q:\n%s", want, done.Answer)
		}
	}
	if tokens.String() != done.Answer {
		t.Errorf("the streamed tokens and done's answer differ:\n%q\n%q", tokens.String(), done.Answer)
	}
}

// BenchmarkReading measures the SELECTED_DOC reading of a 200-section document (listing its chunks
// from memory, the even sample, the compression, the offline summary and its checks) against the
// standard path's answer stage over eight retrieved passages, in the same run: what a summary question
// costs beside a specific one, less the SQL read (one indexed query by document).
func BenchmarkReading(b *testing.B) {
	docs := &fakeDocuments{chunks: map[string][]rag.Chunk{"doc_h": longDocument("doc_h", "kb_1", 200)}, names: map[string]string{"doc_h": "handbook.md"}}
	req := Request{Tenant: "acme", DocumentIDs: []string{"doc_h"}, Question: "Summarise this document"}
	cal := ShippedCalibrations()
	b.Run("standard", func(b *testing.B) {
		ev := benchEvidence()
		g := rank.Grade{Tier: rank.TierHigh, Coverage: 0.8}
		for b.Loop() {
			Assess(benchQ, Extractive{}.Compose(benchQ, ev), "extractive", ev, g, false, cal)
		}
	})
	b.Run("reading", func(b *testing.B) {
		p := &Pipeline{Documents: docs}
		for b.Loop() {
			st := p.newState(req)
			st.Reading = true
			res, err := p.read(context.Background(), st)
			if err != nil {
				b.Fatal(err)
			}
			st.Result = res
			answer := p.Answerer.Summarise(st.Question, res.Evidence, st.partLabels())
			c, claims := Assess(st.Question, answer, "extractive", res.Evidence, res.Grade, false, cal)
			readingConfidence(c, claims)
		}
	})
}
