package awsrt

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxExecutionName is Step Functions' limit on an execution name.
const MaxExecutionName = 80

// ExecutionName derives a Step Functions execution name from a readable label and the parts that identify
// the work (tenant, bucket, key, version, sequencer). The same parts give the same name, so a replayed
// event's StartExecution fails with ExecutionAlreadyExists instead of running twice (ING-01); different
// parts give different names (192 bits of SHA-256). The name is at most 80 characters of [A-Za-z0-9_-]:
// a subset of what Step Functions allows that also suits CloudWatch log groups and metrics (ING-04).
func ExecutionName(label string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		// length-prefixed, so ("ab","c") and ("a","bc") differ
		var n [8]byte
		for i, l := 0, len(p); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		h.Write(n[:])
		h.Write([]byte(p))
	}
	sum := hex.EncodeToString(h.Sum(nil)[:24])
	var b strings.Builder
	for _, r := range label {
		if b.Len() >= MaxExecutionName-len(sum)-1 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return sum
	}
	return b.String() + "-" + sum
}

// ValidExecutionName reports whether name fits Step Functions' rules as ExecutionName applies them:
// 1-80 characters of [A-Za-z0-9_-].
func ValidExecutionName(name string) bool {
	if name == "" || len(name) > MaxExecutionName {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
