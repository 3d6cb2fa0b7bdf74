package engine

import (
	"github.com/fairlyprompt/fairly/fairness"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkStuckWorker: how long a thread submitted from outside waits when
// the only worker is held by a thread that computes without preemption
// points or blocks outside Await. "arrival": the stuck thread computes at a
// lower priority, so the arriving one takes the worker at once; "computing"
// and "blocked": both at one priority, so the watchdog gives the worker up
// after two ticks. Reports the median and worst wait.
func BenchmarkStuckWorker(b *testing.B) {
	for _, mode := range []string{"arrival", "computing", "blocked"} {
		b.Run(mode, func(b *testing.B) {
			rt := New(testConfig(1, fairness.Uniform(fairness.NewOrder())))
			defer rt.Close()
			p, low := rt.Order().Top(), rt.Order().Top()
			if mode == "arrival" {
				low = rt.Order().Bottom()
			}
			var waits []time.Duration
			for b.Loop() {
				var release atomic.Bool
				unblock := make(chan struct{})
				stuck := &Task{}
				if err := stuck.Init(rt, low, fn(func(*Task) {
					if mode == "blocked" {
						<-unblock
						return
					}
					for !release.Load() {
					}
				})); err != nil {
					b.Fatal(err)
				}
				if err := rt.Submit(stuck); err != nil {
					b.Fatal(err)
				}
				time.Sleep(time.Millisecond) // let it start
				start := time.Now()
				var ran time.Duration
				t := &Task{}
				if err := t.Init(rt, p, fn(func(*Task) { ran = time.Since(start) })); err != nil {
					b.Fatal(err)
				}
				if err := rt.Submit(t); err != nil {
					b.Fatal(err)
				}
				t.Wait()
				release.Store(true)
				close(unblock)
				stuck.Wait()
				waits = append(waits, ran)
			}
			slices.Sort(waits)
			b.ReportMetric(float64(waits[len(waits)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(waits[len(waits)-1].Microseconds()), "max-µs")
		})
	}
}
