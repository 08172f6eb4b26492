// Package lambdamain is the shape every docmind Lambda's main shares ("mains only wire"): one JSON
// logger, and a start-up error logged once, with its kind, before the process ends. It imports only the
// standard library and shared/awsrt, which every function links for its error types, so the smallest
// functions (grade, rerank, canary, migrate) link nothing more through it.
package lambdamain

import (
	"context"
	"log/slog"
	"os"

	"github.com/docmind/docmind/shared/awsrt"
)

// Logger is the JSON logger every function logs with (once, at the edge), on stderr, which Lambda
// ships to CloudWatch Logs.
func Logger() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stderr, nil)) }

// Run is a function's main. run reads the configuration, builds what the function serves and starts the
// Lambda runtime, which does not return. An error from run is a start-up failure: it is logged once with
// the version and the error kind as error_type, and the process exits 1, so Lambda reports a failed init
// rather than a handler that fails every invocation.
func Run(name, version string, run func(ctx context.Context, log *slog.Logger) error) {
	log := Logger()
	if err := run(context.Background(), log); err != nil {
		log.Error(name+" function failed to start", "version", version, "error_type", awsrt.ErrorType(err), "err", err)
		os.Exit(1)
	}
}

// Storeless hides the store drivers the template sets for every function (its Globals) from a function
// that opens no store: the embedded defaults then pass validation, and the drivers' own settings (a DSN,
// an address) are never required of it.
func Storeless(getenv func(string) string) func(string) string {
	return func(k string) string {
		switch k {
		case "DOCMIND_SQL_DRIVER", "DOCMIND_VECTOR_DRIVER", "DOCMIND_KV_DRIVER", "DOCMIND_BLOB_DRIVER":
			return ""
		}
		return getenv(k)
	}
}
