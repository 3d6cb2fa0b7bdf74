//go:build linux

package main

import (
	"testing"

	"github.com/fairlyprompt/fairly/runtime"
)

func TestRun(t *testing.T) {
	for _, crit := range []string{"50-25-25", "alone"} {
		if err := run("fib", 18, 2, runtime.Config{Procs: 2}, crit, 1e6); err != nil {
			t.Fatalf("%s: %v", crit, err)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for name, err := range map[string]error{
		"kernel":    run("nope", 0, 1, runtime.Config{Procs: 2}, "alone", 0),
		"criterion": run("fib", 18, 1, runtime.Config{Procs: 2}, "50-50", 0),
		"reps":      run("fib", 18, 0, runtime.Config{Procs: 2}, "alone", 0),
		"arrivals":  run("fib", 18, 1, runtime.Config{Procs: 2}, "alone", -1),
		"procs":     run("fib", 18, 1, runtime.Config{Procs: -3}, "alone", 0),
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
