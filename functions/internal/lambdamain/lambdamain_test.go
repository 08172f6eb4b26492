package lambdamain

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

func TestLogFailureNamesTheFunctionAndTheKind(t *testing.T) {
	var buf bytes.Buffer
	logFailure(slog.New(slog.NewJSONHandler(&buf, nil)), "grade", "v1.2", rag.Errorf("config", rag.KindInvalid, "DOCMIND_X is required"))
	var line struct {
		Msg       string `json:"msg"`
		Level     string `json:"level"`
		Version   string `json:"version"`
		ErrorType string `json:"error_type"`
		Err       string `json:"err"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %q: %v", buf.String(), err)
	}
	if line.Msg != "grade function failed to start" || line.Level != "ERROR" || line.Version != "v1.2" || line.ErrorType != "Invalid" ||
		line.Err == "" {
		t.Errorf("got %+v, want the function's name, its version and error_type Invalid", line)
	}
}

func TestStorelessHidesOnlyTheDrivers(t *testing.T) {
	env := map[string]string{"DOCMIND_SQL_DRIVER": "mysql", "DOCMIND_VECTOR_DRIVER": "milvus", "DOCMIND_KV_DRIVER": "redis",
		"DOCMIND_BLOB_DRIVER": "s3", "DOCMIND_RERANK_MODEL": "bge"}
	get := Storeless(func(k string) string { return env[k] })
	for _, k := range []string{"DOCMIND_SQL_DRIVER", "DOCMIND_VECTOR_DRIVER", "DOCMIND_KV_DRIVER", "DOCMIND_BLOB_DRIVER"} {
		if got := get(k); got != "" {
			t.Errorf("%s = %q, want it hidden", k, got)
		}
	}
	if got := get("DOCMIND_RERANK_MODEL"); got != "bge" {
		t.Errorf("DOCMIND_RERANK_MODEL = %q, want bge passed through", got)
	}
}
