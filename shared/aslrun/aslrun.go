// Package aslrun executes an Amazon States Language definition in process, so a test runs the ASL file
// that is deployed (not a copy of its logic) against the Go handlers its Tasks invoke. It implements the
// subset docmind's state machines use: Task, Map (inline, and distributed with an ItemReader and a
// tolerated failure percentage or count), Choice, Pass, Wait (Seconds or
// SecondsPath), Succeed and Fail states;
// InputPath, Parameters, ItemSelector, ItemsPath, ResultSelector, ResultPath and OutputPath; Retry
// (IntervalSeconds, MaxAttempts, BackoffRate, MaxDelaySeconds, JitterStrategy) and Catch; the context
// object's $$.Execution.Input, $$.Execution.Name, $$.Map.Item.Value and $$.Map.Item.Index. Anything
// else in a definition (an unknown field, state type or path syntax) is refused at Parse, so a
// definition never passes a test by having a feature silently ignored. Timeouts and heartbeats are
// accepted and not enforced.
package aslrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Machine is a parsed state machine (or a Map's item processor).
type Machine struct {
	Comment        string            `json:"Comment,omitempty"`
	StartAt        string            `json:"StartAt"`
	States         map[string]*State `json:"States"`
	TimeoutSeconds int               `json:"TimeoutSeconds,omitempty"`
	Version        string            `json:"Version,omitempty"`
	// ProcessorConfig appears on a Map's ItemProcessor: INLINE, or DISTRIBUTED (each item a child
	// execution: run here in process like an inline iteration, its context's Execution.Name the child's).
	ProcessorConfig *struct {
		Mode          string `json:"Mode"`
		ExecutionType string `json:"ExecutionType,omitempty"`
	} `json:"ProcessorConfig,omitempty"`
}

// State is one state of any supported type.
type State struct {
	Type           string          `json:"Type"`
	Comment        string          `json:"Comment,omitempty"`
	Next           string          `json:"Next,omitempty"`
	End            bool            `json:"End,omitempty"`
	InputPath      *string         `json:"InputPath,omitempty"`
	OutputPath     *string         `json:"OutputPath,omitempty"`
	ResultPath     json.RawMessage `json:"ResultPath,omitempty"` // a path, or null to discard the result
	Parameters     any             `json:"Parameters,omitempty"`
	ResultSelector any             `json:"ResultSelector,omitempty"`
	// Task
	Resource         string     `json:"Resource,omitempty"`
	Retry            []*Retrier `json:"Retry,omitempty"`
	Catch            []*Catcher `json:"Catch,omitempty"`
	TimeoutSeconds   int        `json:"TimeoutSeconds,omitempty"`
	HeartbeatSeconds int        `json:"HeartbeatSeconds,omitempty"`
	// Pass
	Result any `json:"Result,omitempty"`
	// Choice
	Choices []*Rule `json:"Choices,omitempty"`
	Default string  `json:"Default,omitempty"`
	// Map
	ItemsPath      *string  `json:"ItemsPath,omitempty"`
	ItemSelector   any      `json:"ItemSelector,omitempty"`
	ItemProcessor  *Machine `json:"ItemProcessor,omitempty"`
	Iterator       *Machine `json:"Iterator,omitempty"`
	MaxConcurrency int      `json:"MaxConcurrency,omitempty"`
	// Distributed Map: ItemReader reads the items (its Resource is invoked with its rendered Parameters
	// and must return a JSON array); failed iterations up to ToleratedFailurePercentage or
	// ToleratedFailureCount leave the Map succeeding, their results null.
	ItemReader                 *ItemReader `json:"ItemReader,omitempty"`
	ToleratedFailurePercentage *float64    `json:"ToleratedFailurePercentage,omitempty"`
	ToleratedFailureCount      *int        `json:"ToleratedFailureCount,omitempty"`
	Label                      string      `json:"Label,omitempty"`
	// Wait: a fixed delay or one read from the input (Timestamp is not supported)
	Seconds     *float64 `json:"Seconds,omitempty"`
	SecondsPath string   `json:"SecondsPath,omitempty"`
	// Fail
	Error string `json:"Error,omitempty"`
	Cause string `json:"Cause,omitempty"`
}

// ItemReader is a Distributed Map's item source (an S3 object read by Step Functions).
type ItemReader struct {
	Resource     string `json:"Resource"`
	ReaderConfig *struct {
		InputType string `json:"InputType,omitempty"`
		MaxItems  int    `json:"MaxItems,omitempty"`
	} `json:"ReaderConfig,omitempty"`
	Parameters any `json:"Parameters,omitempty"`
}

// Retrier is one Retry rule.
type Retrier struct {
	ErrorEquals     []string `json:"ErrorEquals"`
	IntervalSeconds *float64 `json:"IntervalSeconds,omitempty"` // default 1
	MaxAttempts     *int     `json:"MaxAttempts,omitempty"`     // default 3
	BackoffRate     *float64 `json:"BackoffRate,omitempty"`     // default 2
	MaxDelaySeconds float64  `json:"MaxDelaySeconds,omitempty"`
	JitterStrategy  string   `json:"JitterStrategy,omitempty"` // FULL or NONE
	Comment         string   `json:"Comment,omitempty"`
}

// Catcher is one Catch rule.
type Catcher struct {
	ErrorEquals []string        `json:"ErrorEquals"`
	Next        string          `json:"Next"`
	ResultPath  json.RawMessage `json:"ResultPath,omitempty"`
	Comment     string          `json:"Comment,omitempty"`
}

// Rule is one Choice rule (a top-level rule has Next).
type Rule struct {
	Variable           string   `json:"Variable,omitempty"`
	Next               string   `json:"Next,omitempty"`
	And                []*Rule  `json:"And,omitempty"`
	Or                 []*Rule  `json:"Or,omitempty"`
	Not                *Rule    `json:"Not,omitempty"`
	BooleanEquals      *bool    `json:"BooleanEquals,omitempty"`
	StringEquals       *string  `json:"StringEquals,omitempty"`
	NumericEquals      *float64 `json:"NumericEquals,omitempty"`
	NumericGreaterThan *float64 `json:"NumericGreaterThan,omitempty"`
	NumericLessThan    *float64 `json:"NumericLessThan,omitempty"`
	IsPresent          *bool    `json:"IsPresent,omitempty"`
}

// Parse decodes and checks a definition: every Next and Default names a state, every non-terminal state
// has Next or End, every type and field is one this package implements.
func Parse(def []byte) (*Machine, error) {
	dec := json.NewDecoder(bytes.NewReader(def))
	dec.DisallowUnknownFields()
	var m Machine
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("asl: %w", err)
	}
	if err := m.check("$"); err != nil {
		return nil, err
	}
	return &m, nil
}

