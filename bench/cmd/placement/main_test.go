//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/runtime"
)

func TestRun(t *testing.T) {
	for _, crit := range []string{"50-25-25", "alone"} {
		prof := filepath.Join(t.TempDir(), "cpu.prof")
		if err := run(options{kernel: "fib", size: 18, reps: 2, cfg: runtime.Config{Procs: 2}, criterion: crit, arrivals: time.Millisecond, cpuProfile: prof, sample: true}); err != nil {
			t.Fatalf("%s: %v", crit, err)
		}
		if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
			t.Errorf("%s: no CPU profile: %v", crit, err)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for name, err := range map[string]error{
		"kernel":    run(options{kernel: "nope", reps: 1, cfg: runtime.Config{Procs: 2}, criterion: "alone"}),
		"criterion": run(options{kernel: "fib", size: 18, reps: 1, cfg: runtime.Config{Procs: 2}, criterion: "50-50"}),
		"reps":      run(options{kernel: "fib", size: 18, cfg: runtime.Config{Procs: 2}, criterion: "alone"}),
		"arrivals":  run(options{kernel: "fib", size: 18, reps: 1, cfg: runtime.Config{Procs: 2}, criterion: "alone", arrivals: -1}),
		"procs":     run(options{kernel: "fib", size: 18, reps: 1, cfg: runtime.Config{Procs: -3}, criterion: "alone"}),
		"profile":   run(options{kernel: "fib", size: 18, reps: 1, cfg: runtime.Config{Procs: 2}, criterion: "alone", cpuProfile: "/nonexistent/dir/cpu.prof"}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		per          []int
		idle, double bool
	}{
		{[]int{2, 0}, true, true},
		{[]int{1, 1}, false, false},
		{[]int{0, 1}, true, false},
		{[]int{3, 2}, false, true},
	} {
		if idle, double := count(c.per); idle != c.idle || double != c.double {
			t.Errorf("count(%v) = %v, %v; want %v, %v", c.per, idle, double, c.idle, c.double)
		}
	}
}
