package aslrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func run(t *testing.T, def string, invoke Invoker, input string) (json.RawMessage, *Trace, error) {
	t.Helper()
	m, err := Parse([]byte(def))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	r := &Runner{Machine: m, Invoke: invoke, Rand: func() float64 { return 1 },
		ErrorName: func(err error) string { return strings.SplitN(err.Error(), ":", 2)[0] },
		Sleep:     func(context.Context, time.Duration) error { return nil }}
	return r.Run(context.Background(), "exec-1", json.RawMessage(input))
}

func TestPathsPassChoiceAndContext(t *testing.T) {
	def := `{"StartAt":"P","States":{
	  "P":{"Type":"Pass","Parameters":{"x.$":"$.a.b[1]","name.$":"$$.Execution.Name","fixed":{"k":1}},"ResultPath":"$.p","Next":"C"},
	  "C":{"Type":"Choice","Choices":[
	     {"And":[{"Variable":"$.p.x","NumericGreaterThan":5},{"Not":{"Variable":"$.missing","IsPresent":true}}],"Next":"Big"},
	     {"Variable":"$.p.x","NumericLessThan":5,"Next":"Small"}],"Default":"Small"},
	  "Big":{"Type":"Pass","Result":{"size":"big"},"ResultPath":"$.r","OutputPath":"$.r","End":true},
	  "Small":{"Type":"Succeed"}}}`
	out, tr, err := run(t, def, nil, `{"a":{"b":[1,7]}}`)
	if err != nil || string(out) != `{"size":"big"}` {
		t.Fatalf("out %s, err %v", out, err)
	}
	if strings.Join(tr.States, ",") != "P,C,Big" {
		t.Fatalf("states %v", tr.States)
	}
	out, _, _ = run(t, def, nil, `{"a":{"b":[1,2]}}`)
	var got map[string]any
	json.Unmarshal(out, &got)
	if p := got["p"].(map[string]any); p["name"] != "exec-1" || p["x"] != 2.0 {
		t.Fatalf("Parameters with context object: %v", got)
	}
}

func TestRetryBackoffAndCatch(t *testing.T) {
	def := `{"StartAt":"T","States":{
	  "T":{"Type":"Task","Resource":"fn","ResultPath":"$.out",
	       "Retry":[{"ErrorEquals":["Busy"],"IntervalSeconds":2,"MaxAttempts":4,"BackoffRate":3,"MaxDelaySeconds":10,"JitterStrategy":"FULL"}],
	       "Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.err","Next":"F"}],"Next":"S"},
	  "S":{"Type":"Succeed"},
	  "F":{"Type":"Fail","Error":"Caught","Cause":"x"}}}`
	var calls atomic.Int32
	busyThenOK := func(ctx context.Context, res string, in json.RawMessage) (json.RawMessage, error) {
		if calls.Add(1) <= 3 {
			return nil, errors.New("Busy: try later")
		}
		return json.RawMessage(`{"ok":true}`), nil
	}
	m, _ := Parse([]byte(def))
	var delays []time.Duration
	r := &Runner{Machine: m, Invoke: busyThenOK, Rand: func() float64 { return 1 },
		ErrorName: func(err error) string { return strings.SplitN(err.Error(), ":", 2)[0] },
		Sleep:     func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil }}
	out, tr, err := r.Run(context.Background(), "e", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(string(out), `"ok":true`) || tr.Retries["T"] != 3 {
		t.Fatalf("out %s err %v retries %v", out, err, tr.Retries)
	}
	// 2 s, 6 s, then 18 s capped at 10 s (Rand 1: the jitter's upper end)
	if len(delays) != 3 || delays[0] != 2*time.Second || delays[1] != 6*time.Second || delays[2] != 10*time.Second {
		t.Fatalf("delays %v", delays)
	}
	calls.Store(-10) // more failures than MaxAttempts: caught
	_, tr, err = r.Run(context.Background(), "e", json.RawMessage(`{}`))
	var e *Error
	if !errors.As(err, &e) || e.Name != "Caught" || tr.States[len(tr.States)-1] != "F" {
		t.Fatalf("err %v states %v", err, tr.States)
	}
	// a non-matching error goes straight to Catch with the error at ResultPath
	poison := func(ctx context.Context, res string, in json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("Terminal: bad file")
	}
	def2 := strings.Replace(def, `"Next":"F"`, `"Next":"S"`, 1)
	out, tr, err = run(t, def2, poison, `{"keep":1}`)
	if err != nil || tr.Retries["T"] != 0 || !strings.Contains(string(out), `"Error":"Terminal"`) || !strings.Contains(string(out), `"keep":1`) {
		t.Fatalf("out %s err %v retries %v", out, err, tr.Retries)
	}
}

