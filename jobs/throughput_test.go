package jobs_test

import (
	"context"
	goruntime "runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/jobs"
	"github.com/fairlyprompt/fairly/jobs/internal/storetest"
	"github.com/fairlyprompt/fairly/thread"
)

// BenchmarkSubmitThroughput measures the whole path through the public
// API at P=2: each iteration submits 10 000 jobs with empty bodies, one
// per fairness key, and waits until all have finished (admission, a
// fairly thread per job, completion, learning). The IDs repeat from one
// iteration to the next, as a service's repositories do, so the learned
// estimates are used.
func BenchmarkSubmitThroughput(b *testing.B) {
	rt, p := storetest.Runtime(b)
	s, err := jobs.New(rt, jobs.Config{
		Slots: 64,
		Tiers: []jobs.Tier{{Name: "t", Priority: p}},
		Types: map[jobs.JobType]jobs.TypeConfig{"j": {DefaultCost: time.Millisecond, Tier: "t"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 10_000 // jobs per iteration, one per key
	keys := make([]string, batch)
	ids := make([]string, batch)
	for i := range keys {
		keys[i] = "client" + strconv.Itoa(i)
		ids[i] = "repo" + strconv.Itoa(i)
	}
	var wg sync.WaitGroup
	body := func(context.Context, *thread.Ctx) error { wg.Done(); return nil }
	for b.Loop() {
		wg.Add(batch)
		for i := range batch {
			if err := s.Submit(jobs.Job{Type: "j", ID: ids[i], Key: keys[i], Run: body}); err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
		// A body reports before its job's end is recorded: wait for the
		// record, or the next batch would join jobs still finishing.
		for s.Snapshot().Running > 0 {
			goruntime.Gosched()
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "jobs/s")
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}
