package main

import (
	"strconv"
	"time"

	"github.com/docmind/docmind/shared/config"
)

// Function URL AuthType values (the template's FunctionUrlAuthType parameter, passed on as
// DOCMIND_FUNCTION_URL_AUTH).
const (
	authNone = "NONE"
	authIAM  = "AWS_IAM"
)

// caps are the server-side bounds of one stream. A Lambda is not stopped when the client leaves
// (SR-16, STR-03), so these, with the function timeout, are the cost ceiling of an abandoned stream.
type caps struct {
	URLAuth   string        // DOCMIND_FUNCTION_URL_AUTH: NONE (default) or AWS_IAM
	MaxTokens int           // DOCMIND_MAX_TOKENS: completion tokens per answer (default 1,024)
	StreamMax time.Duration // DOCMIND_STREAM_MAX: wall time of one stream (default 120 s)
	IdleGap   time.Duration // DOCMIND_STREAM_IDLE: longest silence of the model (default 20 s)
	// Reserve is kept free before the function's deadline for the terminal event and storing the
	// answer (DOCMIND_STREAM_RESERVE, default 3 s; STR-05 asks for the terminal event >= 2 s before).
	Reserve time.Duration
	// RerankFunction names the rerank function (DOCMIND_RERANK_FUNCTION); empty reranks in process.
	RerankFunction string
	RerankTimeout  time.Duration // DOCMIND_RERANK_TIMEOUT (default 10 s)
	// GradeFunction names the grade function (DOCMIND_GRADE_FUNCTION); empty grades in process.
	GradeFunction string
	// GradeTimeout bounds one call (DOCMIND_GRADE_TIMEOUT, default 3 s): the fallback computes the same
	// verdict in process in under a millisecond (lambdafn's BenchmarkGrade), so waiting longer only
	// delays the answer.
	GradeTimeout time.Duration
}

func defaultCaps() caps {
	return caps{URLAuth: authNone, MaxTokens: 1024, StreamMax: 120 * time.Second, IdleGap: 20 * time.Second,
		Reserve: 3 * time.Second, RerankTimeout: 10 * time.Second, GradeTimeout: 3 * time.Second}
}

// loadCaps overlays the environment on the defaults and reports every bad value at once.
func loadCaps(getenv func(string) string) (caps, error) {
	c := defaultCaps()
	var bad []string
	if v := getenv("DOCMIND_FUNCTION_URL_AUTH"); v != "" {
		c.URLAuth = v
	}
	if c.URLAuth != authNone && c.URLAuth != authIAM {
		bad = append(bad, "DOCMIND_FUNCTION_URL_AUTH must be NONE or AWS_IAM, got "+c.URLAuth)
	}
	if v := getenv("DOCMIND_MAX_TOKENS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 16 || n > 32768 {
			bad = append(bad, "DOCMIND_MAX_TOKENS must be a whole number from 16 to 32768, got "+v)
		}
		c.MaxTokens = n
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{"DOCMIND_STREAM_MAX", &c.StreamMax}, {"DOCMIND_STREAM_IDLE", &c.IdleGap}, {"DOCMIND_STREAM_RESERVE", &c.Reserve}, {"DOCMIND_RERANK_TIMEOUT", &c.RerankTimeout},
		{"DOCMIND_GRADE_TIMEOUT", &c.GradeTimeout}} {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		t, err := time.ParseDuration(v)
		if err != nil || t <= 0 {
			bad = append(bad, d.name+" must be a positive duration such as 20s, got "+v)
			continue
		}
		*d.to = t
	}
	if c.Reserve < 2*time.Second {
		bad = append(bad, "DOCMIND_STREAM_RESERVE must be at least 2s (the terminal event must leave before the deadline)")
	}
	c.RerankFunction = getenv("DOCMIND_RERANK_FUNCTION")
	c.GradeFunction = getenv("DOCMIND_GRADE_FUNCTION")
	if len(bad) > 0 {
		return c, &config.ValidationError{Problems: bad}
	}
	return c, nil
}
