package answer

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/text"
)

// The SELECTED_DOC reading (DESIGN.md step 5, seed 000 路径 A 文档直读): a summary or overview question
// about documents the user selected is not retrieved, since a search finds the few passages that match
// "summarise" rather than the document. The selected documents' passages are read in chunk order,
// sampled evenly so that the beginning, the middle and the end are all covered, scored in reading order
// and cut to the token budget; each passage keeps where it lies in its document (Part), which the
// answer says beside each quote. A specific question about selected documents still retrieves within
// them.

// Documents reads a document's chunks in order (sqldb.DB is one): the port of the SELECTED_DOC reading.
type Documents interface {
	ListChunks(ctx context.Context, tenant, docID string) ([]rag.Chunk, error)
	GetDocument(ctx context.Context, tenant, id string) (rag.Document, error)
}

// Part says where a passage read in order lies in its document: the Index-th of Of passages (from 1),
// in its beginning, middle or end, under Heading (the chunk's heading path, when it has one).
type Part struct {
	Index   int    `json:"index"`
	Of      int    `json:"of"`
	Where   string `json:"where"` // "beginning", "middle" or "end"
	Heading string `json:"heading,omitempty"`
}

// Label is the part in words, in the question's language: "part 3 of 40, beginning: Leave policy",
// "第 3 部分（共 40 部分，开头）：年假".
func (p Part) Label(zh bool) string {
	if zh {
		where := map[string]string{"beginning": "开头", "middle": "中部", "end": "结尾"}[p.Where]
		s := fmt.Sprintf("第 %d 部分（共 %d 部分，%s）", p.Index, p.Of, where)
		if p.Heading != "" {
			s += "：" + p.Heading
		}
		return s
	}
	s := fmt.Sprintf("part %d of %d, %s", p.Index, p.Of, p.Where)
	if p.Heading != "" {
		s += ": " + p.Heading
	}
	return s
}

// ReadStats is what the reading took: the selected documents read, their passages, how many were
// sampled, the token budget and the tokens the sample holds after compression. It is in the
// retrieval event of the SELECTED_DOC reading.
type ReadStats struct {
	Documents    int  `json:"documents"`
	Passages     int  `json:"passages"`
	Sampled      int  `json:"sampled"`
	BudgetTokens int  `json:"budget_tokens"`
	Tokens       int  `json:"tokens"`
	Compressed   bool `json:"compressed"` // a sampled passage was cut to its share of the budget
}

// ReadTokens is the default token budget of the passages a SELECTED_DOC reading keeps (and at most half
// of the prompt's ceiling).
const ReadTokens = 3000

// reSummary matches a question that asks about a document as a whole rather than for a fact in it.
var reSummary = regexp.MustCompile(`(?i)\b(summar(y|ise|ize|ised|ized|ising|izing)|overview|outline|gist|tl;?dr|key points|main points|recap)\b` +
	`|\bwhat('s| is| are)\b.*\b(this|the|these)\s+(document|file|doc|paper|report|pdf|text)s?\b.*\babout\b` +
	`|\bwhat (does|do) (this|the|these) (document|file|doc|paper|report)s? (say|cover|contain)\b` +
	`|总结|概括|摘要|概述|梗概|要点|主要内容|大意|讲了什么|讲的是什么|讲什么|说了什么|关于什么|写了什么`)

// SummaryQuestion reports whether q asks for a summary or an overview of a document ("summarise this
// document", "总结这份文档", "what is this document about").
func SummaryQuestion(q string) bool { return reSummary.MatchString(q) }

// reads reports whether a routed question takes the reading: selected documents, a summary question,
// and a port to read them with.
func (p *Pipeline) reads(st *State) bool {
	return st.selected() && p.Documents != nil && SummaryQuestion(st.Question)
}

// readBudget is the reading's token budget: ReadTokens (or the pipeline's), at most half the prompt's
// ceiling, so the question, the instructions and the answer fit beside it.
func (p *Pipeline) readBudget() int {
	b := p.ReadTokens
	if b <= 0 {
		b = ReadTokens
	}
	ceiling := p.ContextTokens
	if ceiling <= 0 {
		ceiling = 6000
	}
	return min(b, ceiling/2)
}

