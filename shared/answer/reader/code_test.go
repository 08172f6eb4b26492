package reader

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rank"
)

func TestCodeLine(t *testing.T) {
	for line, want := range map[string]bool{
		"const retryThreshold = 0.85":                           true,
		"retry_threshold = 5":                                   true,
		"if err != nil {":                                       true,
		"cfg.Retry.Max, cfg.Retry.Backoff, cfg.Retry.Jitter":    true,
		"max_retries: 5":                                        true,
		"breaker.Open(threshold)":                               true,
		"return fmt.Errorf(\"retry: %w\", err);":                true,
		"def should_retry(attempt, threshold):":                 true,
		"The retry threshold is 3 failed attempts in a minute.": false,
		"Set `max_retries` to 3 in the config file.":            false,
		"Return the form to HR within 30 days.":                 false,
		"Type 2 diabetes is a chronic condition.":               false,
		"Beyoncé released her iPhone app in 2013.":              false,
		"See e.g. the U.S. figures for 2024.":                   false,
		"服务月可用性不低于 99.9%。":                                      false,
		"调用 retry_threshold 参数时，阈值默认为三次失败。":                     false,
		"Availability: 99.9%":                                   false,
	} {
		if got := CodeLine(line); got != want {
			t.Errorf("CodeLine(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestCodeQuestion(t *testing.T) {
	for q, want := range map[string]bool{
		"What is the retry threshold?":                 false,
		"What is the function of the circuit breaker?": false,
		"What does `retry_threshold` default to?":      true,
		"What is retry_threshold set to?":              true,
		"Show the code that opens the breaker":         true,
		"哪个变量控制重试阈值？":                                  true,
		"重试阈值是多少？":                                     false,
	} {
		if got := CodeQuestion(q); got != want {
			t.Errorf("CodeQuestion(%q) = %v, want %v", q, got, want)
		}
	}
}

// The case: a design document explains a threshold in prose and declares it in code; the
// compression window starts inside the code block (no opening fence), so its lines read as prose.
// The prose question is answered from the prose; the code is never quoted for it.
const design = `breakerThreshold := 5
retry_backoff_ms = 200
if failures >= breakerThreshold {
    breaker.Open()
}
` + "```" + `

## Circuit breaker

The breaker opens after 5 consecutive failed calls to the reranker, and the threshold is checked per tenant.
While it is open, the lexical ranking is used instead.

` + "```go" + `
const threshold = 5 // failures
` + "```"

func TestReaderNeverQuotesCodeForProse(t *testing.T) {
	r := Extractive{}.Read("What is the circuit breaker threshold?", []rank.Evidence{ev("design.md", design, 1)})
	got := quotedLines(r.Answer)
	if len(got) == 0 || !strings.Contains(got[0], "opens after 5 consecutive failed calls") || r.Code {
		t.Fatalf("want the prose sentence first, no code:\n%s", r.Answer)
	}
	for _, l := range got {
		if CodeLine(strings.TrimSuffix(l, " [1]")) || strings.Contains(l, "breakerThreshold") || strings.Contains(l, "retry_backoff_ms") {
			t.Errorf("code quoted for a prose question: %q", l)
		}
	}
	// only code matches: nothing is quoted rather than the code
	r = Extractive{}.Read("What is the retry backoff?", []rank.Evidence{ev("design.md", "retry_backoff_ms = 200\nmax_retry_count = 3", 1)})
	if strings.Contains(r.Answer, "retry_backoff_ms") || len(quotedLines(r.Answer)) != 0 {
		t.Errorf("code quoted for a prose question:\n%s", r.Answer)
	}
	// a question about the code itself may be answered with it, and the reading says so
	r = Extractive{}.Read("What is `retry_backoff_ms` set to?", []rank.Evidence{ev("design.md", "retry_backoff_ms = 200\nmax_retry_count = 3", 1)})
	if !strings.Contains(r.Answer, "retry_backoff_ms = 200 [1]") || !r.Code {
		t.Errorf("a code question: want the line, marked code:\n%s (code %v)", r.Answer, r.Code)
	}
}

// A question about the code itself may quote a fenced block's line (marked code, so never HIGH); the
// same block is never quoted for a prose question.
func TestReaderFencedCodeOnlyForCodeQuestions(t *testing.T) {
	const doc = "## Circuit breaker\n\n```go\n// breaker settings\nconst breakerThreshold = 5\nconst breakerCooldown = 30 * time.Second\n```\n\nThe breaker opens after five consecutive failed calls to the rerank service."
	r := Extractive{}.Read("What is breakerThreshold set to?", []rank.Evidence{ev("design.md", doc, 1)})
	if got := quotedLines(r.Answer); len(got) == 0 || got[0] != "const breakerThreshold = 5 [1]" || !r.Code {
		t.Errorf("a code question: want the declaration, marked code:\n%s", r.Answer)
	}
	r = Extractive{}.Read("How many failed calls open the circuit breaker?", []rank.Evidence{ev("design.md", doc, 1)})
	if strings.Contains(r.Answer, "const ") || r.Code || !strings.Contains(r.Answer, "five consecutive failed calls") {
		t.Errorf("a prose question: want the sentence, no code:\n%s", r.Answer)
	}
}

func TestOpensInCode(t *testing.T) {
	if !opensInCode(strings.Split(design, "\n")) {
		t.Error("a window cut inside a code block is not recognised")
	}
	whole := "Intro line of prose here.\n```go\nx := 1\n```\nMore prose follows here."
	if opensInCode(strings.Split(whole, "\n")) {
		t.Error("a passage with a whole code block is read as starting inside one")
	}
	cutEnd := "The breaker opens after five failures.\n```go\nx := 1"
	if opensInCode(strings.Split(cutEnd, "\n")) {
		t.Error("a passage cut inside its last code block is read as starting inside one")
	}
}
