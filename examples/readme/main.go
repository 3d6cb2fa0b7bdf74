// Command readme is the program in the README, kept here so that CI
// compiles and runs it; readme_test.go checks that the two are the same.
package main

import (
	"fmt"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func fib(c *thread.Ctx, n int) int {
	if n < 2 {
		return n
	}
	a, b := thread.Fork2(c, fib, n-1, n-2) // fib(n-1) may run elsewhere; no allocation
	return a + b
}

func main() {
	o := fairness.NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	_ = o.Less(batch, ui) // batch < ui
	crit, _ := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 50, batch: 50})
	rt, _ := runtime.New(runtime.Config{Criterion: crit})
	defer rt.Close()
	v, err := thread.Run(rt, batch, func(c *thread.Ctx) int { return fib(c, 30) })
	fmt.Println(v, err)
}
