// Package textracttest is a fake Amazon Textract for tests: an httptest server speaking the service's
// JSON 1.1 protocol (POST /, X-Amz-Target "Textract.<Operation>", application/x-amz-json-1.1, errors as
// {"__type": ..., "Message": ...} with a 4xx/5xx status), with response shapes from the service's API
// reference (Blocks with Id, BlockType, Text, Confidence, Page, Relationships, RowIndex, ColumnIndex,
// RowSpan, ColumnSpan, EntityTypes; JobStatus, StatusMessage, NextToken, DocumentMetadata). The real
// SDK client is pointed at it, so requests are built, signed and parsed by the code that runs on AWS.
// A Builder makes the blocks of pages with layout, lines, words and tables.
package textracttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Block is one block as the service sends it (field names from the API reference).
type Block struct {
	Id            string         `json:"Id"`
	BlockType     string         `json:"BlockType"`
	Text          string         `json:"Text,omitempty"`
	Confidence    float64        `json:"Confidence,omitempty"`
	Page          int            `json:"Page,omitempty"`
	TextType      string         `json:"TextType,omitempty"`
	RowIndex      int            `json:"RowIndex,omitempty"`
	ColumnIndex   int            `json:"ColumnIndex,omitempty"`
	RowSpan       int            `json:"RowSpan,omitempty"`
	ColumnSpan    int            `json:"ColumnSpan,omitempty"`
	EntityTypes   []string       `json:"EntityTypes,omitempty"`
	Relationships []Relationship `json:"Relationships,omitempty"`
	Geometry      map[string]any `json:"Geometry,omitempty"`
}

// Relationship links a block to others: CHILD, MERGED_CELL, TABLE_TITLE, TABLE_FOOTER.
type Relationship struct {
	Type string   `json:"Type"`
	Ids  []string `json:"Ids"`
}

// Job is one document analysis job.
type Job struct {
	// Status is the JobStatus after InProgressPolls status reads (IN_PROGRESS before them).
	Status          string
	Message         string // StatusMessage
	InProgressPolls int
	// Results are the response pages a GetDocumentAnalysis caller pages through with NextToken.
	Results [][]Block
	Pages   int // DocumentMetadata.Pages
	// Warnings are sent with every result page ({"ErrorCode": ..., "Pages": [...]}, as the API
	// reference's Warning), as a PARTIAL_SUCCESS job's are.
	Warnings []map[string]any
	polls    int
}

// Call is one request the fake received.
type Call struct {
	Op   string // AnalyzeDocument, StartDocumentAnalysis, GetDocumentAnalysis
	Body map[string]any
}

// Server is the fake service.
type Server struct {
	*httptest.Server
	mu sync.Mutex
	// Analyze answers AnalyzeDocument: the blocks and DocumentMetadata.Pages.
	Analyze func(body map[string]any) ([]Block, int)
	// NewJob makes the job a StartDocumentAnalysis starts (nil: a job with no results).
	NewJob func(body map[string]any) *Job
	// Throttle fails the next requests with these error codes (HTTP 400), one each, in order: the
	// throttling ones, or any other error the service returns.
	Throttle []string
	// Malformed makes every response body this text instead of the real one.
	Malformed string
	jobs      map[string]*Job
	tokens    map[string]string // ClientRequestToken -> job id
	calls     []Call
	seq       int
}

