//go:build !linux

package memvec

import "os"

// dropCache is a no-op where posix_fadvise is not available.
func dropCache(*os.File, int64, int64) {}
