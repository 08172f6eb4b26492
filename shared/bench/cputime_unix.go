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

// usage is what the process has used so far, all threads: where a phase's time went when it was not
// on the queries' own work (system time, page faults, waits).
func usage() Usage {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return Usage{}
	}
	return Usage{UserMS: float64(ru.Utime.Nano()) / 1e6, SysMS: float64(ru.Stime.Nano()) / 1e6,
		MinorFaults: int64(ru.Minflt), MajorFaults: int64(ru.Majflt), Waits: int64(ru.Nvcsw), Preempted: int64(ru.Nivcsw)}
}

// syncFS waits until the file system has written back what this machine's processes wrote.
func syncFS() { syscall.Sync() }