func (m *Machine) check(where string) error {
	if m.ProcessorConfig != nil && m.ProcessorConfig.Mode != "" && m.ProcessorConfig.Mode != "INLINE" && m.ProcessorConfig.Mode != "DISTRIBUTED" {
		return fmt.Errorf("asl %s: Map processor mode %q is not INLINE or DISTRIBUTED", where, m.ProcessorConfig.Mode)
	}
	if _, ok := m.States[m.StartAt]; !ok {
		return fmt.Errorf("asl %s: StartAt %q is not a state", where, m.StartAt)
	}
	exists := func(name, from string) error {
		if _, ok := m.States[name]; !ok {
			return fmt.Errorf("asl %s: state %s goes to %q, which does not exist", where, from, name)
		}
		return nil
	}
	for name, s := range m.States {
		switch s.Type {
		case "Wait":
			if (s.Seconds == nil) == (s.SecondsPath == "") {
				return fmt.Errorf("asl %s: wait %s needs exactly one of Seconds and SecondsPath", where, name)
			}
			if s.SecondsPath != "" {
				if _, err := parsePath(s.SecondsPath); err != nil {
					return fmt.Errorf("asl %s: state %s: %w", where, name, err)
				}
			}
			fallthrough
		case "Task", "Pass", "Map":
			if s.End == (s.Next != "") {
				return fmt.Errorf("asl %s: state %s needs exactly one of Next and End", where, name)
			}
		case "Choice":
			if len(s.Choices) == 0 {
				return fmt.Errorf("asl %s: choice %s has no Choices", where, name)
			}
		case "Succeed", "Fail":
		default:
			return fmt.Errorf("asl %s: state %s has unsupported Type %q", where, name, s.Type)
		}
		if s.Type == "Task" && s.Resource == "" {
			return fmt.Errorf("asl %s: task %s has no Resource", where, name)
		}
		if s.Next != "" {
			if err := exists(s.Next, name); err != nil {
				return err
			}
		}
		if s.Default != "" {
			if err := exists(s.Default, name); err != nil {
				return err
			}
		}
		for _, c := range s.Choices {
			if err := exists(c.Next, name); err != nil {
				return err
			}
		}
		for _, c := range s.Catch {
			if err := exists(c.Next, name); err != nil {
				return err
			}
		}
		if s.Type == "Map" {
			p := s.ItemProcessor
			if p == nil {
				p = s.Iterator
			}
			if p == nil {
				return fmt.Errorf("asl %s: map %s has no ItemProcessor", where, name)
			}
			if err := p.check(where + "." + name); err != nil {
				return err
			}
			distributed := p.ProcessorConfig != nil && p.ProcessorConfig.Mode == "DISTRIBUTED"
			if !distributed && (s.ItemReader != nil || s.ToleratedFailurePercentage != nil || s.ToleratedFailureCount != nil || s.Label != "") {
				return fmt.Errorf("asl %s: map %s: ItemReader, ToleratedFailure* and Label need a DISTRIBUTED processor", where, name)
			}
			if s.ItemReader != nil {
				if s.ItemReader.Resource == "" {
					return fmt.Errorf("asl %s: map %s: ItemReader has no Resource", where, name)
				}
				if s.ItemsPath != nil {
					return fmt.Errorf("asl %s: map %s: ItemReader and ItemsPath exclude each other", where, name)
				}
				if err := checkTemplate(s.ItemReader.Parameters); err != nil {
					return fmt.Errorf("asl %s: map %s ItemReader: %w", where, name, err)
				}
			}
		}
		for _, path := range []*string{s.InputPath, s.OutputPath, s.ItemsPath} {
			if path != nil {
				if _, err := parsePath(*path); err != nil {
					return fmt.Errorf("asl %s: state %s: %w", where, name, err)
				}
			}
		}
		for _, tmpl := range []any{s.Parameters, s.ResultSelector, s.ItemSelector} {
			if err := checkTemplate(tmpl); err != nil {
				return fmt.Errorf("asl %s: state %s: %w", where, name, err)
			}
		}
	}
	return nil
}

