//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, user and system, all threads: on a shared machine
// it says what a phase cost when its wall time says mostly how busy the neighbours were.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// syncFS waits until the file system has written back what this machine's processes wrote.
func syncFS() { syscall.Sync() }
