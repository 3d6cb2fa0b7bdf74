// Package storetest holds what the durable stores' tests share.
package storetest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/jobs"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Throughput measures the whole path on a durable store at P = 2: each
// iteration submits 10 000 new jobs with empty bodies from 64 goroutines
// (a Submit waits for its commit, so one goroutine would measure the
// commit latency, not the throughput), one per fairness key, and waits
// until all have run; Close then waits for the last ends to be committed.
// It reports jobs/s.
func Throughput(b *testing.B, st *jobs.Store) {
	rt, p := Runtime(b)
	var wg sync.WaitGroup
	body := func(context.Context, *thread.Ctx, string, []byte) error { wg.Done(); return nil }
	s, err := jobs.New(rt, jobs.Config{
		Slots: 64,
		Tiers: []jobs.Tier{{Name: "t", Priority: p}},
		Types: map[jobs.JobType]jobs.TypeConfig{"j": {DefaultCost: time.Millisecond, Tier: "t", Handler: body}},
		Store: st,
	})
	if err != nil {
		b.Fatal(err)
	}
	const batch, submitters = 10_000, 64
	iter := 0
	for b.Loop() {
		iter++
		prefix := "repo" + strconv.Itoa(iter) + "-"
		wg.Add(batch)
		var subs sync.WaitGroup
		for g := range submitters {
			subs.Go(func() {
				for i := g; i < batch; i += submitters {
					n := strconv.Itoa(i)
					if err := s.Submit(jobs.Job{Type: "j", ID: prefix + n, Key: "client" + n}); err != nil {
						b.Error(err)
					}
				}
			})
		}
		subs.Wait()
		wg.Wait()
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "jobs/s")
}

// Runtime is a runtime with P = 2 and one priority, closed when b ends,
// for the throughput benchmarks.
func Runtime(b *testing.B) (*runtime.Runtime, fairness.Priority) {
	o := fairness.NewOrder()
	p := o.New("jobs")
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{p: 100})
	if err != nil {
		b.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: crit})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	return rt, p
}
