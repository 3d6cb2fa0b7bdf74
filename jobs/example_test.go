package jobs_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/jobs"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func Example() {
	o := fairness.NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	_ = o.Less(batch, ui)
	crit, _ := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 50, batch: 50})
	rt, _ := runtime.New(runtime.Config{Procs: 2, Criterion: crit})
	defer rt.Close()

	s, err := jobs.New(rt, jobs.Config{
		Slots: 4,
		Tiers: []jobs.Tier{{Name: "background", Priority: batch, Cap: 2}, {Name: "foreground", Priority: ui}},
		Types: map[jobs.JobType]jobs.TypeConfig{
			"clone":  {DefaultCost: time.Second, ConflictGroup: "git", Tier: "foreground"},
			"repack": {DefaultCost: 2 * time.Second, MaxConcurrency: 1, ConflictGroup: "git", Tier: "background"},
		},
		Aging: jobs.Aging{Grace: time.Minute, Interval: 10 * time.Second, Urgent: 2},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	var files int
	err = s.RunSync(context.Background(), jobs.Job{Type: "clone", ID: "linux", Key: "10.0.0.7",
		Run: func(ctx context.Context, c *thread.Ctx) error {
			// Blocking work goes through Await; parallel work through Spawn.
			files = thread.Await(c, func() int { return 42 })
			return nil
		}})
	fmt.Println(files, err)
	// Output: 42 <nil>
}
