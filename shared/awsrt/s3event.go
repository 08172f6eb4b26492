package awsrt

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/docmind/docmind/shared/rag"
)

// ObjectEvent is one S3 notification reduced to what ingestion needs. Key is URL-decoded.
type ObjectEvent struct {
	Removed   bool   // ObjectRemoved:* (Delete or DeleteMarkerCreated); otherwise ObjectCreated:*
	Bucket    string // bucket name
	Key       string // decoded object key, exactly as stored in S3
	VersionID string // empty on an unversioned bucket
	ETag      string
	Size      int64
	Sequencer string // S3's per-key ordering token (hex); compare with CompareSequencer
}

// DecodeKey turns the URL-encoded key of an S3 notification into the object key: S3 encodes keys as in
// an HTML form, so "+" is a space and "%2B" a plus; CJK and emoji arrive as percent-encoded UTF-8.
// Invalid for a malformed escape.
func DecodeKey(raw string) (string, error) {
	k, err := url.QueryUnescape(raw)
	if err != nil {
		return "", rag.E("awsrt.DecodeKey", rag.KindInvalid, fmt.Errorf("key %q: %w", raw, err))
	}
	return k, nil
}

// CompareSequencer orders two S3 sequencers: -1, 0 or 1. Sequencers are hex strings of varying length;
// AWS documents that they compare only after the shorter is left-padded with zeros.
func CompareSequencer(a, b string) int {
	a, b = strings.ToUpper(a), strings.ToUpper(b)
	if n := len(b) - len(a); n > 0 {
		a = strings.Repeat("0", n) + a
	} else if n < 0 {
		b = strings.Repeat("0", -n) + b
	}
	return strings.Compare(a, b)
}

// testEvent is the message S3 sends once when a notification is configured.
type testEvent struct {
	Event string `json:"Event"`
}

// DecodeS3Message decodes the body of an SQS message that carries an S3 notification. It returns the
// object events (none for the s3:TestEvent sent when the notification is set up, and none for event types
// other than ObjectCreated and ObjectRemoved). Invalid for a body that is not an S3 notification or a
// record without bucket, key or sequencer: such a message can never succeed and belongs in the
// dead-letter queue.
func DecodeS3Message(body string) ([]ObjectEvent, error) {
	const op = "awsrt.DecodeS3Message"
	var probe testEvent
	if err := json.Unmarshal([]byte(body), &probe); err != nil {
		return nil, rag.E(op, rag.KindInvalid, fmt.Errorf("message body is not JSON: %w", err))
	}
	if probe.Event == "s3:TestEvent" {
		return nil, nil
	}
	var n struct {
		Records *[]json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal([]byte(body), &n); err != nil || n.Records == nil {
		return nil, rag.Errorf(op, rag.KindInvalid, "message body is not an S3 notification (no Records)")
	}
	var out []ObjectEvent
	for i, raw := range *n.Records {
		// events.S3EventRecord's own UnmarshalJSON decodes the key too, but fails the whole record on a
		// bad escape without saying which; decode the raw key here for a clear error.
		var rec struct {
			EventName string `json:"eventName"`
			S3        struct {
				Bucket events.S3Bucket `json:"bucket"`
				Object struct {
					Key       string `json:"key"`
					Size      int64  `json:"size"`
					VersionID string `json:"versionId"`
					ETag      string `json:"eTag"`
					Sequencer string `json:"sequencer"`
				} `json:"object"`
			} `json:"s3"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, rag.E(op, rag.KindInvalid, fmt.Errorf("record %d: %w", i, err))
		}
		var removed bool
		switch {
		case strings.HasPrefix(rec.EventName, "ObjectCreated:"):
		case strings.HasPrefix(rec.EventName, "ObjectRemoved:"):
			removed = true
		default:
			continue // restore, replication, lifecycle ... are not ingestion's business
		}
		o := rec.S3.Object
		if rec.S3.Bucket.Name == "" || o.Key == "" || o.Sequencer == "" {
			return nil, rag.Errorf(op, rag.KindInvalid, "record %d: bucket, key and sequencer are required", i)
		}
		key, err := DecodeKey(o.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, ObjectEvent{Removed: removed, Bucket: rec.S3.Bucket.Name, Key: key, VersionID: o.VersionID,
			ETag: o.ETag, Size: o.Size, Sequencer: o.Sequencer})
	}
	return out, nil
}
