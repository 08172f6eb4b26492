package memvec

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropCache asks the kernel to drop a just-written file range from the page cache (advice only). The
// snapshot's writer leaves every page cached, and a map of a cached page maps its cached neighbours too
// (fault-around), so without this the first re-scores after a snapshot would map most of the vectors.
func dropCache(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}