// Tasks returns every Task's state name and Resource, Map processors included.
func (m *Machine) Tasks() map[string]*State {
	out := map[string]*State{}
	for name, s := range m.States {
		switch s.Type {
		case "Task":
			out[name] = s
		case "Map":
			p := s.ItemProcessor
			if p == nil {
				p = s.Iterator
			}
			for k, v := range p.Tasks() {
				out[k] = v
			}
		}
	}
	return out
}

// Invoker runs a Task's Resource with the effective input and returns its result. A returned error is
// the task's failure; its name comes from the Runner's ErrorName (a *Error keeps its own).
type Invoker func(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error)

// Error is a named failure, as Step Functions reports one (Error and Cause).
type Error struct {
	Name  string `json:"Error"`
	Cause string `json:"Cause"`
}

func (e *Error) Error() string { return e.Name + ": " + e.Cause }

// Runner executes a machine.
type Runner struct {
	Machine *Machine
	Invoke  Invoker
	// ErrorName names a task error that is not an *Error (a Lambda's errorType); nil names every such
	// error "States.TaskFailed".
	ErrorName func(error) string
	// Sleep waits between retries; nil sleeps for real. Tests record the delays instead.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand draws the FULL jitter; nil uses math/rand/v2.
	Rand func() float64
}

// Trace is what one execution did.
type Trace struct {
	mu            sync.Mutex
	States        []string          // states entered, in order (Map iterations interleave)
	Retries       map[string]int    // retries per state
	Delays        []time.Duration   // every retry delay, in order
	MaxStateBytes int               // the largest state input, output or task payload, in bytes
	Largest       string            // which state produced it
	Errors        map[string]string // last error name per state
	Waits         []time.Duration   // every Wait state's delay, in order
}

