// Command canary asks golden questions through the answer state machine on a schedule (EventBridge
// Scheduler passes them as the target's input) and publishes what it saw as CloudWatch embedded metric
// format: the share of questions whose expected document was among the sources (retrieval), the share
// whose answer contains the expected phrase (answer), failures and latency. The template alarms when
// either share falls below its threshold: a regression in retrieval, ranking, the model or the data.
//
// The canary goes through the state machine, not the chat Lambda: it tests the same retrieval and
// ranking the chat uses without holding a stream, and a failed execution is a failed question.
package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/emf"
	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/askflow"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
)

var version = "dev"

func main() { lambdamain.Run("canary", version, run) }

func run(ctx context.Context, log *slog.Logger) error {
	c, err := open(ctx, os.Getenv)
	if err != nil {
		return err
	}
	c.Log = log
	lambda.Start(awsrt.Handler(c.Run))
	return nil
}

func open(ctx context.Context, getenv func(string) string) (*Canary, error) {
	arn, tenant := getenv("DOCMIND_ANSWER_STATE_MACHINE_ARN"), getenv("DOCMIND_TENANT")
	if arn == "" {
		return nil, &config.ValidationError{Problems: []string{"DOCMIND_ANSWER_STATE_MACHINE_ARN is required"}}
	}
	if tenant == "" {
		tenant = config.Default().Tenant
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	return &Canary{Asker: &askflow.Asker{Client: sfn.NewFromConfig(ac), StateMachineARN: arn}, Tenant: tenant, Out: os.Stdout}, nil
}

// Golden is one question and what a good answer shows.
type Golden struct {
	Question string   `json:"question"`
	KBIDs    []string `json:"kb_ids,omitempty"`
	// Document is a file name that must be among the sources; Phrase a text the answer must contain
	// (case-insensitive). Either may be empty.
	Document string `json:"document,omitempty"`
	Phrase   string `json:"phrase,omitempty"`
}

// Input is the schedule's input.
type Input struct {
	Questions []Golden `json:"questions"`
}

// Result is the run's summary (also the function's return value).
type Result struct {
	Questions     int      `json:"questions"`
	Failed        int      `json:"failed"`
	RetrievalHit  float64  `json:"retrieval_hit_pct"`
	AnswerPass    float64  `json:"answer_pass_pct"`
	LatencyP50MS  int64    `json:"latency_p50_ms"`
	LatencyMaxMS  int64    `json:"latency_max_ms"`
	FailedReasons []string `json:"failed_reasons,omitempty"`
}

// Asker runs one question (askflow.Asker).
type Asker interface {
	Ask(ctx context.Context, req answer.Request) (*answer.Done, error)
}

// Canary runs the golden questions.
type Canary struct {
	Asker  Asker
	Tenant string
	Out    io.Writer // EMF records, one JSON object per line (stdout in Lambda)
	Log    *slog.Logger
	Now    func() time.Time
}

func (c *Canary) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Run asks every question in order and writes one EMF record. Errors: Invalid for an empty input; a
// failed question is a measurement, not an error.
func (c *Canary) Run(ctx context.Context, in Input) (Result, error) {
	if len(in.Questions) == 0 {
		return Result{}, rag.Errorf("canary", rag.KindInvalid, "no golden questions in the schedule's input")
	}
	var res Result
	var hits, passes int
	var lat []int64
	for _, g := range in.Questions {
		start := c.now()
		done, err := c.Asker.Ask(ctx, answer.Request{Tenant: c.Tenant, User: "canary", KBIDs: g.KBIDs, Question: g.Question})
		lat = append(lat, c.now().Sub(start).Milliseconds())
		res.Questions++
		if err != nil {
			res.Failed++
			res.FailedReasons = append(res.FailedReasons, rag.KindOf(err).String())
			continue
		}
		if g.Document == "" || hasSource(done, g.Document) {
			hits++
		}
		if g.Phrase == "" || strings.Contains(strings.ToLower(done.Answer), strings.ToLower(g.Phrase)) {
			passes++
		}
	}
	res.RetrievalHit = 100 * float64(hits) / float64(res.Questions)
	res.AnswerPass = 100 * float64(passes) / float64(res.Questions)
	res.LatencyP50MS, res.LatencyMaxMS = percentile(lat, 50), percentile(lat, 100)
	return res, writeMetrics(c.Out, c.now(), res)
}

func hasSource(d *answer.Done, file string) bool {
	for _, s := range d.Sources {
		if s.FileName == file {
			return true
		}
	}
	return false
}

// percentile is the nearest-rank percentile of xs (0 for none).
func percentile(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int64(nil), xs...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	i := (p*len(s) + 99) / 100
	return s[max(i-1, 0)]
}

// Namespace is the metrics' CloudWatch namespace.
const Namespace = "Docmind/Canary"

// emfRecord is the run's record (no dimension): the alarms watch RetrievalHitRate and AnswerPassRate.
type emfRecord struct {
	AWS          emf.Meta `json:"_aws"`
	Retrieval    float64  `json:"RetrievalHitRate"`
	Answer       float64  `json:"AnswerPassRate"`
	Failed       int      `json:"FailedQuestions"`
	Questions    int      `json:"Questions"`
	LatencyP50MS int64    `json:"LatencyP50Ms"`
	LatencyMaxMS int64    `json:"LatencyMaxMs"`
}

func writeMetrics(w io.Writer, now time.Time, r Result) error {
	rec := emfRecord{AWS: emf.New(now, Namespace, nil, emf.Metric{Name: "RetrievalHitRate", Unit: "Percent"}, emf.Metric{Name: "AnswerPassRate", Unit: "Percent"},
		emf.Count("FailedQuestions"), emf.Count("Questions"), emf.Metric{Name: "LatencyP50Ms", Unit: "Milliseconds"}, emf.Metric{Name: "LatencyMaxMs", Unit: "Milliseconds"}),
		Retrieval: r.RetrievalHit, Answer: r.AnswerPass, Failed: r.Failed, Questions: r.Questions, LatencyP50MS: r.LatencyP50MS, LatencyMaxMS: r.LatencyMaxMS}
	return json.NewEncoder(w).Encode(rec)
}