// read is the retrieval step of the reading: the selected documents the request may read (scopeDocs:
// the selection within any metadata filter; a document outside the request's knowledge bases is
// skipped as if absent), each given an equal share of the budget, in the order they were selected.
func (p *Pipeline) read(ctx context.Context, st *State) (*retrieve.Result, error) {
	t := time.Now()
	req := st.Request
	var docs []docPassages
	for _, id := range scopeDocs(req) {
		chunks, err := p.Documents.ListChunks(ctx, req.Tenant, id)
		if err != nil {
			return nil, err
		}
		var children []rag.Chunk
		for _, c := range chunks {
			if c.Level == rag.LevelChild && strings.TrimSpace(c.Content) != "" && (len(req.KBIDs) == 0 || slices.Contains(req.KBIDs, c.KBID)) {
				children = append(children, c)
			}
		}
		if len(children) == 0 {
			continue
		}
		doc, err := p.Documents.GetDocument(ctx, req.Tenant, id)
		if err != nil && !rag.Is(err, rag.KindNotFound) {
			return nil, err
		}
		docs = append(docs, docPassages{name: doc.FileName, chunks: children})
	}
	budget := p.readBudget()
	stats := &ReadStats{Documents: len(docs), BudgetTokens: budget}
	res := &retrieve.Result{StageMS: map[string]int64{}, Degraded: []string{}}
	st.Parts = map[string]Part{}
	for _, d := range docs {
		stats.Passages += len(d.chunks)
		picked, compressed := sampleEvenly(d.chunks, budget/len(docs))
		stats.Compressed = stats.Compressed || compressed
		for _, s := range picked {
			c := s.chunk
			res.Evidence = append(res.Evidence, rank.Evidence{ChunkID: c.ID, ParentID: c.ParentID, DocumentID: c.DocumentID, KBID: c.KBID,
				FileName: d.name, Chapter: c.Chapter, Page: c.Page, Text: s.text, ChildText: s.text})
			st.Parts[c.ID] = Part{Index: s.index + 1, Of: len(d.chunks), Where: where(s.index, len(d.chunks)), Heading: lang.OneLine(c.Chapter)}
			stats.Tokens += text.EstimateTokens(s.text)
		}
	}
	// sequential scores: the reading order is the rank order, first passage first
	for i := range res.Evidence {
		res.Evidence[i].Score = math.Round(1000*(1-float64(i)/float64(len(res.Evidence)))) / 1000
	}
	stats.Sampled = len(res.Evidence)
	res.Reranked = res.Evidence
	res.Grade = rank.Grade{Tier: rank.TierHigh, TopScore: 1, Coverage: 1,
		Reason: "the selected documents are read in order, not searched: every passage is from them"}
	if len(res.Evidence) == 0 {
		res.Grade = rank.Grade{Tier: rank.TierLow, NoEvidence: true, Reason: "the selected documents have no passage this request may read"}
	}
	res.StageMS["read"] = time.Since(t).Milliseconds()
	st.Read = stats
	return res, nil
}

type docPassages struct {
	name   string
	chunks []rag.Chunk
}

// sampled is one passage of a reading: its chunk, its place among the document's passages, and its
// text (cut to its share of the budget when the sample would not fit).
type sampled struct {
	chunk rag.Chunk
	index int
	text  string
}

// sampleEvenly keeps a document's passages within budget tokens: all of them when they fit; else as
// many as fit at their average size, spread evenly from the first to the last (both always kept, so
// the beginning, the middle and the end are read), then each cut to an equal share of the budget at a
// sentence end when they still do not fit (passages differ in size). At least three passages are kept
// (head, middle, tail) however small the budget.
func sampleEvenly(chunks []rag.Chunk, budget int) ([]sampled, bool) {
	tokens := make([]int, len(chunks))
	total := 0
	for i, c := range chunks {
		tokens[i] = max(1, text.EstimateTokens(c.Content))
		total += tokens[i]
	}
	var out []sampled
	if total <= budget {
		for i, c := range chunks {
			out = append(out, sampled{chunk: c, index: i, text: c.Content})
		}
		return out, false
	}
	n := max(3, min(len(chunks), budget*len(chunks)/total))
	n = min(n, len(chunks))
	used := 0
	for k := range n {
		i := 0
		if n > 1 {
			i = int(math.Round(float64(k) * float64(len(chunks)-1) / float64(n-1)))
		}
		out = append(out, sampled{chunk: chunks[i], index: i, text: chunks[i].Content})
		used += tokens[i]
	}
	if used <= budget {
		return out, false
	}
	share := max(16, budget/n)
	compressed := false
	for k := range out {
		if text.EstimateTokens(out[k].text) > share {
			out[k].text = cutAtSentence(out[k].text, share)
			compressed = true
		}
	}
	return out, compressed
}

