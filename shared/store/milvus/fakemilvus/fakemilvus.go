// Package fakemilvus is an in-process Milvus gRPC server for tests: the real milvus-proto service,
// served on 127.0.0.1, with exact (brute-force) search and Milvus's data semantics where they matter to
// docmind: insert does not dedupe primary keys (count(*) sees duplicates), upsert replaces by primary
// key, delete takes a boolean expression, search needs a loaded collection, count(*) counts live rows.
// It evaluates the subset of Milvus's expression language docmind emits (comparisons and in-lists of
// string and number literals over fields and JSON paths, exists, is null, not, and, or, parentheses,
// array_contains(_any), json_contains(_any); parseExpr) and rejects anything else, so a malformed
// expression fails the test instead of matching silently. JSON fields (nullable or not) are stored
// decoded, and AddCollectionField adds a nullable field that existing rows hold as null. Only tests
// import it.
package fakemilvus

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus-proto/go-api/v2/schemapb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Server is the fake. Inject, when set, runs before every call: a non-nil *commonpb.Status it returns
// is sent as the call's failure (e.g. RateLimit), letting tests inject server-side faults.
type Server struct {
	milvuspb.UnimplementedMilvusServiceServer

	mu     sync.Mutex
	colls  map[string]*collection
	nextID int64
	Inject func(method string) *commonpb.Status

	srv *grpc.Server
	lis net.Listener

	token string // when set, every call must carry authorization = base64(token)
	mdMu  sync.Mutex
	md    map[string]metadata.MD   // the last call's metadata by method name
	reqs  map[string]proto.Message // the last call's request by method name
	calls []Call                   // every call, in order (Calls)
}

// Call is one request the fake received: its method, its size on the wire (protobuf bytes) and its
// filter expression (Search, Query, Delete; "" for the others). Tests assert what reached Milvus (an
// expression, never an id list) and measure what a path sends.
type Call struct {
	Method string
	Bytes  int
	Expr   string
}

type row struct {
	pk     string
	fields map[string]any // string, []string, []float32, or a JSON field's decoded value (nil: null)
}

type collection struct {
	id       int64
	schema   *schemapb.CollectionSchema
	pk       string
	vec      string
	dim      int
	metric   string
	indexed  bool
	loaded   bool
	rows     []row
	indexReq *milvuspb.CreateIndexRequest
}

// Start serves a fresh fake on 127.0.0.1 until the test ends and returns it; Addr gives host:port.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWithToken(t, "")
}