func (t *Trace) enter(name string) {
	t.mu.Lock()
	t.States = append(t.States, name)
	t.mu.Unlock()
}

func (t *Trace) size(name string, v any) {
	b, _ := json.Marshal(v)
	t.mu.Lock()
	if len(b) > t.MaxStateBytes {
		t.MaxStateBytes, t.Largest = len(b), name
	}
	t.mu.Unlock()
}

type execCtx struct {
	name  string
	input any
	item  *mapItem
	trace *Trace
}

type mapItem struct {
	index int
	value any
}

// Run executes the machine on input under the execution name and returns the output, or an *Error
// when the execution fails.
func (r *Runner) Run(ctx context.Context, name string, input json.RawMessage) (json.RawMessage, *Trace, error) {
	var in any
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, nil, fmt.Errorf("asl: execution input: %w", err)
	}
	tr := &Trace{Retries: map[string]int{}, Errors: map[string]string{}}
	tr.size("$input", in)
	out, err := r.run(ctx, r.Machine, in, &execCtx{name: name, input: in, trace: tr})
	if err != nil {
		return nil, tr, err
	}
	b, err := json.Marshal(out)
	return b, tr, err
}

func (r *Runner) run(ctx context.Context, m *Machine, in any, ec *execCtx) (any, error) {
	cur := m.StartAt
	for steps := 0; ; steps++ {
		if steps > 10000 {
			return nil, &Error{Name: "States.Runtime", Cause: "more than 10,000 state transitions"}
		}
		if err := ctx.Err(); err != nil {
			return nil, &Error{Name: "States.Timeout", Cause: err.Error()}
		}
		s := m.States[cur]
		ec.trace.enter(cur)
		ec.trace.size(cur, in)
		next, out, err := r.step(ctx, cur, s, in, ec)
		if err != nil {
			return nil, err
		}
		ec.trace.size(cur, out)
		if next == "" {
			return out, nil
		}
		cur, in = next, out
	}
}

// step runs one state and returns the next state's name ("" at the end) and the output.
func (r *Runner) step(ctx context.Context, name string, s *State, raw any, ec *execCtx) (string, any, error) {
	switch s.Type {
	case "Succeed":
		out, err := io(s, raw, nil, false)
		return "", out, err
	case "Fail":
		return "", nil, &Error{Name: s.Error, Cause: s.Cause}
	case "Choice":
		in, err := inputOf(s, raw)
		if err != nil {
			return "", nil, err
		}
		for _, c := range s.Choices {
			ok, err := c.eval(in)
			if err != nil {
				return "", nil, err
			}
			if ok {
				out, err := io(s, raw, nil, false)
				return c.Next, out, err
			}
		}
		if s.Default == "" {
			return "", nil, &Error{Name: "States.NoChoiceMatched", Cause: "no choice rule matched in " + name}
		}
		out, err := io(s, raw, nil, false)
		return s.Default, out, err
	case "Wait":
		in, err := inputOf(s, raw)
		if err != nil {
			return "", nil, err
		}
		var secs float64
		if s.Seconds != nil {
			secs = *s.Seconds
		} else {
			v, err := evalPath(s.SecondsPath, in, ec)
			f, ok := v.(float64)
			if err != nil || !ok || f < 0 {
				return "", nil, &Error{Name: "States.Runtime", Cause: fmt.Sprintf("wait %s: SecondsPath %s is not a non-negative number", name, s.SecondsPath)}
			}
			secs = f
		}
		d := time.Duration(secs * float64(time.Second))
		ec.trace.mu.Lock()
		ec.trace.Waits = append(ec.trace.Waits, d)
		ec.trace.mu.Unlock()
		sleep := r.Sleep
		if sleep == nil {
			sleep = realSleep
		}
		if err := sleep(ctx, d); err != nil {
			return "", nil, &Error{Name: "States.Timeout", Cause: err.Error()}
		}
		out, err := io(s, raw, nil, false)
		if s.End {
			return "", out, err
		}
		return s.Next, out, err
	case "Pass":
		in, err := inputOf(s, raw)
		if err != nil {
			return "", nil, err
		}
		res := in
		if s.Parameters != nil {
			if res, err = render(s.Parameters, in, ec); err != nil {
				return "", nil, err
			}
		}
		if s.Result != nil {
			res = s.Result
		}
		out, err := io(s, raw, res, true)
		return s.Next, out, err
	case "Task", "Map":
		res, err := r.withRetry(ctx, name, s, raw, ec)
		if err != nil {
			var e *Error
			if !asError(err, &e) {
				return "", nil, err
			}
			for _, c := range s.Catch {
				if matches(c.ErrorEquals, e.Name) {
					var path any = "$"
					if len(c.ResultPath) > 0 {
						if err := json.Unmarshal(c.ResultPath, &path); err != nil {
							return "", nil, err
						}
					}
					out, err := setPath(raw, path, map[string]any{"Error": e.Name, "Cause": e.Cause})
					return c.Next, out, err
				}
			}
			return "", nil, e
		}
		out, err := io(s, raw, res, true)
		if s.End {
			return "", out, err
		}
		return s.Next, out, err
	}
	return "", nil, fmt.Errorf("asl: unsupported state type %q", s.Type)
}

