//go:build !unix

package retrieve

import "time"

// cpuTime is not measured here: the benchmark reports 0 CPU.
func cpuTime() time.Duration { return 0 }
