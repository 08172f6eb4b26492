// Package answer turns a question into a grounded, cited answer: the question pipeline that drives the
// chat event stream (DESIGN.md section 7), the offline extractive reader (section 9), the model's prompt,
// citation parsing, claim checks and the calibrated confidence (section 6 step 14).
//
// Pipeline.Run is a sequence of named steps (steps.go) over one State that marshals to JSON:
// shortCircuit, lookup (semantic cache), understand, route, hyde, retrieve (the agent's loop, the
// sub-questions, or the retrieval chain with its rerank and grade), compensate (web), composePrompt,
// announce, generate, verify (citations, claims, confidence), remember (long-term memory) and cache.
// Each step reads what the earlier ones wrote and can be tested alone from a State. Every event has a
// typed payload (events.go) whose JSON is the wire contract. Run returns the final Done without
// storing or sending it: the edge (HTTP handler, CLI, Lambda) stores the message, then sends done.
package answer

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/calibrate"
	"github.com/docmind/docmind/shared/answer/claims"
	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/answer/reader"
	"github.com/docmind/docmind/shared/rank"
)

// Source is one numbered source as the client sees it: [n] in the answer refers to Sources[n-1].
type Source struct {
	N          int     `json:"n"`
	DocumentID string  `json:"document_id"`
	KBID       string  `json:"kb_id"`
	FileName   string  `json:"file_name,omitempty"`
	Chapter    string  `json:"chapter,omitempty"`
	Page       int     `json:"page,omitempty"`
	ChunkID    string  `json:"chunk_id"`
	Snippet    string  `json:"snippet"`
	Score      float64 `json:"score"`
	Cited      bool    `json:"cited"`
	// Served lists the sub-questions this source answers (decomposed questions only).
	Served []string `json:"served,omitempty"`
	// Part says where the passage lies in its document, on the SELECTED_DOC reading only.
	Part *Part `json:"part,omitempty"`
}

// SnippetRunes bounds a source's snippet.
const SnippetRunes = 240

// Sources numbers the evidence in order (the order the prompt or the extractive answerer sees).
func Sources(ev []rank.Evidence) []Source {
	out := make([]Source, len(ev))
	for i, e := range ev {
		out[i] = Source{N: i + 1, DocumentID: e.DocumentID, KBID: e.KBID, FileName: e.FileName, Chapter: e.Chapter,
			Page: e.Page, ChunkID: e.ChunkID, Snippet: lang.Truncate(lang.OneLine(e.ChildText), SnippetRunes), Score: e.Score}
		if out[i].Snippet == "" {
			out[i].Snippet = lang.Truncate(lang.OneLine(e.Text), SnippetRunes)
		}
	}
	return out
}

// Bands.
const (
	BandHigh   = "HIGH"
	BandMedium = "MEDIUM"
	BandLow    = "LOW"
)

// Confidence is the answer's confidence. Score estimates the probability that the answer is right
// when Calibrated (see Assess); otherwise it is the uncalibrated Score formula.
type Confidence struct {
	Score    float64 `json:"score"`
	Band     string  `json:"band"`
	Coverage float64 `json:"citation_coverage"` // share of the answer's sentences that carry a valid citation
	Signal   float64 `json:"retrieval_signal"`  // rerank top score in [0,1], or the grader's tier when no reranker scored
	Invalid  int     `json:"invalid_citations"`
	// Supported is the share of cited sentences that their sources support (done.claims).
	Supported float64 `json:"claims_supported"`
	// Calibrated says Score comes from a calibration fitted for this answerer on evaluation data.
	Calibrated bool `json:"calibrated"`
	// Reason says in words what drove the score.
	Reason string `json:"reason,omitempty"`
	// Features are the calibration's inputs (nil when the answer cites nothing), for evaluation.
	Features *Features `json:"-"`
}

