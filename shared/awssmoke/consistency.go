package awssmoke

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// consistencyReport is the part of the consistency function's report the smoke reads
// (functions/consistency Result).
type consistencyReport struct {
	Drift     map[string]int `json:"drift"`
	LockHeld  bool           `json:"lock_held"`
	Documents int            `json:"documents"`
	Errors    []string       `json:"errors"`
}

// consistency invokes the consistency function synchronously, reporting only ({"repair": false}: a
// smoke test repairs nothing), and expects no drift in any class.
func (s *Smoke) consistency(ctx context.Context) Result {
	r := Result{Check: "consistency"}
	fn := s.Out.ConsistencyFunction
	look := s.logs("ConsistencyFunction")
	out, err := s.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), InvocationType: types.InvocationTypeRequestResponse,
		Payload: []byte(`{"repair": false}`)})
	if err != nil {
		r.Status, r.Message = Fail, fmt.Sprintf("invoke %s: %v", fn, err)
		r.Look = "your credentials need lambda:InvokeFunction on " + fn + " (the ConsistencyFunctionName output)"
		return r
	}
	// a function error comes back as 200 with X-Amz-Function-Error and the error as the payload
	var fe struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	_ = json.Unmarshal(out.Payload, &fe)
	if out.FunctionError != nil || fe.Type != "" {
		r.Status, r.Message, r.Look = Fail, fmt.Sprintf("%s failed: %s %s", fn, fe.Type, fe.Message), look
		return r
	}
	var rep consistencyReport
	if err := json.Unmarshal(out.Payload, &rep); err != nil || rep.Drift == nil {
		r.Status, r.Message, r.Look = Fail, fmt.Sprintf("%s answered %.300s, not a consistency report", fn, out.Payload), look
		return r
	}
	var drift []string
	for class, n := range rep.Drift {
		if n > 0 {
			drift = append(drift, fmt.Sprintf("%s %d", class, n))
		}
	}
	slices.Sort(drift)
	switch {
	case rep.LockHeld:
		r.Status, r.Message = Fail, "another consistency run holds the lease, so this one checked nothing"
		r.Look = "run make smoke again in a few minutes (the scheduled run takes the lease while it runs)"
	case len(drift) > 0:
		r.Status, r.Message = Fail, fmt.Sprintf("drift over %d documents: %s", rep.Documents, strings.Join(drift, ", "))
		r.Look = "docs/aws-runtime.md (consistency): what each class means; the scheduled run repairs them ({\"repair\": true}); drift right after the smoke's delete means the delete left something behind: " + s.logs("ApiFunction")
	case len(rep.Errors) > 0:
		r.Status, r.Message, r.Look = Fail, fmt.Sprintf("no drift, but %d errors: %s", len(rep.Errors), strings.Join(rep.Errors, "; ")), look
	default:
		r.Status, r.Message = Pass, fmt.Sprintf("no drift over %d documents (%d classes checked)", rep.Documents, len(rep.Drift))
	}
	return r
}
