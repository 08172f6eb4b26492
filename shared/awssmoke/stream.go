package awssmoke

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// GroupGap separates two arrivals: frames read less than GroupGap after the previous frame came
// together (one network read, or the segments of one buffered body); a model's tokens come tens of
// milliseconds apart.
const GroupGap = 10 * time.Millisecond

// StreamStats is what the stream check measured.
type StreamStats struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Frames      int    `json:"frames"` // SSE events
	Tokens      int    `json:"tokens"` // token events among them
	// Groups counts the separate arrivals among the frames: 1 means the whole answer came at once.
	Groups    int           `json:"groups"`
	FirstByte time.Duration `json:"first_frame_ns"` // request sent to the first frame
	Spread    time.Duration `json:"spread_ns"`      // first frame to the last
	MaxGap    time.Duration `json:"max_gap_ns"`     // the longest wait between two frames
	Bytes     int           `json:"bytes"`
	First     string        `json:"first"` // the first event's name (meta)
	Last      string        `json:"last"`  // the last one's (done)
	Sources   int           `json:"sources"`
}

// frame is one event and when the read that completed it returned.
type frame struct {
	name string
	data []byte
	at   time.Time
}

// Measure sends one chat request and reads the event stream, time-stamping every frame at the read
// that completed it. It returns the frames' statistics; the error is for a request that could not be
// made or a body cut short.
func (s *Smoke) Measure(ctx context.Context, question string, kbs []string) (StreamStats, error) {
	s.defaults()
	var st StreamStats
	body, _ := json.Marshal(map[string]any{"question": question, "kbs": kbs})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(s.Out.ChatURL, "/")+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return st, err
	}
	sum := sha256.Sum256(body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	// a NONE Function URL reads Authorization; behind CloudFront with origin access control the key
	// travels in X-Docmind-Authorization and the body's hash in x-amz-content-sha256 (OAC signs it)
	req.Header.Set("Authorization", "Bearer "+s.Key)
	req.Header.Set("X-Docmind-Authorization", "Bearer "+s.Key)
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	sent := s.Now()
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return st, fmt.Errorf("POST %s: %w", req.URL, err)
	}
	defer resp.Body.Close()
	st.Status, st.ContentType = resp.StatusCode, resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(st.ContentType, "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return st, &errStatus{method: "POST", url: req.URL.String(), code: resp.StatusCode, body: string(b)}
	}
	frames, n, err := readFrames(resp.Body, s.Now)
	st.Bytes = n
	summarise(&st, frames, sent)
	if err != nil {
		return st, fmt.Errorf("the stream broke after %d frames: %w", len(frames), err)
	}
	return st, nil
}

// readFrames splits the body into events, each stamped with the time its last byte was read.
func readFrames(r io.Reader, now func() time.Time) ([]frame, int, error) {
	var frames []frame
	var pending []byte
	buf := make([]byte, 32<<10)
	total := 0
	for {
		n, err := r.Read(buf)
		at := now()
		total += n
		pending = append(pending, buf[:n]...)
		for {
			i := bytes.Index(pending, []byte("\n\n"))
			if i < 0 {
				break
			}
			if f, ok := parseFrame(pending[:i]); ok {
				f.at = at
				frames = append(frames, f)
			}
			pending = pending[i+2:]
		}
		if errors.Is(err, io.EOF) {
			return frames, total, nil
		}
		if err != nil {
			return frames, total, err
		}
	}
}

func parseFrame(b []byte) (frame, bool) {
	var f frame
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "event:"):
			f.name = strings.TrimSpace(strings.TrimPrefix(l, "event:"))
		case strings.HasPrefix(l, "data:"):
			f.data = append(f.data, strings.TrimPrefix(strings.TrimPrefix(l, "data:"), " ")...)
		}
	}
	return f, f.name != "" || len(f.data) > 0
}

func summarise(st *StreamStats, frames []frame, sent time.Time) {
	st.Frames = len(frames)
	if len(frames) == 0 {
		return
	}
	st.First, st.Last = frames[0].name, frames[len(frames)-1].name
	st.FirstByte = frames[0].at.Sub(sent)
	st.Spread = frames[len(frames)-1].at.Sub(frames[0].at)
	st.Groups = 1
	for i, f := range frames {
		if f.name == "token" {
			st.Tokens++
		}
		if i == 0 {
			continue
		}
		gap := f.at.Sub(frames[i-1].at)
		st.MaxGap = max(st.MaxGap, gap)
		if gap >= GroupGap {
			st.Groups++
		}
	}
	if st.Last == "done" {
		var d struct {
			Sources []json.RawMessage `json:"sources"`
		}
		if json.Unmarshal(frames[len(frames)-1].data, &d) == nil {
			st.Sources = len(d.Sources)
		}
	}
}

// stream asks the question over the smoke knowledge base (which holds the uploaded document) and judges
// the measurement.
func (s *Smoke) stream(ctx context.Context) Result {
	r := Result{Check: "stream"}
	st, err := s.Measure(ctx, s.Question, []string{s.KB})
	r.Stream = &st
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }
	seen := fmt.Sprintf("%d frames (%d tokens, %d sources) in %d arrivals; first frame after %s, spread %s, longest gap %s, %d bytes",
		st.Frames, st.Tokens, st.Sources, st.Groups, ms(st.FirstByte), ms(st.Spread), ms(st.MaxGap), st.Bytes)
	switch {
	case err != nil && st.Status == 0:
		r.Status, r.Message, r.Look = Fail, err.Error(), "the ChatUrl output is not reachable from here: check the URL and your network"
	case err != nil && st.Status != http.StatusOK:
		r.Status, r.Message = Fail, err.Error()
		r.Look = map[int]string{
			http.StatusUnauthorized: "the API key (the key variable): the chat function accepts keys of the stack's tenant only",
			http.StatusForbidden:    "CloudFront or the Function URL refused the request: with AuthType AWS_IAM call ChatUrl (CloudFront), not QueryFunctionUrl; check the ChatDistribution's origin access control",
		}[st.Status]
		if r.Look == "" {
			r.Look = "the chat function's logs: " + s.logs("QueryFunction")
		}
	case err != nil:
		r.Status, r.Message = Fail, err.Error()+" (not text/event-stream, or cut): "+seen
		r.Look = "the chat function's logs (a timeout or the 6 MB cap cuts a stream): " + s.logs("QueryFunction")
	case st.First != "meta" || st.Last != "done":
		r.Status, r.Message = Fail, fmt.Sprintf("the stream starts with %q and ends with %q, want meta ... done: %s", st.First, st.Last, seen)
		r.Look = "the chat function's logs (an error event ends a stream early): " + s.logs("QueryFunction")
	case st.Tokens < s.MinGroups:
		r.Status, r.Message = Fail, "the answer is too short to show streaming: "+seen
		r.Look = "ask a question that needs a longer answer (--question); an abstention is one frame"
	case st.Groups < s.MinGroups:
		r.Status, r.Message = Fail, "the frames arrived at once, not one at a time: "+seen
		r.Look = "the Function URL must use InvokeMode RESPONSE_STREAM (template.yaml QueryFunctionUrl), and nothing in front of it may buffer (a proxy, or a CloudFront behaviour that caches or compresses text/event-stream); infra/smoke-stream.sh shows first byte against total time"
	default:
		r.Status, r.Message = Pass, "frames arrived one at a time: "+seen
	}
	return r
}