// Assess scores an answer: its claims are checked against the passages they cite, then, when a
// calibration exists for the answerer, the features (FeaturesOf) are mapped to the probability that
// the answer is right; without one, the uncalibrated Score formula stands in (Calibrated false). Either
// way the result is multiplied by the share of supported claims, and a cited number missing from its
// source caps it below HIGH. No evidence or no valid citation is LOW 0, as in Score.
func Assess(question, answer, answerer string, ev []rank.Evidence, g rank.Grade, rerankKnown bool, cal Calibrations) (Confidence, []Claim) {
	c := Score(answer, len(ev), g, rerankKnown)
	checked := claims.Check(answer, ev)
	c.Supported = claims.Supported(checked)
	if used, _ := Citations(answer, len(ev)); len(ev) == 0 || g.NoEvidence || len(used) == 0 {
		c.Reason = "no valid citation of a retrieved passage"
		if len(ev) == 0 || g.NoEvidence {
			c.Reason = "nothing was retrieved"
		}
		return c, checked
	}
	f := calibrate.FeaturesOf(question, answer, ev, g, rerankKnown, checked)
	c.Features = &f
	if k := calibrate.For(cal, answerer, f.Vector()); k != nil {
		c.Score = math.Max(0, k.Predict(f.Vector())-0.05*float64(c.Invalid))
		c.Calibrated = true
		c.Reason = fmt.Sprintf("estimated from %d %s answers of the evaluation data, %.0f%% of them right: %s", k.N, k.Answerer, 100*k.Positive, k.Explain(f))
		if k.FittedOn != "" { // which data: an English table lookup rated from multi-hop Wikipedia questions should say so
			c.Reason = fmt.Sprintf("estimated from the %s answers of %s, %.0f%% of them right: %s", k.Answerer, k.FittedOn, 100*k.Positive, k.Explain(f))
			if strings.Count(k.FittedOn, " answers)") > 1 {
				// the fit gives each dataset of a language the same total weight (docmind eval --calibrate),
				// and the share right is weighted the same way: say so, or 56% reads as a count
				c.Reason = fmt.Sprintf("estimated from the %s answers of %s, weighted by dataset, %.0f%% of them right: %s", k.Answerer, k.FittedOn, 100*k.Positive, k.Explain(f))
			}
		}
	} else {
		c.Score, c.Reason = uncalibrated(c, answerer, calibrate.Key(answerer, f.Vector()))
	}
	var missing []string
	numberMissing := false
	for _, cl := range checked {
		if !cl.Supported {
			missing = append(missing, cl.Reason)
		}
		numberMissing = numberMissing || cl.NumberMissing
	}
	if len(missing) > 0 {
		c.Score *= c.Supported
		c.Reason += fmt.Sprintf("; %d of %d cited sentences unsupported (%s)", len(missing), len(checked), missing[0])
	}
	if numberMissing {
		c.Score = math.Min(c.Score, 0.84) // a claim citing a passage that lacks its number is never HIGH
	}
	if len(checked) <= 1 && reader.OverviewQuestion(question) {
		// "tell me about annual leave" answered by one line: a fact about the topic, not the overview
		// asked for, however well that line matches ("Annual leave: 20 days" was HIGH 0.98)
		c.Score = math.Min(c.Score, OverviewCap)
		c.Reason += "; an overview question answered from one line: the documents may say more about it"
	}
	if quotesCode(checked) {
		// code or a run of identifiers is quoted, not explained: whether it answers is for the reader
		c.Score = math.Min(c.Score, 0.84)
		c.Reason += "; the answer quotes code, not prose"
	}
	c.Score = math.Round(c.Score*1000) / 1000
	c.Band = Band(c.Score)
	return c, checked
}

// OverviewCap is the highest score of an answer to an overview question ("tell me about X", a few
// words that ask nothing) that rests on one cited line: below HIGH, as no calibration has measured how
// often one line answers such a question.
const OverviewCap = 0.84

// UncalibratedCap is the highest score an answer gets without a calibration for its answerer and
// language: HIGH means "right at least 85% of the time", and nothing has measured how often an
// uncalibrated answerer is right (the old formula gave every cited model answer 0.95).
const UncalibratedCap = 0.84

