package awsrt

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// LoadConfig is awsconfig.LoadDefaultConfig with ReadOnlyBodies among the API options. Every docmind
// AWS client is built from it (tests that build an aws.Config by hand set APIOptions()).
func LoadConfig(ctx context.Context, opts ...func(*awsconfig.LoadOptions) error) (aws.Config, error) {
	return awsconfig.LoadDefaultConfig(ctx, append([]func(*awsconfig.LoadOptions) error{awsconfig.WithAPIOptions(APIOptions())}, opts...)...)
}

// APIOptions are the middleware every docmind AWS client adds: ReadOnlyBodies.
func APIOptions() []func(*middleware.Stack) error {
	return []func(*middleware.Stack) error{ReadOnlyBodies}
}

// ReadOnlyBodies makes each attempt's request body a plain reader (Read, and Seek when the body has
// it) instead of one with WriteTo.
//
// Why: smithy-go (v1.28.9, the newest served) wraps a request body in a closer whose WriteTo returns
// io.EOF once the body is closed, and closes it as soon as the response arrives. net/http's write
// loop, after sending the body, copies what is left of it to io.Discard to check for extra bytes; when
// the response came first, that copy calls WriteTo on the closed body, takes the io.EOF for a write
// error and closes the connection while the response is still being read. The call then fails with
// "deserialization failed ... use of closed network connection" although the service answered 200
// (aws/aws-sdk-go-v2#1825, #2737). Here it failed Textract calls about once in a hundred against a
// loopback fake. Without WriteTo the copy reads, which ends cleanly after the close.
func ReadOnlyBodies(s *middleware.Stack) error {
	return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("docmind.ReadOnlyBody", readOnlyBody), middleware.After)
}

func readOnlyBody(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	req, ok := in.Request.(*smithyhttp.Request)
	if !ok {
		return next.HandleFinalize(ctx, in)
	}
	body := req.GetStream()
	if _, ok := body.(io.WriterTo); !ok {
		return next.HandleFinalize(ctx, in)
	}
	var plain io.Reader = reader{body}
	if rs, ok := body.(io.ReadSeeker); ok {
		plain = readSeeker{rs}
	}
	rc, err := req.SetStream(plain)
	if err != nil {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, err
	}
	rc.ContentLength = req.ContentLength // as signed and sent; SetStream may measure it anew
	in.Request = rc
	return next.HandleFinalize(ctx, in)
}

type reader struct{ r io.Reader }

func (r reader) Read(p []byte) (int, error) { return r.r.Read(p) }

type readSeeker struct{ r io.ReadSeeker }

func (r readSeeker) Read(p []byte) (int, error)            { return r.r.Read(p) }
func (r readSeeker) Seek(off int64, wh int) (int64, error) { return r.r.Seek(off, wh) }
