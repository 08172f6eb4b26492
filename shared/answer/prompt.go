package answer

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"text/template"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/text"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

var prompts = template.Must(template.ParseFS(promptFS, "prompts/*.tmpl"))

// promptVersion fingerprints the prompt templates (and the understanding prompt, which shapes
// retrieval): part of the semantic cache's scope, so that changed prompts never replay old answers.
var promptVersion = func() string {
	h := sha256.New()
	_ = fs.WalkDir(promptFS, "prompts", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := promptFS.ReadFile(path)
			h.Write([]byte(path))
			h.Write(b)
		}
		return nil
	})
	h.Write([]byte(understandPrompt))
	return hex.EncodeToString(h.Sum(nil)[:8])
}()

// Prompt modes (DESIGN.md step 12): standard, low confidence with evidence, fallback without evidence.
const (
	ModeStandard = "standard"
	ModeLow      = "low"
	ModeFallback = "fallback"
)

// injection matches instruction-like text in retrieved passages (English and Chinese), and anything
// that would close or open the data block.
var injection = regexp.MustCompile(`(?i)(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|preceding)\s+(instructions|prompts?|rules)` +
	`|you\s+are\s+now\s+` + `|new\s+instructions\s*:` + `|(reveal|print|show)\s+(the\s+|your\s+)?system\s+prompt` +
	`|忽略(之前|以上|前面|上述)(的)?(所有)?(指令|指示|规则|提示)` + `|</?\s*documents\s*>`)

// injectionWords: every match of injection contains one of them once lower-cased, with ſ (U+017F, the
// only rune that (?i) folds to an ASCII letter but strings.ToLower keeps) read as s. Text containing none
// cannot match, so the regexp, the costliest step of prompt assembly under load, is skipped.
var injectionWords = []string{"ignore", "disregard", "forget", "now", "instructions", "system", "documents", "忽略"}

var foldSpecial = strings.NewReplacer("ſ", "s")

func mayInject(s string) bool {
	l := foldSpecial.Replace(strings.ToLower(s))
	for _, w := range injectionWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// Neutralise replaces instruction-like text in a passage with a marker and reports how many it found.
func Neutralise(s string) (string, int) {
	if !mayInject(s) {
		return s, 0
	}
	n := 0
	out := injection.ReplaceAllStringFunc(s, func(string) string {
		n++
		return "[instruction-like text removed]"
	})
	return out, n
}

type passage struct {
	N                         int
	Title, Text, Serves, Part string
}

// Prompt is an assembled prompt and what went into it.
type Prompt struct {
	Messages []llm.Message
	Mode     string
	Used     int // passages that fit under the ceiling (a prefix of the evidence)
	Flagged  int // injection-like spans neutralised
	Memory   int // memories that fit after the passages
	History  int // earlier turns that fit after the passages and memories
	Tokens   int // estimated prompt tokens
}

// PromptInput is what a prompt is built from.
type PromptInput struct {
	Question string
	Evidence []rank.Evidence
	Mode     string
	Ceiling  int // the one token ceiling (default 6000)
	// Memory is what is remembered about the user; Summary summarises turns older than History.
	Memory  []string
	Summary string
	History []llm.Message // earlier turns, oldest first
	// Served, for a decomposed question, maps a passage's chunk id to the sub-questions it serves; the
	// prompt then says so beside each passage and asks for every part to be answered.
	Served map[string][]string
	// Parts, on the SELECTED_DOC reading, maps a passage's chunk id to where it lies in its document:
	// the prompt says so beside each passage and asks for a summary that names the parts it cites.
	Parts map[string]string
}

// BuildPrompt assembles the prompt under one token ceiling, spent in the order of DESIGN.md step 12:
// passages first (kept in rank order while they fit; at least one, cut to fit), then memory, then
// history (the summary of older turns, then the newest turns that fit).
func BuildPrompt(in PromptInput) (Prompt, error) {
	ceiling := in.Ceiling
	if ceiling <= 0 {
		ceiling = 6000
	}
	p := Prompt{Mode: in.Mode}
	var sys strings.Builder
	if err := prompts.ExecuteTemplate(&sys, "system.tmpl", map[string]any{"Mode": in.Mode, "Decomposed": in.Served != nil, "Reading": in.Parts != nil}); err != nil {
		return p, fmt.Errorf("answer: system prompt: %w", err)
	}
	budget := ceiling - text.EstimateTokens(sys.String()) - text.EstimateTokens(in.Question) - 64
	var ps []passage
	for i, e := range in.Evidence {
		body, n := Neutralise(e.Text)
		title := e.FileName
		if e.Chapter != "" {
			title += " - " + e.Chapter
		}
		title, m := Neutralise(lang.OneLine(title))
		cost := text.EstimateTokens(title) + text.EstimateTokens(body) + 8
		if cost > budget {
			if i > 0 {
				break
			}
			body = cutToTokens(body, max(budget-text.EstimateTokens(title)-8, 32))
			cost = budget
		}
		budget -= cost
		p.Flagged += n + m
		serves, k := Neutralise(strings.Join(in.Served[e.ChunkID], "; "))
		p.Flagged += k
		ps = append(ps, passage{N: i + 1, Title: title, Text: body, Serves: serves, Part: in.Parts[e.ChunkID]})
	}
	p.Used = len(ps)
	var memory []string
	for _, m := range in.Memory {
		m, n := Neutralise(lang.OneLine(m))
		cost := text.EstimateTokens(m) + 4
		if cost > budget {
			break
		}
		budget -= cost
		p.Flagged += n
		memory = append(memory, m)
	}
	p.Memory = len(memory)
	summary, n := Neutralise(lang.OneLine(in.Summary))
	if cost := text.EstimateTokens(summary) + 16; summary != "" && cost <= budget {
		budget -= cost
		p.Flagged += n
	} else {
		summary = ""
	}
	var user strings.Builder
	if err := prompts.ExecuteTemplate(&user, "user.tmpl", map[string]any{"Passages": ps, "Question": in.Question,
		"Memory": memory, "Summary": summary}); err != nil {
		return p, fmt.Errorf("answer: user prompt: %w", err)
	}
	// History gets what is left: the newest turns that fit, oldest first.
	kept := Recent(in.History, budget)
	p.History = len(kept)
	p.Messages = append(append([]llm.Message{{Role: "system", Content: sys.String()}}, kept...), llm.Message{Role: "user", Content: user.String()})
	for _, m := range p.Messages {
		p.Tokens += text.EstimateTokens(m.Content)
	}
	return p, nil
}

// Recent returns the newest turns of history that fit in budget tokens, oldest first, with [n] markers
// removed from assistant turns (they point at sources the new prompt does not have).
func Recent(history []llm.Message, budget int) []llm.Message {
	var kept []llm.Message
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		if m.Role == "assistant" {
			m.Content = strings.TrimSpace(lang.CiteRe.ReplaceAllString(m.Content, ""))
		}
		cost := text.EstimateTokens(m.Content) + 4
		if cost > budget {
			break
		}
		budget -= cost
		kept = append(kept, m)
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return kept
}

// cutToTokens shortens s to about n estimated tokens.
func cutToTokens(s string, n int) string {
	r := []rune(s)
	lo, hi := 0, len(r)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if text.EstimateTokens(string(r[:mid])) <= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(r[:lo])
}
