package lambdamain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// envChild makes the test binary, run again by TestRunFailureExits, call Run as a main would.
const envChild = "LAMBDAMAIN_TEST_CHILD"

// TestRunFailureExits runs Run in a child process (it exits): a start-up error is one JSON line on
// stderr naming the function, its version and the error kind, and exit status 1.
func TestRunFailureExits(t *testing.T) {
	if os.Getenv(envChild) != "" {
		Run("grade", "v1.2", func(context.Context, *slog.Logger) error {
			return rag.Errorf("config", rag.KindInvalid, "DOCMIND_X is required")
		})
		return // Run returned: the parent sees exit status 0 and fails
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunFailureExits$")
	cmd.Env = append(os.Environ(), envChild+"=1")
	var stderr, stdout bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("child: %v, want exit status 1\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	var line struct {
		Msg       string `json:"msg"`
		Level     string `json:"level"`
		Version   string `json:"version"`
		ErrorType string `json:"error_type"`
		Err       string `json:"err"`
	}
	if err := json.Unmarshal(stderr.Bytes(), &line); err != nil {
		t.Fatalf("stderr is not one JSON line: %q: %v", stderr.String(), err)
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