func TestMapRunsItemsWithSelectorAndLimit(t *testing.T) {
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":2,
	  "ItemSelector":{"v.$":"$$.Map.Item.Value","i.$":"$$.Map.Item.Index","tag.$":"$.tag"},
	  "ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE"},"StartAt":"T","States":{"T":{"Type":"Task","Resource":"sq","End":true}}},
	  "ResultPath":"$.out","End":true}}}`
	var live, peak atomic.Int32
	sq := func(ctx context.Context, res string, in json.RawMessage) (json.RawMessage, error) {
		n := live.Add(1)
		defer live.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		var x struct {
			V, I float64
			Tag  string
		}
		json.Unmarshal(in, &x)
		b, _ := json.Marshal(map[string]any{"sq": x.V * x.V, "i": x.I, "tag": x.Tag})
		return b, nil
	}
	out, _, err := run(t, def, sq, `{"items":[1,2,3,4,5],"tag":"t"}`)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Out []map[string]any }
	json.Unmarshal(out, &got)
	if len(got.Out) != 5 || got.Out[4]["sq"] != 25.0 || got.Out[4]["i"] != 4.0 || got.Out[0]["tag"] != "t" {
		t.Fatalf("map output %s", out)
	}
	if peak.Load() > 2 {
		t.Fatalf("%d iterations ran at once, MaxConcurrency 2", peak.Load())
	}
}

func TestParseRefusesWhatItCannotRun(t *testing.T) {
	for name, def := range map[string]string{
		"unknown field":    `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Credentials":{}}}}`,
		"unknown type":     `{"StartAt":"A","States":{"A":{"Type":"Parallel","End":true}}}`,
		"dangling next":    `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}`,
		"no end":           `{"StartAt":"A","States":{"A":{"Type":"Pass"}}}`,
		"intrinsic":        `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"n.$":"States.ArrayLength($.x)"},"End":true}}}`,
		"filter path":      `{"StartAt":"A","States":{"A":{"Type":"Pass","InputPath":"$.x[?(@.a)]","End":true}}}`,
		"unknown map mode": `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"PARALLEL"},"StartAt":"S","States":{"S":{"Type":"Succeed"}}},"End":true}}}`,
		"reader on inline": `{"StartAt":"M","States":{"M":{"Type":"Map","ItemReader":{"Resource":"r"},"ItemProcessor":{"StartAt":"S","States":{"S":{"Type":"Succeed"}}},"End":true}}}`,
		"reader and path":  `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.x","ItemReader":{"Resource":"r"},"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"S","States":{"S":{"Type":"Succeed"}}},"End":true}}}`,
		"unknown operator": `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.x","StringMatches":"a*","Next":"C"}]}}}`,
	} {
		if _, err := Parse([]byte(def)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A poll loop: Wait (fixed or from the input) -> Task -> Choice, bounded by a counter the task keeps.
func TestWaitPollLoop(t *testing.T) {
	def := `{"StartAt":"W","States":{
	  "W":{"Type":"Wait","SecondsPath":"$.job.wait","Next":"Check"},
	  "Check":{"Type":"Task","Resource":"fn","Parameters":{"job.$":"$.job"},"ResultPath":"$.job","Next":"Done?"},
	  "Done?":{"Type":"Choice","Choices":[
	     {"Variable":"$.job.status","StringEquals":"DONE","Next":"Fixed"},
	     {"And":[{"Variable":"$.job.status","StringEquals":"RUNNING"},{"Variable":"$.job.polls","NumericLessThan":5}],"Next":"W"}],
	   "Default":"TooLong"},
	  "Fixed":{"Type":"Wait","Seconds":1.5,"End":true},
	  "TooLong":{"Type":"Fail","Error":"TimedOut","Cause":"still running"}}}`
	check := func(doneAt int) Invoker {
		return func(ctx context.Context, res string, in json.RawMessage) (json.RawMessage, error) {
			var p struct {
				Job struct{ Polls, Wait int } `json:"job"`
			}
			json.Unmarshal(in, &p)
			n := p.Job.Polls + 1
			st := "RUNNING"
			if n == doneAt {
				st = "DONE"
			}
			return json.Marshal(map[string]any{"status": st, "polls": n, "wait": p.Job.Wait * 2})
		}
	}
	_, tr, err := run(t, def, check(3), `{"job":{"polls":0,"wait":5}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 1500 * time.Millisecond}
	if len(tr.Waits) != len(want) {
		t.Fatalf("waits %v, want %v", tr.Waits, want)
	}
	for i := range want {
		if tr.Waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", tr.Waits, want)
		}
	}
	_, tr, err = run(t, def, check(99), `{"job":{"polls":0,"wait":1}}`)
	var e *Error
	if !errors.As(err, &e) || e.Name != "TimedOut" || len(tr.Waits) != 5 {
		t.Fatalf("bounded loop: %v after %d waits; want TimedOut after 5", err, len(tr.Waits))
	}
	_, _, err = run(t, def, check(1), `{"job":{"polls":0,"wait":"soon"}}`)
	if !errors.As(err, &e) || e.Name != "States.Runtime" {
		t.Fatalf("a SecondsPath that is not a number: %v", err)
	}
	if _, err := Parse([]byte(`{"StartAt":"W","States":{"W":{"Type":"Wait","End":true}}}`)); err == nil {
		t.Fatal("a Wait with neither Seconds nor SecondsPath parsed")
	}
	if _, err := Parse([]byte(`{"StartAt":"W","States":{"W":{"Type":"Wait","Timestamp":"2026-01-01T00:00:00Z","End":true}}}`)); err == nil {
		t.Fatal("an unsupported Timestamp wait parsed")
	}
}

// A Distributed Map reads its items from its ItemReader (invoked with its rendered Parameters), runs
// each as a child execution of its own name, and tolerates failed items up to its percentage: beyond
// it the Map fails with States.ExceedToleratedFailureThreshold.
func TestDistributedMapReaderAndToleratedFailures(t *testing.T) {
	def := func(pct string) string {
		return `{"StartAt":"M","States":{"M":{"Type":"Map","Label":"Items","MaxConcurrency":2,
	  "ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSON"},"Parameters":{"Bucket.$":"$.m.bucket","Key.$":"$.m.key"}},
	  "ItemSelector":{"run.$":"$.run","n.$":"$$.Map.Item.Value"},
	  "ToleratedFailurePercentage":` + pct + `,
	  "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"T","States":{
	    "T":{"Type":"Task","Resource":"fn","Parameters":{"run.$":"$.run","n.$":"$.n","child.$":"$$.Execution.Name"},"End":true}}},
	  "ResultPath":"$.out","End":true}}}`
	}
	var mu sync.Mutex
	var reads []string
	children := map[string]bool{}
	invoke := func(ctx context.Context, res string, in json.RawMessage) (json.RawMessage, error) {
		var p map[string]any
		json.Unmarshal(in, &p)
		if res == "arn:aws:states:::s3:getObject" {
			mu.Lock()
			reads = append(reads, p["Bucket"].(string)+"/"+p["Key"].(string))
			mu.Unlock()
			return json.RawMessage(`[1,2,3,4,5,6,7,8,9,10]`), nil
		}
		mu.Lock()
		children[p["child"].(string)] = true
		mu.Unlock()
		if n := p["n"].(float64); int(n)%5 == 0 {
			return nil, errors.New("Boom: item " + fmt.Sprint(n))
		}
		return json.Marshal(p["n"].(float64) * 10)
	}
	out, _, err := run(t, def("20"), invoke, `{"run":"r1","m":{"bucket":"b","key":"k.json"}}`)
	if err != nil {
		t.Fatalf("2 of 10 failed under a 20%% tolerance: %v", err)
	}
	var got struct{ Out []any }
	json.Unmarshal(out, &got)
	if len(got.Out) != 10 || got.Out[0] != 10.0 || got.Out[4] != nil || got.Out[9] != nil || got.Out[8] != 90.0 {
		t.Fatalf("results %v; want 10 results, the failed ones null", got.Out)
	}
	if len(reads) != 1 || reads[0] != "b/k.json" || len(children) != 10 {
		t.Fatalf("reads %v, %d child executions; want one read of b/k.json and 10 children of distinct names", reads, len(children))
	}
	_, _, err = run(t, def("10"), invoke, `{"run":"r1","m":{"bucket":"b","key":"k.json"}}`)
	var e *Error
	if !errors.As(err, &e) || e.Name != "States.ExceedToleratedFailureThreshold" {
		t.Fatalf("2 of 10 failed under a 10%% tolerance: %v; want States.ExceedToleratedFailureThreshold", err)
	}
}
