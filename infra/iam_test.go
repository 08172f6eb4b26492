package infra

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/docmind/docmind/shared/ingest"
)

// The fakes do not enforce IAM, so a function could pass every emulator test and still be denied on AWS
// (a removal purging staging the ingest role could not list). s3Policy is a function's S3 statements
// from template.yaml, evaluated the way IAM does for the documents bucket; the emulator test puts a
// proxy enforcing it in front of the fake S3 of each function.

// s3Statement is one Allow statement's S3 part. Object patterns are relative to the documents bucket
// ("/sources/default/*": goformation resolves ${DocumentsBucket.Arn} to ""); bucket is true when the
// statement names the bucket itself (!GetAtt DocumentsBucket.Arn resolves to null).
type s3Statement struct {
	Sid      string
	Actions  []string
	Objects  []string
	Bucket   bool
	Prefixes []string // StringLike s3:prefix; empty: no condition
}

type s3Policy struct {
	Function   string
	Statements []s3Statement
}

// templateS3Policies returns every function's S3 statements, parameters at their defaults.
func templateS3Policies(t *testing.T) map[string]s3Policy {
	t.Helper()
	tmpl, err := goformation.OpenWithOptions(filepath.Join("..", "template.yaml"), &intrinsics.ProcessorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]s3Policy{}
	for name, fn := range tmpl.GetAllServerlessFunctionResources() {
		p := s3Policy{Function: name}
		b, _ := json.Marshal(fn.Policies)
		var docs []struct {
			Statement []struct {
				Sid       string
				Effect    string
				Action    any
				Resource  any
				Condition map[string]map[string]any
			}
		}
		if err := json.Unmarshal(b, &docs); err != nil {
			t.Fatalf("%s: policies: %v", name, err)
		}
		for _, d := range docs {
			for _, st := range d.Statement {
				var s3 []string
				for _, a := range strings1(st.Action) {
					if strings.HasPrefix(a, "s3:") {
						s3 = append(s3, a)
					}
				}
				if len(s3) == 0 || st.Effect != "Allow" {
					continue
				}
				s := s3Statement{Sid: st.Sid, Actions: s3, Prefixes: strings1(st.Condition["StringLike"]["s3:prefix"])}
				if st.Resource == nil {
					s.Bucket = true
				}
				for _, r := range strings1(st.Resource) {
					if strings.HasPrefix(r, "/") {
						s.Objects = append(s.Objects, strings.TrimPrefix(r, "/"))
					}
				}
				p.Statements = append(p.Statements, s)
			}
		}
		out[name] = p
	}
	return out
}

// strings1 reads a policy value that is a string or a list of strings.
func strings1(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// like is IAM's StringLike / resource matching: "*" matches any run of characters, "/" included.
func like(pattern, s string) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
	return regexp.MustCompile(re).MatchString(s)
}

// allows reports whether the policy allows action on key (an object action) or, for s3:ListBucket, on the
// bucket with s3:prefix = key.
func (p s3Policy) allows(action, key string) bool {
	for _, s := range p.Statements {
		if !containsString(s.Actions, action) {
			continue
		}
		if action == "s3:ListBucket" || action == "s3:ListBucketVersions" {
			if !s.Bucket {
				continue
			}
			if len(s.Prefixes) == 0 {
				return true
			}
			for _, pre := range s.Prefixes {
				if like(pre, key) {
					return true
				}
			}
			continue
		}
		for _, o := range s.Objects {
			if like(o, key) {
				return true
			}
		}
	}
	return false
}

func containsString(xs []string, x string) bool {
	for _, e := range xs {
		if e == x {
			return true
		}
	}
	return false
}

// s3Request is the IAM action one path-style S3 request needs, and the key (or list prefix) it names.
type s3Request struct{ Action, Key string }