func asError(err error, e **Error) bool {
	if x, ok := err.(*Error); ok {
		*e = x
		return true
	}
	return false
}

// withRetry runs a Task or Map, retrying by its Retry rules. Each retrier counts its own attempts.
func (r *Runner) withRetry(ctx context.Context, name string, s *State, raw any, ec *execCtx) (any, error) {
	attempts := make([]int, len(s.Retry))
	for {
		res, err := r.once(ctx, name, s, raw, ec)
		if err == nil {
			return res, nil
		}
		e, ok := err.(*Error)
		if !ok {
			return nil, err
		}
		ec.trace.mu.Lock()
		ec.trace.Errors[name] = e.Name
		ec.trace.mu.Unlock()
		i := slices.IndexFunc(s.Retry, func(rt *Retrier) bool { return matches(rt.ErrorEquals, e.Name) })
		if i < 0 {
			return nil, e
		}
		rt := s.Retry[i]
		max := 3
		if rt.MaxAttempts != nil {
			max = *rt.MaxAttempts
		}
		if attempts[i] >= max {
			return nil, e
		}
		d := r.delay(rt, attempts[i])
		attempts[i]++
		ec.trace.mu.Lock()
		ec.trace.Retries[name]++
		ec.trace.Delays = append(ec.trace.Delays, d)
		ec.trace.mu.Unlock()
		sleep := r.Sleep
		if sleep == nil {
			sleep = realSleep
		}
		if err := sleep(ctx, d); err != nil {
			return nil, &Error{Name: "States.Timeout", Cause: err.Error()}
		}
	}
}

// delay is IntervalSeconds x BackoffRate^attempt, capped by MaxDelaySeconds, then with FULL jitter a
// uniform draw in [0, that).
func (r *Runner) delay(rt *Retrier, attempt int) time.Duration {
	interval, rate := 1.0, 2.0
	if rt.IntervalSeconds != nil {
		interval = *rt.IntervalSeconds
	}
	if rt.BackoffRate != nil {
		rate = *rt.BackoffRate
	}
	secs := interval * math.Pow(rate, float64(attempt))
	if rt.MaxDelaySeconds > 0 && secs > rt.MaxDelaySeconds {
		secs = rt.MaxDelaySeconds
	}
	if rt.JitterStrategy == "FULL" {
		rnd := r.Rand
		if rnd == nil {
			rnd = rand.Float64
		}
		secs *= rnd()
	}
	return time.Duration(secs * float64(time.Second))
}

func realSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// once runs one attempt of a Task or Map and returns its result after ResultSelector.
func (r *Runner) once(ctx context.Context, name string, s *State, raw any, ec *execCtx) (any, error) {
	in, err := inputOf(s, raw)
	if err != nil {
		return nil, err
	}
	var res any
	if s.Type == "Task" {
		payload := in
		if s.Parameters != nil {
			if payload, err = render(s.Parameters, in, ec); err != nil {
				return nil, err
			}
		}
		ec.trace.size(name+" payload", payload)
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, err
		}
		out, err := r.Invoke(ctx, s.Resource, b)
		if err != nil {
			return nil, r.taskError(err)
		}
		if len(out) == 0 {
			out = []byte("null")
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return nil, &Error{Name: "States.Runtime", Cause: "task result is not JSON: " + err.Error()}
		}
	} else {
		if res, err = r.runMap(ctx, name, s, in, ec); err != nil {
			return nil, err
		}
	}
	if s.ResultSelector != nil {
		return render(s.ResultSelector, res, ec)
	}
	return res, nil
}

func (r *Runner) taskError(err error) error {
	if e, ok := err.(*Error); ok {
		return e
	}
	name := "States.TaskFailed"
	if r.ErrorName != nil {
		name = r.ErrorName(err)
	}
	cause, _ := json.Marshal(map[string]string{"errorMessage": err.Error(), "errorType": name})
	return &Error{Name: name, Cause: string(cause)}
}

func (r *Runner) runMap(ctx context.Context, name string, s *State, in any, ec *execCtx) (any, error) {
	itemsPath := "$"
	if s.ItemsPath != nil {
		itemsPath = *s.ItemsPath
	}
	v, err := evalPath(itemsPath, in, ec)
	if err != nil {
		return nil, err
	}
	if s.ItemReader != nil {
		if v, err = r.readItems(ctx, s.ItemReader, in, ec); err != nil {
			return nil, err
		}
	}
	items, ok := v.([]any)
	if !ok {
		return nil, &Error{Name: "States.Runtime", Cause: fmt.Sprintf("map %s: ItemsPath %s is not an array", name, itemsPath)}
	}
	proc := s.ItemProcessor
	if proc == nil {
		proc = s.Iterator
	}
	sel := s.ItemSelector
	if sel == nil {
		sel = s.Parameters // the older name of ItemSelector
	}
	limit := s.MaxConcurrency
	if limit <= 0 || limit > len(items) {
		limit = max(len(items), 1)
	}
	tolerant := s.ToleratedFailurePercentage != nil || s.ToleratedFailureCount != nil
	results := make([]any, len(items))
	errs := make([]error, len(items))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, item := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			iec := &execCtx{name: ec.name, input: ec.input, item: &mapItem{index: i, value: item}, trace: ec.trace}
			itemIn := item
			if sel != nil {
				var err error
				if itemIn, err = render(sel, in, iec); err != nil {
					errs[i] = err
					cancel()
					return
				}
			}
			if tolerant {
				iec.name = fmt.Sprintf("%s:%d", ec.name, i) // a child execution of its own
			}
			results[i], errs[i] = r.run(ctx, proc, itemIn, iec)
			if errs[i] != nil && !tolerant {
				cancel() // one failed iteration fails the Map: stop starting others
			}
		}()
	}
	wg.Wait()
	if tolerant {
		return tolerate(name, s, results, errs)
	}
	for _, err := range errs {
		if err != nil {
			if e, ok := err.(*Error); ok && e.Name == "States.Timeout" {
				continue // a sibling's cancellation: report the iteration that failed first
			}
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

// readItems invokes a Distributed Map's ItemReader; its result must be a JSON array.
func (r *Runner) readItems(ctx context.Context, rd *ItemReader, in any, ec *execCtx) (any, error) {
	params, err := render(rd.Parameters, in, ec)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	out, err := r.Invoke(ctx, rd.Resource, b)
	if err != nil {
		return nil, r.taskError(err)
	}
	var items []any
	if err := json.Unmarshal(out, &items); err != nil {
		return nil, &Error{Name: "States.ItemReaderFailed", Cause: "the item reader did not return a JSON array: " + err.Error()}
	}
	if rd.ReaderConfig != nil && rd.ReaderConfig.MaxItems > 0 && len(items) > rd.ReaderConfig.MaxItems {
		items = items[:rd.ReaderConfig.MaxItems]
	}
	return items, nil
}

// tolerate ends a Distributed Map whose failed iterations are tolerated: it fails with
// States.ExceedToleratedFailureThreshold when more failed than ToleratedFailurePercentage of the
// items or than ToleratedFailureCount allow (either); a failed iteration's result is null.
func tolerate(name string, s *State, results []any, errs []error) (any, error) {
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			results[i] = nil
		}
	}
	over := false
	if p := s.ToleratedFailurePercentage; p != nil && len(errs) > 0 && float64(failed)*100 > *p*float64(len(errs)) {
		over = true
	}
	if c := s.ToleratedFailureCount; c != nil && failed > *c {
		over = true // either threshold breached fails the Map Run
	}
	if over {
		return nil, &Error{Name: "States.ExceedToleratedFailureThreshold", Cause: fmt.Sprintf("map %s: %d of %d items failed", name, failed, len(errs))}
	}
	return results, nil
}