// cutAtSentence shortens s to about n tokens, ending at the last sentence end inside the cut when
// there is one past its first half.
func cutAtSentence(s string, n int) string {
	cut := []rune(cutToTokens(s, n))
	for i := len(cut) - 1; i > len(cut)/2; i-- {
		if strings.ContainsRune(".!?。！？\n", cut[i]) {
			return strings.TrimSpace(string(cut[:i+1]))
		}
	}
	return strings.TrimSpace(string(cut))
}

// where names the third of the document passage i of n lies in.
func where(i, n int) string {
	switch {
	case n <= 1 || 3*i < n:
		return "beginning"
	case 3*i < 2*n:
		return "middle"
	}
	return "end"
}

// partLabels are the evidence's parts in words, in the question's language ("" for a passage that
// was not read in order).
func (st *State) partLabels() []string {
	zh := lang.HasCJK(st.Question)
	out := make([]string, len(st.Result.Evidence))
	for i, e := range st.Result.Evidence {
		if p, ok := st.Parts[e.ChunkID]; ok {
			out[i] = p.Label(zh)
		}
	}
	return out
}

// summarise is the extractive answer of the reading: the reader's summary by quotation, each quote
// under the part of the document it comes from. It never abstains: the user chose the documents.
func (p *Pipeline) summarise(st *State, ts *tokenStream) error {
	done := st.Done
	done.Answerer = "extractive"
	if err := ts.sendAll(p.Answerer.Summarise(st.Question, st.Result.Evidence, st.partLabels())); err != nil {
		return err
	}
	done.Answer = ts.text.String()
	return nil
}

// citeParts adds to a model's answer on the reading where each cited passage comes from, one line per
// cited passage, streamed like the answer: the model is asked to say it, this makes sure it is said.
func (p *Pipeline) citeParts(st *State, ts *tokenStream) error {
	used, _ := Citations(st.Done.Answer, len(st.Result.Evidence))
	if len(used) == 0 {
		return nil
	}
	labels := st.partLabels()
	zh := lang.HasCJK(st.Question)
	var b strings.Builder
	b.WriteString("\n\n")
	if zh {
		b.WriteString("引用段落的位置：")
	} else {
		b.WriteString("Where the cited passages come from:")
	}
	slices.Sort(used)
	for _, n := range used {
		if labels[n-1] != "" {
			fmt.Fprintf(&b, "\n- (%d) %s — %s", n, st.Result.Evidence[n-1].FileName, labels[n-1])
		}
	}
	before := ts.text.Len()
	if err := ts.sendAll(b.String()); err != nil {
		return err
	}
	st.Done.Answer += ts.text.String()[before:]
	return nil
}

// partsByChunk is the prompt's part labels by chunk id (nil off the reading).
func (st *State) partsByChunk() map[string]string {
	if !st.Reading {
		return nil
	}
	zh := lang.HasCJK(st.Question)
	out := map[string]string{}
	for id, p := range st.Parts {
		out[id] = p.Label(zh)
	}
	return out
}

// readingReason opens the confidence reason of a summary read in order (warning tells it by this).
const readingReason = "a summary of the selected documents read in order"

// readingConfidence replaces a reading's calibrated estimate: the calibrations are fitted on questions
// answered by a fact ("the answer holds 0% of the question's terms" says nothing about a summary), so
// a summary's score is the share of its cited sentences found in the passages they cite, capped below
// HIGH as every unmeasured answer is (UncalibratedCap).
func readingConfidence(c Confidence, checked []Claim) Confidence {
	supported := 0
	for _, cl := range checked {
		if cl.Supported {
			supported++
		}
	}
	c.Calibrated, c.Features = false, nil
	c.Score = 0
	if len(checked) > 0 {
		c.Score = math.Round(1000*UncalibratedCap*float64(supported)/float64(len(checked))) / 1000
	}
	c.Band = Band(c.Score)
	c.Reason = fmt.Sprintf("%s: %d of %d cited sentences found in the passages they cite; no calibration covers summaries, so it is never HIGH",
		readingReason, supported, len(checked))
	return c
}

// readingWarning is the confidence warning of a summary read in order.
const readingWarning = "A summary of passages sampled evenly from the selected documents: what lies between them is not in it. Check the cited parts before relying on it."