// s3Actions maps a path-style request on bucket to the IAM actions it needs. A multi-object delete
// (POST ?delete) needs s3:DeleteObject on each key of its body.
func s3Actions(r *http.Request, bucket string, body []byte) ([]s3Request, error) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	b, key, _ := strings.Cut(path, "/")
	if b != bucket {
		return nil, fmt.Errorf("bucket %q is not the documents bucket", b)
	}
	key, _ = url.PathUnescape(key)
	q := r.URL.Query()
	version := q.Get("versionId") != ""
	if key == "" {
		switch {
		case r.Method == http.MethodGet && q.Has("versions"):
			return []s3Request{{"s3:ListBucketVersions", q.Get("prefix")}}, nil
		case r.Method == http.MethodGet && (q.Has("list-type") || len(q) == 0 || q.Has("prefix")):
			return []s3Request{{"s3:ListBucket", q.Get("prefix")}}, nil
		case r.Method == http.MethodPost && q.Has("delete"):
			var del struct {
				Objects []struct{ Key string } `xml:"Object"`
			}
			if err := xml.Unmarshal(body, &del); err != nil {
				return nil, err
			}
			var out []s3Request
			for _, o := range del.Objects {
				out = append(out, s3Request{"s3:DeleteObject", o.Key})
			}
			return out, nil
		}
		return nil, fmt.Errorf("bucket request %s %s is not modelled", r.Method, r.URL.RawQuery)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if version {
			return []s3Request{{"s3:GetObjectVersion", key}}, nil
		}
		return []s3Request{{"s3:GetObject", key}}, nil
	case http.MethodPut:
		out := []s3Request{{"s3:PutObject", key}}
		if src := r.Header.Get("X-Amz-Copy-Source"); src != "" {
			src, _ = url.PathUnescape(strings.TrimPrefix(src, "/"))
			_, k, _ := strings.Cut(src, "/")
			k, _, _ = strings.Cut(k, "?versionId=")
			out = append(out, s3Request{"s3:GetObject", k})
		}
		return out, nil
	case http.MethodDelete:
		if version {
			return []s3Request{{"s3:DeleteObjectVersion", key}}, nil
		}
		return []s3Request{{"s3:DeleteObject", key}}, nil
	}
	return nil, fmt.Errorf("object request %s is not modelled", r.Method)
}

// iamProxy forwards a function's S3 requests to the fake S3 when its template policy allows them and
// answers AccessDenied otherwise, recording every denial.
type iamProxy struct {
	policy s3Policy
	bucket string
	next   http.Handler
	mu     sync.Mutex
	denied []string
	seen   map[string]int // action -> requests allowed
}

