package runtime_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func ExampleNew() {
	o := fairness.NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	if err := o.Less(batch, ui); err != nil {
		panic(err)
	}
	// ui may be slowed down at most 1/0.75 ≈ 1.33×, batch at most 4×.
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 75, batch: 25})
	if err != nil {
		panic(err)
	}
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: crit})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	v, err := thread.Run(rt, ui, func(c *thread.Ctx) string { return "ran at " + c.Priority().String() })
	fmt.Println(v, err)
	fmt.Println(rt.Procs(), "workers;", crit.Stretch(batch), "× stretch for batch")
	// Output:
	// ran at ui <nil>
	// 2 workers; 4 × stretch for batch
}

func ExampleRuntime_Stats() {
	o := fairness.NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	if err := o.Less(batch, ui); err != nil {
		panic(err)
	}
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 50, batch: 50})
	if err != nil {
		panic(err)
	}
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: crit})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	// Keep batch busy for a while.
	if _, err := thread.Run(rt, batch, func(c *thread.Ctx) int {
		n := 0
		for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); n++ {
			thread.Yield(c)
		}
		return n
	}); err != nil {
		panic(err)
	}

	s := rt.Stats()
	fmt.Println("workers:", s.Procs)
	for _, p := range s.Priorities {
		if p.Share > 0 {
			fmt.Printf("%s: share %.0f%%, ran: %v\n", p.Priority, 100*p.Share, p.CPU > 0)
		}
	}
	// Output:
	// workers: 2
	// batch: share 50%, ran: true
	// ui: share 50%, ran: false
}

func ExampleRuntime_SetCriterion() {
	o := fairness.NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	if err := o.Less(batch, ui); err != nil {
		panic(err)
	}
	even, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 50, batch: 50})
	if err != nil {
		panic(err)
	}
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: even})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	// At night nobody uses the ui: give batch 90% while it runs. A new
	// criterion must be over the runtime's order; each worker adopts it at
	// its next round.
	night, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 10, batch: 90})
	if err != nil {
		panic(err)
	}
	if err := rt.SetCriterion(night); err != nil {
		panic(err)
	}
	fmt.Printf("batch stretch %.2f, ui stretch %.0f\n", night.Stretch(batch), night.Stretch(ui))

	// A criterion over another order is refused.
	other := fairness.NewOrder()
	foreign, err := fairness.NewCriterion(other, map[fairness.Priority]float64{other.New("x"): 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(errors.Is(rt.SetCriterion(foreign), runtime.ErrInvalidConfig))
	// Output:
	// batch stretch 1.11, ui stretch 10
	// true
}
