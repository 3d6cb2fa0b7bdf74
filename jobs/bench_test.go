package jobs

import (
	"testing"
	"time"
)

var benchSizes = []int{1_000, 10_000, 100_000}

// benchCore builds a core with n jobs pending over n/10 fairness keys and
// 20 groups, two tiers, four types and aging armed (nothing due).
type benchCore struct {
	c   *core
	now time.Time
	n   int
}

var benchTypes = []JobType{"clone", "pull", "repack", "export"}

func newBenchCore(b *testing.B, n, slots int) *benchCore {
	bc := &benchCore{now: epoch, n: n}
	s, err := validate(Config{
		Slots: slots,
		Tiers: []Tier{{Name: "bg", Cap: slots * 3 / 4}, {Name: "fg"}},
		Types: map[JobType]TypeConfig{
			"clone":  {DefaultCost: 10 * time.Second, Tier: "fg"},
			"pull":   {DefaultCost: 5 * time.Second, Tier: "fg"},
			"repack": {DefaultCost: 20 * time.Second, Tier: "bg"},
			"export": {DefaultCost: time.Second, Tier: "bg"},
		},
		Aging: Aging{Grace: time.Hour, Interval: time.Hour, Urgent: 3},
		Clock: func() time.Time { return bc.now },
	})
	if err != nil {
		b.Fatal(err)
	}
	bc.c = newCore(s)
	for i := range n {
		bc.add(i, tid{benchTypes[i%len(benchTypes)], "job" + itoa(i)})
	}
	return bc
}

func (bc *benchCore) add(i int, id tid) {
	e := &entry{tid: id, typ: bc.c.types[id.typ], weight: 1 + float64(i%3)}
	bc.c.enqueue(e, "k"+itoa(i%(bc.n/10)), "g"+itoa(i%20), bc.now)
}

// BenchmarkAdmit measures admission alone: each iteration admits a batch
// of jobs (n/10, at most 1000) into free slots; completing them and
// submitting replacements, so that n stays put, is left out of the timing.
func BenchmarkAdmit(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("pending="+itoa(n), func(b *testing.B) {
			batch := min(1000, n/10)
			bc := newBenchCore(b, n, batch)
			admitted := 0
			next := n
			last := bc.c.dispatch(bc.now)
			for b.Loop() {
				b.StopTimer()
				for _, e := range last {
					bc.now = bc.now.Add(time.Microsecond)
					bc.c.complete(e, time.Second, bc.now)
					bc.add(next, e.tid)
					next++
				}
				bc.c.events = bc.c.events[:0] // the Scheduler hands them out after each dispatch
				b.StartTimer()
				last = bc.c.dispatch(bc.now)
				admitted += len(last)
			}
			b.ReportMetric(float64(admitted)/b.Elapsed().Seconds(), "admissions/s")
		})
	}
}

// BenchmarkAdmitCycle measures a whole cycle: complete the oldest of 64
// running jobs, submit a replacement, admit the next job.
func BenchmarkAdmitCycle(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("pending="+itoa(n), func(b *testing.B) {
			bc := newBenchCore(b, n, 64)
			ring := bc.c.dispatch(bc.now)
			next := n
			for b.Loop() {
				bc.now = bc.now.Add(time.Microsecond)
				done := ring[0]
				ring = ring[1:]
				bc.c.complete(done, time.Second, bc.now)
				bc.add(next, done.tid)
				next++
				ring = append(ring, bc.c.dispatch(bc.now)...)
				bc.c.events = bc.c.events[:0]
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
			if bc.c.nPending != n-64 || bc.c.nRunning != 64 {
				b.Fatalf("pending %d running %d", bc.c.nPending, bc.c.nRunning)
			}
		})
	}
}
