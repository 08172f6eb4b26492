//go:build unix

package bm25

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time: on a shared machine wall time measures the load,
// CPU time the work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