// New starts the fake; it is closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{jobs: map[string]*Job{}, tokens: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Calls returns the requests received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Ops counts the requests per operation.
func (s *Server) Ops() map[string]int {
	out := map[string]int{}
	for _, c := range s.Calls() {
		out[c.Op]++
	}
	return out
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": code, "Message": msg})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "Textract.")
	if r.Method != http.MethodPost || r.URL.Path != "/" || !ok {
		writeErr(w, 400, "UnknownOperationException", "not a Textract JSON 1.1 request: "+r.Method+" "+r.URL.Path+" "+target)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		writeErr(w, 400, "SerializationException", "Content-Type "+ct)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		writeErr(w, 403, "MissingAuthenticationTokenException", "the request is not signed")
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		writeErr(w, 400, "SerializationException", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Op: op, Body: body})
	if len(s.Throttle) > 0 {
		code := s.Throttle[0]
		s.Throttle = s.Throttle[1:]
		msg := "Rate exceeded"
		if !strings.Contains(code, "Throttl") && !strings.Contains(code, "Exceeded") {
			msg = "injected by the test"
		}
		writeErr(w, 400, code, msg)
		return
	}
	var out any
	switch op {
	case "AnalyzeDocument":
		if s.Analyze == nil {
			writeErr(w, 400, "UnsupportedDocumentException", "Request has unsupported document format")
			return
		}
		blocks, pages := s.Analyze(body)
		out = map[string]any{"DocumentMetadata": map[string]any{"Pages": pages}, "Blocks": blocks, "AnalyzeDocumentModelVersion": "1.0"}
	case "StartDocumentAnalysis":
		if tok, _ := body["ClientRequestToken"].(string); tok != "" && s.tokens[tok] != "" {
			out = map[string]any{"JobId": s.tokens[tok]}
			break
		}
		j := &Job{Status: "SUCCEEDED"}
		if s.NewJob != nil {
			j = s.NewJob(body)
		}
		s.seq++
		id := fmt.Sprintf("%064x", s.seq)
		s.jobs[id] = j
		if tok, _ := body["ClientRequestToken"].(string); tok != "" {
			s.tokens[tok] = id
		}
		out = map[string]any{"JobId": id}
	case "GetDocumentAnalysis":
		id, _ := body["JobId"].(string)
		j, ok := s.jobs[id]
		if !ok {
			writeErr(w, 400, "InvalidJobIdException", "An invalid job identifier was passed.")
			return
		}
		out = j.get(body)
	default:
		writeErr(w, 400, "UnknownOperationException", op)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if s.Malformed != "" {
		io.WriteString(w, s.Malformed)
		return
	}
	json.NewEncoder(w).Encode(out)
}

// get is one GetDocumentAnalysis response: IN_PROGRESS for the first polls, then the status, and
// when it succeeded the result page the NextToken names ("" or absent: the first).
func (j *Job) get(body map[string]any) map[string]any {
	if j.polls < j.InProgressPolls {
		j.polls++
		return map[string]any{"JobStatus": "IN_PROGRESS"}
	}
	out := map[string]any{"JobStatus": j.Status, "DocumentMetadata": map[string]any{"Pages": j.Pages}}
	if j.Message != "" {
		out["StatusMessage"] = j.Message
	}
	if len(j.Warnings) > 0 {
		out["Warnings"] = j.Warnings
	}
	if j.Status == "FAILED" || len(j.Results) == 0 {
		return out
	}
	i := 0
	if tok, _ := body["NextToken"].(string); tok != "" {
		fmt.Sscanf(tok, "page-%d", &i)
	}
	if i >= len(j.Results) {
		i = len(j.Results) - 1
	}
	blocks := j.Results[i]
	if max, ok := body["MaxResults"].(float64); ok && int(max) < len(blocks) {
		blocks = blocks[:int(max)] // a status check: the first blocks only, with no token
		out["Blocks"] = blocks
		return out
	}
	out["Blocks"] = blocks
	if i+1 < len(j.Results) {
		out["NextToken"] = fmt.Sprintf("page-%d", i+1)
	}
	return out
}

// Split cuts blocks into n response pages of about equal size, as NextToken paging delivers them.
func Split(blocks []Block, n int) [][]Block {
	var out [][]Block
	size := (len(blocks) + n - 1) / n
	for len(blocks) > 0 {
		k := min(size, len(blocks))
		out = append(out, blocks[:k])
		blocks = blocks[k:]
	}
	return out
}