// StartWithToken is Start with authentication on, as a Milvus with authorizationEnabled: a call whose
// "authorization" header is not base64(token) fails with Unauthenticated.
func StartWithToken(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{colls: map[string]*collection{}, nextID: 1000, token: token, md: map[string]metadata.MD{}, reqs: map[string]proto.Message{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.lis = lis
	s.srv = grpc.NewServer(grpc.UnaryInterceptor(s.authenticate))
	milvuspb.RegisterMilvusServiceServer(s.srv, s)
	go s.srv.Serve(lis)
	t.Cleanup(s.Stop)
	return s
}

// authenticate records each call's metadata and checks the token when one is set.
func (s *Server) authenticate(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	method := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	s.mdMu.Lock()
	s.md[method] = md.Copy()
	if m, ok := req.(proto.Message); ok {
		s.reqs[method] = proto.Clone(m)
		c := Call{Method: method, Bytes: proto.Size(m)}
		if e, ok := req.(interface{ GetDsl() string }); ok {
			c.Expr = e.GetDsl()
		} else if e, ok := req.(interface{ GetExpr() string }); ok {
			c.Expr = e.GetExpr()
		}
		s.calls = append(s.calls, c)
	}
	s.mdMu.Unlock()
	if s.token != "" {
		if got := md.Get("authorization"); len(got) != 1 || got[0] != base64.StdEncoding.EncodeToString([]byte(s.token)) {
			return nil, status.Error(codes.Unauthenticated, "auth check failure, please check username, password or api key is correct")
		}
	}
	return handler(ctx, req)
}

// Metadata returns the metadata of the last call of method (e.g. "Search"), nil before any.
func (s *Server) Metadata(method string) metadata.MD {
	s.mdMu.Lock()
	defer s.mdMu.Unlock()
	return s.md[method]
}

// Request returns the request of the last call of method (e.g. "Search"), nil before any: tests
// compare what two clients send for the same operation.
func (s *Server) Request(method string) proto.Message {
	s.mdMu.Lock()
	defer s.mdMu.Unlock()
	return s.reqs[method]
}

// Calls returns the calls of method received so far, oldest first (every method for "").
func (s *Server) Calls(method string) []Call {
	s.mdMu.Lock()
	defer s.mdMu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// ResetCalls forgets the calls received so far.
func (s *Server) ResetCalls() {
	s.mdMu.Lock()
	defer s.mdMu.Unlock()
	s.calls = nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Stop ends the server immediately (in-flight calls fail): a crashed Milvus.
func (s *Server) Stop() { s.srv.Stop() }

// ReleaseCollection unloads a collection, as an operator's release does: searches and queries then
// fail with "collection not loaded" (code 101) until it is loaded again.
func (s *Server) ReleaseCollection(ctx context.Context, req *milvuspb.ReleaseCollectionRequest) (*commonpb.Status, error) {
	if st := s.inject("ReleaseCollection"); st != nil {
		return st, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return st, nil
	}
	c.loaded = false
	return ok(), nil
}

// Rows returns how many rows (duplicates included) a collection holds.
func (s *Server) Rows(coll string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.colls[coll]; c != nil {
		return len(c.rows)
	}
	return 0
}

func ok() *commonpb.Status { return &commonpb.Status{ErrorCode: commonpb.ErrorCode_Success} }

func fail(code int32, format string, args ...any) *commonpb.Status {
	return &commonpb.Status{ErrorCode: commonpb.ErrorCode_UnexpectedError, Code: code, Reason: fmt.Sprintf(format, args...)}
}

// Milvus error codes (pkg/util/merr).
const (
	codeCollectionNotFound  = 100
	codeCollectionNotLoaded = 101
	codeParameterInvalid    = 1100
)

// RateLimited is a status Inject can return to simulate Milvus's rate limiter.
func RateLimited() *commonpb.Status {
	return &commonpb.Status{ErrorCode: commonpb.ErrorCode_RateLimit, Code: 8, Reason: "rate limit exceeded", Retriable: true}
}

func (s *Server) inject(method string) *commonpb.Status {
	if s.Inject == nil {
		return nil
	}
	return s.Inject(method)
}

func (s *Server) get(name string) (*collection, *commonpb.Status) {
	c := s.colls[name]
	if c == nil {
		return nil, fail(codeCollectionNotFound, "collection not found[collection=%s]", name)
	}
	return c, nil
}

func (s *Server) Connect(ctx context.Context, req *milvuspb.ConnectRequest) (*milvuspb.ConnectResponse, error) {
	if st := s.inject("Connect"); st != nil {
		return &milvuspb.ConnectResponse{Status: st}, nil
	}
	return &milvuspb.ConnectResponse{Status: ok(), ServerInfo: &commonpb.ServerInfo{BuildTags: "fakemilvus"}, Identifier: 1}, nil
}

func (s *Server) HasCollection(ctx context.Context, req *milvuspb.HasCollectionRequest) (*milvuspb.BoolResponse, error) {
	if st := s.inject("HasCollection"); st != nil {
		return &milvuspb.BoolResponse{Status: st}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &milvuspb.BoolResponse{Status: ok(), Value: s.colls[req.GetCollectionName()] != nil}, nil
}

func (s *Server) CreateCollection(ctx context.Context, req *milvuspb.CreateCollectionRequest) (*commonpb.Status, error) {
	if st := s.inject("CreateCollection"); st != nil {
		return st, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.colls[req.GetCollectionName()] != nil {
		return fail(codeParameterInvalid, "collection already exists: %s", req.GetCollectionName()), nil
	}
	sch := &schemapb.CollectionSchema{}
	if err := proto.Unmarshal(req.GetSchema(), sch); err != nil {
		return fail(codeParameterInvalid, "bad schema: %v", err), nil
	}
	c := &collection{schema: sch}
	for _, f := range sch.GetFields() {
		if f.GetIsPrimaryKey() {
			c.pk = f.GetName()
		}
		if f.GetDataType() == schemapb.DataType_FloatVector {
			c.vec = f.GetName()
			for _, kv := range f.GetTypeParams() {
				if kv.GetKey() == "dim" {
					c.dim, _ = strconv.Atoi(kv.GetValue())
				}
			}
		}
	}
	if c.pk == "" || c.vec == "" || c.dim < 1 {
		return fail(codeParameterInvalid, "schema needs a primary key and a float vector with dim"), nil
	}
	s.nextID++
	c.id = s.nextID
	sch.Name = req.GetCollectionName()
	s.colls[req.GetCollectionName()] = c
	return ok(), nil
}

// AddCollectionField adds a field to a collection's schema, as Milvus 2.6 does: only a nullable field;
// the rows already there hold null in it.
func (s *Server) AddCollectionField(ctx context.Context, req *milvuspb.AddCollectionFieldRequest) (*commonpb.Status, error) {
	if st := s.inject("AddCollectionField"); st != nil {
		return st, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return st, nil
	}
	f := &schemapb.FieldSchema{}
	if err := proto.Unmarshal(req.GetSchema(), f); err != nil {
		return fail(codeParameterInvalid, "bad field schema: %v", err), nil
	}
	if !f.GetNullable() {
		return fail(codeParameterInvalid, "added field must be nullable, please check it, field name = %s", f.GetName()), nil
	}
	if c.field(f.GetName()) != nil {
		return fail(codeParameterInvalid, "duplicate field name: %s", f.GetName()), nil
	}
	f.FieldID = int64(100 + len(c.schema.GetFields()))
	c.schema.Fields = append(c.schema.Fields, f)
	for i := range c.rows {
		c.rows[i].fields[f.GetName()] = nil
	}
	return ok(), nil
}

func (s *Server) DropCollection(ctx context.Context, req *milvuspb.DropCollectionRequest) (*commonpb.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.colls, req.GetCollectionName())
	return ok(), nil
}

func (s *Server) DescribeCollection(ctx context.Context, req *milvuspb.DescribeCollectionRequest) (*milvuspb.DescribeCollectionResponse, error) {
	if st := s.inject("DescribeCollection"); st != nil {
		return &milvuspb.DescribeCollectionResponse{Status: st}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return &milvuspb.DescribeCollectionResponse{Status: st}, nil
	}
	return &milvuspb.DescribeCollectionResponse{Status: ok(), Schema: c.schema, CollectionID: c.id, CollectionName: req.GetCollectionName(),
		ShardsNum: 1, ConsistencyLevel: commonpb.ConsistencyLevel_Bounded, UpdateTimestamp: 1}, nil
}

func (s *Server) CreateIndex(ctx context.Context, req *milvuspb.CreateIndexRequest) (*commonpb.Status, error) {
	if st := s.inject("CreateIndex"); st != nil {
		return st, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return st, nil
	}
	if req.GetFieldName() != c.vec {
		return fail(codeParameterInvalid, "index on %s: only the vector field is indexed here", req.GetFieldName()), nil
	}
	for _, kv := range req.GetExtraParams() {
		if kv.GetKey() == "metric_type" {
			c.metric = kv.GetValue()
		}
	}
	if c.metric != "COSINE" && c.metric != "IP" && c.metric != "L2" {
		return fail(codeParameterInvalid, "metric type %q", c.metric), nil
	}
	c.indexed, c.indexReq = true, req
	return ok(), nil
}

func (s *Server) DescribeIndex(ctx context.Context, req *milvuspb.DescribeIndexRequest) (*milvuspb.DescribeIndexResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return &milvuspb.DescribeIndexResponse{Status: st}, nil
	}
	if !c.indexed {
		return &milvuspb.DescribeIndexResponse{Status: fail(700, "index not found")}, nil
	}
	return &milvuspb.DescribeIndexResponse{Status: ok(), IndexDescriptions: []*milvuspb.IndexDescription{{
		IndexName: c.indexReq.GetIndexName(), FieldName: c.vec, Params: c.indexReq.GetExtraParams(), State: commonpb.IndexState_Finished,
		IndexedRows: int64(len(c.rows)), TotalRows: int64(len(c.rows)),
	}}}, nil
}

func (s *Server) LoadCollection(ctx context.Context, req *milvuspb.LoadCollectionRequest) (*commonpb.Status, error) {
	if st := s.inject("LoadCollection"); st != nil {
		return st, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return st, nil
	}
	if !c.indexed {
		return fail(codeParameterInvalid, "there is no vector index on field: [%s], please create index firstly", c.vec), nil
	}
	c.loaded = true
	return ok(), nil
}

func (s *Server) GetLoadingProgress(ctx context.Context, req *milvuspb.GetLoadingProgressRequest) (*milvuspb.GetLoadingProgressResponse, error) {
	return &milvuspb.GetLoadingProgressResponse{Status: ok(), Progress: 100, RefreshProgress: 100}, nil
}

func (s *Server) GetLoadState(ctx context.Context, req *milvuspb.GetLoadStateRequest) (*milvuspb.GetLoadStateResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return &milvuspb.GetLoadStateResponse{Status: st}, nil
	}
	state := commonpb.LoadState_LoadStateNotLoad
	if c.loaded {
		state = commonpb.LoadState_LoadStateLoaded
	}
	return &milvuspb.GetLoadStateResponse{Status: ok(), State: state}, nil
}

// decodeRows turns column-based field data into rows, checking every field of the schema is present
// with the right length.
func (c *collection) decodeRows(fields []*schemapb.FieldData, n int) ([]row, *commonpb.Status) {
	rows := make([]row, n)
	for i := range rows {
		rows[i].fields = map[string]any{}
	}
	seen := map[string]bool{}
	for _, fd := range fields {
		name := fd.GetFieldName()
		seen[name] = true
		switch fd.GetType() {
		case schemapb.DataType_VarChar, schemapb.DataType_String:
			data := fd.GetScalars().GetStringData().GetData()
			if len(data) != n {
				return nil, fail(codeParameterInvalid, "field %s has %d values, want %d", name, len(data), n)
			}
			for i, v := range data {
				rows[i].fields[name] = v
			}
		case schemapb.DataType_Array:
			data := fd.GetScalars().GetArrayData().GetData()
			if len(data) != n {
				return nil, fail(codeParameterInvalid, "field %s has %d values, want %d", name, len(data), n)
			}
			for i, v := range data {
				rows[i].fields[name] = slices.Clone(v.GetStringData().GetData())
			}
		case schemapb.DataType_JSON:
			data, valid := fd.GetScalars().GetJsonData().GetData(), fd.GetValidData()
			nValid := n
			if valid != nil {
				if len(valid) != n {
					return nil, fail(codeParameterInvalid, "field %s has %d valid flags, want %d", name, len(valid), n)
				}
				nValid = 0
				for _, v := range valid {
					if v {
						nValid++
					}
				}
			}
			if len(data) != n && len(data) != nValid {
				return nil, fail(codeParameterInvalid, "field %s has %d values, want %d", name, len(data), n)
			}
			at := 0
			for i := range rows {
				if valid != nil && !valid[i] {
					rows[i].fields[name] = nil
					if len(data) == n {
						at++
					}
					continue
				}
				var v any
				if err := json.Unmarshal(data[at], &v); err != nil {
					return nil, fail(codeParameterInvalid, "field %s row %d is not JSON: %v", name, i, err)
				}
				rows[i].fields[name], at = v, at+1
			}
		case schemapb.DataType_FloatVector:
			vf := fd.GetVectors()
			data := vf.GetFloatVector().GetData()
			if int(vf.GetDim()) != c.dim || len(data) != n*c.dim {
				return nil, fail(codeParameterInvalid, "vector field %s: dim %d with %d floats, want dim %d", name, vf.GetDim(), len(data), c.dim)
			}
			for i := range rows {
				rows[i].fields[name] = slices.Clone(data[i*c.dim : (i+1)*c.dim])
			}
		default:
			return nil, fail(codeParameterInvalid, "field %s: type %v is not supported by the fake", name, fd.GetType())
		}
	}
	for _, f := range c.schema.GetFields() {
		if !seen[f.GetName()] {
			if !f.GetNullable() {
				return nil, fail(codeParameterInvalid, "field %s is missing", f.GetName())
			}
			for i := range rows {
				rows[i].fields[f.GetName()] = nil
			}
		}
	}
	for i := range rows {
		rows[i].pk, _ = rows[i].fields[c.pk].(string)
	}
	return rows, nil
}

func strIDs(rows []row) *schemapb.IDs {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.pk
	}
	return &schemapb.IDs{IdField: &schemapb.IDs_StrId{StrId: &schemapb.StringArray{Data: ids}}}
}

// write runs a mutation: fault injection, the lock, the collection lookup and the row decoding are the
// same for insert and upsert; apply changes the rows.
func (s *Server) write(method, coll string, fields []*schemapb.FieldData, n uint32, apply func(c *collection, rows []row)) (*milvuspb.MutationResult, error) {
	if st := s.inject(method); st != nil {
		return &milvuspb.MutationResult{Status: st}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(coll)
	if st != nil {
		return &milvuspb.MutationResult{Status: st}, nil
	}
	rows, st := c.decodeRows(fields, int(n))
	if st != nil {
		return &milvuspb.MutationResult{Status: st}, nil
	}
	apply(c, rows)
	res := &milvuspb.MutationResult{Status: ok(), IDs: strIDs(rows), Timestamp: 1}
	if method == "Insert" {
		res.InsertCnt = int64(len(rows))
	} else {
		res.UpsertCnt = int64(len(rows))
	}
	return res, nil
}

// Insert appends rows without looking at primary keys, as Milvus does: the same id inserted twice is
// counted twice.
func (s *Server) Insert(ctx context.Context, req *milvuspb.InsertRequest) (*milvuspb.MutationResult, error) {
	return s.write("Insert", req.GetCollectionName(), req.GetFieldsData(), req.GetNumRows(), func(c *collection, rows []row) {
		c.rows = append(c.rows, rows...)
	})
}

// Upsert deletes every row with each primary key, then appends the new rows.
func (s *Server) Upsert(ctx context.Context, req *milvuspb.UpsertRequest) (*milvuspb.MutationResult, error) {
	return s.write("Upsert", req.GetCollectionName(), req.GetFieldsData(), req.GetNumRows(), upsertRows)
}

func upsertRows(c *collection, rows []row) {
	replaced := map[string]bool{}
	for _, r := range rows {
		replaced[r.pk] = true
	}
	c.rows = slices.DeleteFunc(c.rows, func(r row) bool { return replaced[r.pk] })
	// within one request the last row with a key wins
	last := map[string]int{}
	for i, r := range rows {
		last[r.pk] = i
	}
	for i, r := range rows {
		if last[r.pk] == i {
			c.rows = append(c.rows, r)
		}
	}
}

func (s *Server) Delete(ctx context.Context, req *milvuspb.DeleteRequest) (*milvuspb.MutationResult, error) {
	if st := s.inject("Delete"); st != nil {
		return &milvuspb.MutationResult{Status: st}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return &milvuspb.MutationResult{Status: st}, nil
	}
	pred, err := parseExpr(req.GetExpr())
	if err != nil {
		return &milvuspb.MutationResult{Status: fail(codeParameterInvalid, "cannot parse expression: %s, error: %v", req.GetExpr(), err)}, nil
	}
	var n int64
	var evalErr error
	c.rows = slices.DeleteFunc(c.rows, func(r row) bool {
		m, err := pred.eval(r.fields)
		if err != nil {
			evalErr = err
		}
		if m {
			n++
		}
		return m
	})
	if evalErr != nil {
		return &milvuspb.MutationResult{Status: fail(codeParameterInvalid, "%v", evalErr)}, nil
	}
	return &milvuspb.MutationResult{Status: ok(), DeleteCnt: n, Timestamp: 1}, nil
}

func (s *Server) Flush(ctx context.Context, req *milvuspb.FlushRequest) (*milvuspb.FlushResponse, error) {
	if st := s.inject("Flush"); st != nil {
		return &milvuspb.FlushResponse{Status: st}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &milvuspb.FlushResponse{Status: ok(), CollSegIDs: map[string]*schemapb.LongArray{}, FlushCollSegIDs: map[string]*schemapb.LongArray{},
		CollSealTimes: map[string]int64{}, CollFlushTs: map[string]uint64{}}
	for _, name := range req.GetCollectionNames() {
		if _, st := s.get(name); st != nil {
			return &milvuspb.FlushResponse{Status: st}, nil
		}
		resp.CollSegIDs[name] = &schemapb.LongArray{Data: []int64{1}}
		resp.FlushCollSegIDs[name] = &schemapb.LongArray{Data: []int64{1}}
		resp.CollFlushTs[name] = 1
	}
	return resp, nil
}

func (s *Server) GetFlushState(ctx context.Context, req *milvuspb.GetFlushStateRequest) (*milvuspb.GetFlushStateResponse, error) {
	return &milvuspb.GetFlushStateResponse{Status: ok(), Flushed: true}, nil
}

func (c *collection) field(name string) *schemapb.FieldSchema {
	for _, f := range c.schema.GetFields() {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

// output builds the columns of the requested output fields for rows.
func (c *collection) output(names []string, rows []row) ([]*schemapb.FieldData, *commonpb.Status) {
	var out []*schemapb.FieldData
	for _, name := range names {
		f := c.field(name)
		if f == nil {
			return nil, fail(codeParameterInvalid, "field %s does not exist", name)
		}
		switch f.GetDataType() {
		case schemapb.DataType_VarChar:
			vals := make([]string, len(rows))
			for i, r := range rows {
				vals[i], _ = r.fields[name].(string)
			}
			out = append(out, &schemapb.FieldData{Type: schemapb.DataType_VarChar, FieldName: name, FieldId: f.GetFieldID(),
				Field: &schemapb.FieldData_Scalars{Scalars: &schemapb.ScalarField{Data: &schemapb.ScalarField_StringData{StringData: &schemapb.StringArray{Data: vals}}}}})
		case schemapb.DataType_Array:
			vals := make([]*schemapb.ScalarField, len(rows))
			for i, r := range rows {
				tags, _ := r.fields[name].([]string)
				vals[i] = &schemapb.ScalarField{Data: &schemapb.ScalarField_StringData{StringData: &schemapb.StringArray{Data: tags}}}
			}
			out = append(out, &schemapb.FieldData{Type: schemapb.DataType_Array, FieldName: name, FieldId: f.GetFieldID(),
				Field: &schemapb.FieldData_Scalars{Scalars: &schemapb.ScalarField{Data: &schemapb.ScalarField_ArrayData{ArrayData: &schemapb.ArrayArray{Data: vals, ElementType: schemapb.DataType_VarChar}}}}})
		case schemapb.DataType_JSON:
			vals, valid := make([][]byte, len(rows)), make([]bool, len(rows))
			for i, r := range rows {
				if v := r.fields[name]; v != nil {
					vals[i], _ = json.Marshal(v)
					valid[i] = true
				}
			}
			fd := &schemapb.FieldData{Type: schemapb.DataType_JSON, FieldName: name, FieldId: f.GetFieldID(),
				Field: &schemapb.FieldData_Scalars{Scalars: &schemapb.ScalarField{Data: &schemapb.ScalarField_JsonData{JsonData: &schemapb.JSONArray{Data: vals}}}}}
			if f.GetNullable() {
				fd.ValidData = valid
			}
			out = append(out, fd)
		case schemapb.DataType_FloatVector:
			var data []float32
			for _, r := range rows {
				data = append(data, r.fields[name].([]float32)...)
			}
			out = append(out, &schemapb.FieldData{Type: schemapb.DataType_FloatVector, FieldName: name, FieldId: f.GetFieldID(),
				Field: &schemapb.FieldData_Vectors{Vectors: &schemapb.VectorField{Dim: int64(c.dim), Data: &schemapb.VectorField_FloatVector{FloatVector: &schemapb.FloatArray{Data: data}}}}})
		default:
			return nil, fail(codeParameterInvalid, "output of field %s (%v) is not supported by the fake", name, f.GetDataType())
		}
	}
	return out, nil
}

func (s *Server) filter(c *collection, expr string) ([]row, *commonpb.Status) {
	if expr == "" {
		return slices.Clone(c.rows), nil
	}
	pred, err := parseExpr(expr)
	if err != nil {
		return nil, fail(codeParameterInvalid, "cannot parse expression: %s, error: %v", expr, err)
	}
	var out []row
	for _, r := range c.rows {
		m, err := pred.eval(r.fields)
		if err != nil {
			return nil, fail(codeParameterInvalid, "%v", err)
		}
		if m {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *Server) Query(ctx context.Context, req *milvuspb.QueryRequest) (*milvuspb.QueryResults, error) {
	if st := s.inject("Query"); st != nil {
		return &milvuspb.QueryResults{Status: st}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return &milvuspb.QueryResults{Status: st}, nil
	}
	if !c.loaded {
		return &milvuspb.QueryResults{Status: fail(codeCollectionNotLoaded, "collection not loaded")}, nil
	}
	rows, st := s.filter(c, req.GetExpr())
	if st != nil {
		return &milvuspb.QueryResults{Status: st}, nil
	}
	if slices.Equal(req.GetOutputFields(), []string{"count(*)"}) {
		return &milvuspb.QueryResults{Status: ok(), CollectionName: req.GetCollectionName(), OutputFields: []string{"count(*)"},
			FieldsData: []*schemapb.FieldData{{Type: schemapb.DataType_Int64, FieldName: "count(*)",
				Field: &schemapb.FieldData_Scalars{Scalars: &schemapb.ScalarField{Data: &schemapb.ScalarField_LongData{LongData: &schemapb.LongArray{Data: []int64{int64(len(rows))}}}}}}}}, nil
	}
	if lim := param(req.GetQueryParams(), "limit"); lim != "" {
		// a limited query returns rows in primary-key order, which is what paging by "pk > last" relies on
		n, err := strconv.Atoi(lim)
		if err != nil || n < 1 || n > 16384 {
			return &milvuspb.QueryResults{Status: fail(codeParameterInvalid, "invalid limit %q", lim)}, nil
		}
		slices.SortFunc(rows, func(a, b row) int { return strings.Compare(fmt.Sprint(a.fields[c.pk]), fmt.Sprint(b.fields[c.pk])) })
		rows = rows[:min(n, len(rows))]
	}
	names := req.GetOutputFields()
	if !slices.Contains(names, c.pk) {
		names = append([]string{c.pk}, names...)
	}
	fields, st := c.output(names, rows)
	if st != nil {
		return &milvuspb.QueryResults{Status: st}, nil
	}
	return &milvuspb.QueryResults{Status: ok(), CollectionName: req.GetCollectionName(), OutputFields: names, FieldsData: fields, PrimaryFieldName: c.pk}, nil
}

func param(kvs []*commonpb.KeyValuePair, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return ""
}

// Search is exact: every matching row is scored, best first, ties by primary key.
func (s *Server) Search(ctx context.Context, req *milvuspb.SearchRequest) (*milvuspb.SearchResults, error) {
	if st := s.inject("Search"); st != nil {
		return &milvuspb.SearchResults{Status: st}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st := s.get(req.GetCollectionName())
	if st != nil {
		return &milvuspb.SearchResults{Status: st}, nil
	}
	if !c.loaded {
		return &milvuspb.SearchResults{Status: fail(codeCollectionNotLoaded, "collection not loaded")}, nil
	}
	if f := param(req.GetSearchParams(), "anns_field"); f != "" && f != c.vec {
		return &milvuspb.SearchResults{Status: fail(codeParameterInvalid, "anns field %s", f)}, nil
	}
	topk, err := strconv.Atoi(param(req.GetSearchParams(), "topk"))
	if err != nil || topk < 1 || topk > 16384 {
		return &milvuspb.SearchResults{Status: fail(codeParameterInvalid, "topk %q", param(req.GetSearchParams(), "topk"))}, nil
	}
	if m := param(req.GetSearchParams(), "metric_type"); m != "" && m != c.metric {
		return &milvuspb.SearchResults{Status: fail(codeParameterInvalid, "metric type %s does not match the index (%s)", m, c.metric)}, nil
	}
	var phg commonpb.PlaceholderGroup
	if err := proto.Unmarshal(req.GetPlaceholderGroup(), &phg); err != nil || len(phg.GetPlaceholders()) != 1 {
		return &milvuspb.SearchResults{Status: fail(codeParameterInvalid, "bad placeholder group")}, nil
	}
	ph := phg.GetPlaceholders()[0]
	if ph.GetType() != commonpb.PlaceholderType_FloatVector {
		return &milvuspb.SearchResults{Status: fail(codeParameterInvalid, "only float vectors")}, nil
	}
	rows, st := s.filter(c, req.GetDsl())
	if st != nil {
		return &milvuspb.SearchResults{Status: st}, nil
	}
	res := &schemapb.SearchResultData{NumQueries: int64(len(ph.GetValues())), TopK: int64(topk), OutputFields: req.GetOutputFields(), PrimaryFieldName: c.pk}
	var allRows []row
	for _, raw := range ph.GetValues() {
		if len(raw) != 4*c.dim {
			return &milvuspb.SearchResults{Status: fail(codeParameterInvalid, "query vector has %d bytes, want %d", len(raw), 4*c.dim)}, nil
		}
		q := make([]float32, c.dim)
		for i := range q {
			q[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[i*4:]))
		}
		type scored struct {
			r     row
			score float32
		}
		ss := make([]scored, len(rows))
		for i, r := range rows {
			ss[i] = scored{r, c.score(q, r.fields[c.vec].([]float32))}
		}
		slices.SortFunc(ss, func(a, b scored) int {
			if a.score != b.score {
				if a.score > b.score {
					return -1
				}
				return 1
			}
			if a.r.pk < b.r.pk {
				return -1
			}
			return 1
		})
		ss = ss[:min(topk, len(ss))]
		for _, x := range ss {
			res.Scores = append(res.Scores, x.score)
			allRows = append(allRows, x.r)
		}
		res.Topks = append(res.Topks, int64(len(ss)))
	}
	res.Ids = strIDs(allRows)
	fields, st := c.output(req.GetOutputFields(), allRows)
	if st != nil {
		return &milvuspb.SearchResults{Status: st}, nil
	}
	res.FieldsData = fields
	return &milvuspb.SearchResults{Status: ok(), Results: res, CollectionName: req.GetCollectionName()}, nil
}

func (c *collection) score(q, v []float32) float32 {
	var dot, nq, nv float64
	for i := range q {
		dot += float64(q[i]) * float64(v[i])
		nq += float64(q[i]) * float64(q[i])
		nv += float64(v[i]) * float64(v[i])
	}
	switch c.metric {
	case "COSINE":
		if nq == 0 || nv == 0 {
			return 0
		}
		return float32(dot / math.Sqrt(nq*nv))
	case "L2":
		var d float64
		for i := range q {
			x := float64(q[i]) - float64(v[i])
			d += x * x
		}
		return float32(-d) // Milvus sorts L2 ascending; negated so "higher is better" holds here
	}
	return float32(dot)
}
