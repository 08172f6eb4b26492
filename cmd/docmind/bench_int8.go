package main

import (
	"encoding/json"
	"os"
	"os/exec"

	"github.com/docmind/docmind/shared/bench"
)

// The vector-int8 suite measures a snapshot's resident memory in a fresh process: this program, run
// again as `docmind bench --measure-int8 <snapshot> <dim> <rows> <queries>`.
func init() {
	bench.ChildCommand = func(args ...string) *exec.Cmd {
		self, err := os.Executable()
		if err != nil {
			self = os.Args[0]
		}
		return exec.Command(self, append([]string{"bench", "--measure-int8"}, args...)...)
	}
}

func benchQuantChild(e env, args []string) int {
	res, err := bench.MeasureQuant(e.ctx, args)
	if err != nil {
		return fail(e, err)
	}
	if err := json.NewEncoder(e.stdout).Encode(res); err != nil {
		return fail(e, err)
	}
	return exitOK
}