// uncalibrated is the Score formula's estimate capped below HIGH, and the reason, saying how to get a
// calibration for that answerer.
func uncalibrated(c Confidence, answerer, key string) (float64, string) {
	why := fmt.Sprintf("no calibration for the %s answerer (%s)", answerer, key)
	if answerer == "llm" {
		why = fmt.Sprintf("no calibration for model answers yet (%s): run docmind eval --variant answer --calibrate with the model configured", key)
	}
	reason := fmt.Sprintf("uncalibrated, %s; citation coverage %.0f%%, retrieval signal %.2f", why, 100*c.Coverage, c.Signal)
	if c.Score > UncalibratedCap {
		reason += fmt.Sprintf(", capped at %.2f (never HIGH uncalibrated)", UncalibratedCap)
	}
	return math.Min(c.Score, UncalibratedCap), reason
}

// Band maps a score to HIGH (>= 0.85), MEDIUM (>= 0.60) or LOW.
func Band(score float64) string {
	switch {
	case score >= 0.85:
		return BandHigh
	case score >= 0.60:
		return BandMedium
	}
	return BandLow
}

// Score computes confidence from the two signals DESIGN.md names, weighted equally: citation coverage
// of the answer and the retrieval signal. The rerank top score is used when a reranker produced it;
// otherwise the grader's tier stands in (HIGH 0.9, AMBIGUOUS 0.65, LOW 0.3), because lexical scores
// are not calibrated probabilities. The score is capped at the signal plus 0.25, so a fully cited
// answer over weak retrieval stays LOW. Each invalid citation costs 0.05; no evidence or no valid
// citation is always LOW 0.
func Score(answer string, nSources int, g rank.Grade, rerankKnown bool) Confidence {
	used, invalid := Citations(answer, nSources)
	c := Confidence{Invalid: invalid}
	if nSources == 0 || g.NoEvidence || len(used) == 0 {
		c.Band = BandLow
		return c
	}
	// A sentence counts as cited when it carries a valid [n], or when the fragment right after it is
	// only citations ("... per year. [1]").
	valid := func(s string) bool {
		for _, m := range lang.CiteRe.FindAllStringSubmatch(s, -1) {
			if n, _ := strconv.Atoi(m[1]); n >= 1 && n <= nSources {
				return true
			}
		}
		return false
	}
	var marks []bool                // one per counted sentence: cited?
	claims := WithoutNotice(answer) // the notice is not a claim about the documents
	for _, s := range lang.SplitSentences(claims) {
		if utf8.RuneCountInString(strings.TrimSpace(lang.CiteRe.ReplaceAllString(s, ""))) < 8 {
			if len(marks) > 0 && valid(s) && strings.Trim(lang.CiteRe.ReplaceAllString(s, ""), " .。") == "" {
				marks[len(marks)-1] = true
			}
			continue // headings, bullets, fragments
		}
		marks = append(marks, valid(s))
	}
	sentences, cited := len(marks), 0
	for _, m := range marks {
		if m {
			cited++
		}
	}
	if sentences > 0 {
		c.Coverage = float64(cited) / float64(sentences)
	}
	if rerankKnown {
		c.Signal = math.Max(0, math.Min(1, g.TopScore))
	} else {
		c.Signal = map[string]float64{rank.TierHigh: 0.9, rank.TierAmbiguous: 0.65, rank.TierLow: 0.3}[g.Tier]
	}
	c.Score = 0.5*c.Coverage + 0.5*c.Signal
	// Never more than 0.25 above the retrieval signal: perfect citations of weak evidence stay LOW.
	c.Score = math.Max(0, math.Min(c.Score, c.Signal+0.25)-0.05*float64(invalid))
	c.Score = math.Round(c.Score*1000) / 1000
	c.Band = Band(c.Score)
	return c
}

// quotesCode reports whether a cited sentence is source code or a run of identifiers (reader.CodeLine).
func quotesCode(checked []Claim) bool {
	for _, cl := range checked {
		if reader.CodeLine(lang.CiteRe.ReplaceAllString(cl.Sentence, "")) {
			return true
		}
	}
	return false
}