func (p *iamProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	reqs, err := s3Actions(r, p.bucket, body)
	p.mu.Lock()
	if err != nil {
		p.denied = append(p.denied, err.Error())
	}
	for _, q := range reqs {
		if !p.policy.allows(q.Action, q.Key) {
			err = fmt.Errorf("%s on %q", q.Action, q.Key)
			p.denied = append(p.denied, err.Error())
		} else {
			p.seen[q.Action]++
		}
	}
	p.mu.Unlock()
	if err != nil {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>%s (template.yaml %s)</Message></Error>`,
			xmlEscape(err.Error()), p.policy.Function)
		return
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	r.ContentLength = int64(len(body))
	p.next.ServeHTTP(w, r)
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Denied returns the requests the policy refused so far.
func (p *iamProxy) Denied() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.denied...)
}

// newIAMProxy serves fn's policy in front of the S3 server at target.
func newIAMProxy(t *testing.T, policy s3Policy, bucket, target string) (*iamProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &iamProxy{policy: policy, bucket: bucket, next: httputil.NewSingleHostReverseProxy(u), seen: map[string]int{}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// The evaluator itself: what it must allow and refuse on the template as written.
func TestS3PolicyEvaluator(t *testing.T) {
	pol := templateS3Policies(t)
	const tenant = "default" // the Tenant parameter's default
	cases := []struct {
		fn, action, key string
		want            bool
	}{
		{"StageFunction", "s3:GetObjectVersion", "inbox/handbook/a.md", true},
		{"StageFunction", "s3:PutObject", "sources/" + tenant + "/kb/doc/source.md", true},
		{"StageFunction", "s3:PutObject", "sources/other/kb/doc/source.md", false},
		{"StageFunction", "s3:GetObject", "uploads/other/doc", false},
		{"StageFunction", "s3:PutObject", "inbox/handbook/a.md", false},
		{"StageFunction", "s3:ListBucket", "staging/" + tenant + "/doc/", true},
		{"StageFunction", "s3:ListBucket", "staging/other/doc/", false},
		{"ExtractFunction", "s3:GetObject", "sources/" + tenant + "/kb/doc/source.pdf", true},
		{"ExtractFunction", "s3:DeleteObject", "sources/" + tenant + "/kb/doc/source.pdf", false},
		{"IngestFunction", "s3:PutObject", "sources/" + tenant + "/kb/doc/source.md", false},
		{"MigrateFunction", "s3:GetObject", "inbox/handbook/a.md", false},
		{"ConsistencyFunction", "s3:PutObject", "inbox/.deleted-kb-20260101T000000Z/a.md", true},
		{"ConsistencyFunction", "s3:PutObject", "inbox/kb/a.md", false},
		{"ApiFunction", "s3:PutObject", "uploads/" + tenant + "/doc", true},
		{"ApiFunction", "s3:PutObject", "uploads/other/doc", false},
		{"ApiFunction", "s3:GetObject", "sources/other/kb/doc/source.md", false},
		{"ApiFunction", "s3:DeleteObject", "staging/other/doc/chunks.json", false},
		{"ApiFunction", "s3:ListBucket", "sources/other/kb/", false},
	}
	for _, c := range cases {
		if got := pol[c.fn].allows(c.action, c.key); got != c.want {
			t.Errorf("%s %s %q: allowed %v, want %v", c.fn, c.action, c.key, got, c.want)
		}
	}
	// the workflow's functions reach no other tenant's prefixes, with any action they hold
	for _, fn := range []string{"StageFunction", "ExtractFunction", "IngestFunction", "ConsistencyFunction", "ApiFunction"} {
		for _, st := range pol[fn].Statements {
			for _, a := range st.Actions {
				for _, key := range []string{"sources/other/kb/doc/source.md", "staging/other/doc/chunks.json", "uploads/other/doc"} {
					if pol[fn].allows(a, key) {
						t.Errorf("%s may %s %q: another tenant's prefix", fn, a, key)
					}
				}
			}
		}
	}
}

// What a delete does to the bucket, by the functions that delete: a removal event (IngestFunction) and
// the scheduled repair (ConsistencyFunction) purge a document; DELETE /api/documents/{id} and
// DELETE /api/kbs/{kb} (ApiFunction) purge documents and a knowledge base, renaming its drop folder. The
// keys come from shared/ingest's own layout, so a change there that needs a new permission fails here.
// (The emulator test enforces the same policies on the built functions' real requests.)
func TestDeletesAreAllowedByTheirFunctionsPolicies(t *testing.T) {
	pol := templateS3Policies(t)
	const tenant, kb, doc = "default", "kb-1", "doc-1"
	deleted := ingest.DeletedInboxName("handbook", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	document := []s3Request{
		{"s3:ListBucket", ingest.SourcePrefix(tenant, kb, doc)},
		{"s3:DeleteObject", ingest.SourcePrefix(tenant, kb, doc) + "source.md"},
		{"s3:ListBucket", ingest.StagingPrefix(tenant, doc)},
		{"s3:DeleteObject", ingest.StagingPrefix(tenant, doc) + "chunks.json"},
	}
	knowledgeBase := append([]s3Request{
		{"s3:ListBucket", "inbox/handbook/"},
		{"s3:ListBucket", "inbox/" + deleted + "/HR policy.md"}, // a free retired name is looked for first
		{"s3:GetObject", "inbox/handbook/HR policy.md"},
		{"s3:PutObject", "inbox/" + deleted + "/HR policy.md"},
		{"s3:DeleteObject", "inbox/handbook/HR policy.md"},
		{"s3:ListBucket", ingest.SourcePrefix(tenant, kb, "")},
	}, document...)
	for fn, reqs := range map[string][]s3Request{"IngestFunction": document, "ConsistencyFunction": knowledgeBase, "ApiFunction": knowledgeBase} {
		for _, q := range reqs {
			if !pol[fn].allows(q.Action, q.Key) {
				t.Errorf("%s may not %s %q: its delete would be denied on AWS", fn, q.Action, q.Key)
			}
		}
	}
}