// matches implements ErrorEquals: exact names, States.ALL for anything, States.TaskFailed for any
// task failure except a timeout.
func matches(names []string, err string) bool {
	for _, n := range names {
		switch {
		case n == err, n == "States.ALL":
			return true
		case n == "States.TaskFailed" && err != "States.Timeout":
			return true
		}
	}
	return false
}

// inputOf applies InputPath.
func inputOf(s *State, raw any) (any, error) {
	if s.InputPath == nil {
		return raw, nil
	}
	return evalPath(*s.InputPath, raw, nil)
}

// io applies ResultPath (when hasResult) and OutputPath to produce a state's output.
func io(s *State, raw, res any, hasResult bool) (any, error) {
	out := raw
	if hasResult {
		var path any = "$"
		if len(s.ResultPath) > 0 {
			if err := json.Unmarshal(s.ResultPath, &path); err != nil {
				return nil, err
			}
		}
		var err error
		if out, err = setPath(raw, path, res); err != nil {
			return nil, err
		}
	}
	if s.OutputPath != nil {
		return evalPath(*s.OutputPath, out, nil)
	}
	return out, nil
}

// step of a path: a field name or an array index.
type seg struct {
	field string
	index int
	isIdx bool
}

// parsePath parses "$", "$.a.b", "$.a[0].b", and the context object's "$$.x.y".
func parsePath(p string) ([]seg, error) {
	rest, ok := strings.CutPrefix(p, "$$")
	if !ok {
		if rest, ok = strings.CutPrefix(p, "$"); !ok {
			return nil, fmt.Errorf("path %q must start with $", p)
		}
	}
	var segs []seg
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			name := rest[:end]
			if name == "" || strings.ContainsAny(name, "*?@()'\" ") {
				return nil, fmt.Errorf("path %q: unsupported segment %q", p, name)
			}
			segs = append(segs, seg{field: name})
			rest = rest[end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", p)
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("path %q: only non-negative array indexes are supported", p)
			}
			segs = append(segs, seg{index: n, isIdx: true})
			rest = rest[end+1:]
		default:
			return nil, fmt.Errorf("path %q: unexpected %q", p, rest[:1])
		}
	}
	return segs, nil
}

func evalPath(p string, in any, ec *execCtx) (any, error) {
	segs, err := parsePath(p)
	if err != nil {
		return nil, &Error{Name: "States.Runtime", Cause: err.Error()}
	}
	cur := in
	if strings.HasPrefix(p, "$$") {
		cur = contextObject(ec)
	}
	for _, s := range segs {
		switch v := cur.(type) {
		case map[string]any:
			x, ok := v[s.field]
			if s.isIdx || !ok {
				return nil, &Error{Name: "States.Runtime", Cause: fmt.Sprintf("path %s: %s not found in the input", p, s.field)}
			}
			cur = x
		case []any:
			if !s.isIdx || s.index >= len(v) {
				return nil, &Error{Name: "States.Runtime", Cause: fmt.Sprintf("path %s: index out of range", p)}
			}
			cur = v[s.index]
		default:
			return nil, &Error{Name: "States.Runtime", Cause: fmt.Sprintf("path %s: not found in the input", p)}
		}
	}
	return cur, nil
}

