//go:build !unix

package bench

import "time"

// cpuTime is not measured here: the rows show 0 CPU.
func cpuTime() time.Duration { return 0 }

// usage is not measured here.
func usage() Usage { return Usage{} }

// syncFS does nothing here.
func syncFS() {}
