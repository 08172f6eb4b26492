package answer

import (
	"embed"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/text"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

var prompts = template.Must(template.ParseFS(promptFS, "prompts/*.tmpl"))

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

// Neutralise replaces instruction-like text in a passage with a marker and reports how many it found.
func Neutralise(s string) (string, int) {
	n := 0
	out := injection.ReplaceAllStringFunc(s, func(string) string {
		n++
		return "[instruction-like text removed]"
	})
	return out, n
}

type passage struct {
	N           int
	Title, Text string
}

// Prompt is an assembled prompt and what went into it.
type Prompt struct {
	Messages []llm.Message
	Mode     string
	Used     int // passages that fit under the ceiling (a prefix of the evidence)
	Flagged  int // injection-like spans neutralised
	History  int // earlier turns that fit after the passages
	Tokens   int // estimated prompt tokens
}

// BuildPrompt assembles the prompt for question over ev under one token ceiling: passages are kept in
// rank order while they fit (at least one is always kept, cut to fit), the rest are dropped.
func BuildPrompt(question string, ev []rank.Evidence, mode string, ceiling int, history ...llm.Message) (Prompt, error) {
	if ceiling <= 0 {
		ceiling = 6000
	}
	p := Prompt{Mode: mode}
	var sys strings.Builder
	if err := prompts.ExecuteTemplate(&sys, "system.tmpl", map[string]string{"Mode": mode}); err != nil {
		return p, fmt.Errorf("answer: system prompt: %w", err)
	}
	budget := ceiling - text.EstimateTokens(sys.String()) - text.EstimateTokens(question) - 64
	var ps []passage
	for i, e := range ev {
		body, n := Neutralise(e.Text)
		title := e.FileName
		if e.Chapter != "" {
			title += " - " + e.Chapter
		}
		title, m := Neutralise(oneLine(title))
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
		ps = append(ps, passage{N: i + 1, Title: title, Text: body})
	}
	p.Used = len(ps)
	var user strings.Builder
	if err := prompts.ExecuteTemplate(&user, "user.tmpl", map[string]any{"Passages": ps, "Question": question}); err != nil {
		return p, fmt.Errorf("answer: user prompt: %w", err)
	}
	// History gets what the passages left: the newest turns that fit, oldest first.
	kept := Recent(history, budget)
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
			m.Content = strings.TrimSpace(citeRe.ReplaceAllString(m.Content, ""))
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