func contextObject(ec *execCtx) any {
	if ec == nil {
		return map[string]any{}
	}
	c := map[string]any{"Execution": map[string]any{"Name": ec.name, "Input": ec.input}}
	if ec.item != nil {
		c["Map"] = map[string]any{"Item": map[string]any{"Index": float64(ec.item.index), "Value": ec.item.value}}
	}
	return c
}

// setPath returns a copy of in with v placed at path (a string path, or nil to discard v).
func setPath(in any, path any, v any) (any, error) {
	if path == nil {
		return in, nil
	}
	p, ok := path.(string)
	if !ok {
		return nil, fmt.Errorf("asl: ResultPath must be a string or null")
	}
	segs, err := parsePath(p)
	if err != nil {
		return nil, &Error{Name: "States.Runtime", Cause: err.Error()}
	}
	if len(segs) == 0 {
		return v, nil
	}
	root, _ := in.(map[string]any)
	out := clone(root)
	cur := out
	for i, s := range segs {
		if s.isIdx {
			return nil, &Error{Name: "States.Runtime", Cause: "ResultPath with an array index is not supported"}
		}
		if i == len(segs)-1 {
			cur[s.field] = v
			break
		}
		next, _ := cur[s.field].(map[string]any)
		next = clone(next)
		cur[s.field] = next
		cur = next
	}
	return out, nil
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// render fills a payload template: keys ending in ".$" take the value of their path.
func render(tmpl any, in any, ec *execCtx) (any, error) {
	switch t := tmpl.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			if name, ok := strings.CutSuffix(k, ".$"); ok {
				p, _ := v.(string)
				x, err := evalPath(p, in, ec)
				if err != nil {
					return nil, err
				}
				out[name] = x
				continue
			}
			x, err := render(v, in, ec)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			x, err := render(v, in, ec)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	return tmpl, nil
}

// checkTemplate refuses what render cannot do: intrinsic functions and non-path ".$" values.
func checkTemplate(tmpl any) error {
	switch t := tmpl.(type) {
	case map[string]any:
		for k, v := range t {
			if strings.HasSuffix(k, ".$") {
				p, ok := v.(string)
				if !ok {
					return fmt.Errorf("%s must be a path string", k)
				}
				if strings.HasPrefix(p, "States.") {
					return fmt.Errorf("%s: intrinsic functions are not supported", k)
				}
				if _, err := parsePath(p); err != nil {
					return err
				}
				continue
			}
			if err := checkTemplate(v); err != nil {
				return err
			}
		}
	case []any:
		for _, v := range t {
			if err := checkTemplate(v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Rule) eval(in any) (bool, error) {
	switch {
	case c.And != nil:
		for _, r := range c.And {
			if ok, err := r.eval(in); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case c.Or != nil:
		for _, r := range c.Or {
			if ok, err := r.eval(in); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case c.Not != nil:
		ok, err := c.Not.eval(in)
		return !ok, err
	}
	v, err := evalPath(c.Variable, in, nil)
	if c.IsPresent != nil {
		return (err == nil) == *c.IsPresent, nil
	}
	if err != nil {
		return false, err
	}
	switch {
	case c.BooleanEquals != nil:
		b, ok := v.(bool)
		return ok && b == *c.BooleanEquals, nil
	case c.StringEquals != nil:
		s, ok := v.(string)
		return ok && s == *c.StringEquals, nil
	case c.NumericEquals != nil, c.NumericGreaterThan != nil, c.NumericLessThan != nil:
		f, ok := v.(float64)
		if !ok {
			return false, nil
		}
		switch {
		case c.NumericEquals != nil:
			return f == *c.NumericEquals, nil
		case c.NumericGreaterThan != nil:
			return f > *c.NumericGreaterThan, nil
		default:
			return f < *c.NumericLessThan, nil
		}
	}
	return false, fmt.Errorf("asl: choice rule on %s has no supported comparison", c.Variable)
}
