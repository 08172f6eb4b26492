//go:build !unix

package memvec

import "os"

// lockFile is a no-op where flock does not exist; run one docmind process per data directory.
func lockFile(path string) (*os.File, error) { return nil, nil }
