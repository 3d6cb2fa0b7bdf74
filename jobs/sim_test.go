package jobs

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sim drives the admission core on a fake clock, one tick a second, the
// way the design documents' simulations do.
type sim struct {
	t       *testing.T
	c       *core
	now     time.Time
	ends    map[*entry]time.Time // running jobs and when they finish
	durs    map[*entry]time.Duration
	started []*entry
	starts  map[*entry]time.Time
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newSim(t *testing.T, cfg Config) *sim {
	t.Helper()
	sm := &sim{t: t, now: epoch, ends: map[*entry]time.Time{}, durs: map[*entry]time.Duration{}, starts: map[*entry]time.Time{}}
	cfg.Clock = func() time.Time { return sm.now }
	s, err := validate(cfg)
	require.NoError(t, err)
	sm.c = newCore(s)
	return sm
}

// add enqueues a job that will run for dur once admitted.
func (sm *sim) add(typ JobType, id, key, grp string, w float64, dur time.Duration) *entry {
	sm.t.Helper()
	ts, ok := sm.c.types[typ]
	require.True(sm.t, ok, typ)
	e := &entry{tid: tid{typ, id}, typ: ts, weight: w}
	sm.durs[e] = dur
	sm.c.enqueue(e, key, grp, sm.now)
	return e
}

// step completes due jobs and dispatches.
func (sm *sim) step() {
	sm.completeDue()
	sm.dispatch()
}

func (sm *sim) completeDue() {
	for e, end := range sm.ends {
		if !end.After(sm.now) {
			delete(sm.ends, e)
			sm.c.complete(e, end.Sub(e.start), sm.now)
		}
	}
}

// tick moves the clock a second, completes the jobs due and prepares an
// admission decision, leaving the admissions (core.next) to the caller.
func (sm *sim) tick() {
	sm.now = sm.now.Add(time.Second)
	sm.completeDue()
	sm.c.prepare(sm.now)
}

func (sm *sim) dispatch() []*entry {
	out := sm.c.dispatch(sm.now)
	for _, e := range out {
		sm.ends[e] = sm.now.Add(sm.durs[e])
		sm.starts[e] = sm.now
		sm.started = append(sm.started, e)
	}
	return out
}

// advance moves the clock and steps once.
func (sm *sim) advance(d time.Duration) {
	sm.now = sm.now.Add(d)
	sm.step()
}

// at is when e started, in seconds from the epoch; -1 if it did not.
func (sm *sim) at(e *entry) float64 {
	st, ok := sm.starts[e]
	if !ok {
		return -1
	}
	return st.Sub(epoch).Seconds()
}

func itoa(i int) string { return strconv.Itoa(i) }

// admissions renders the admission log as "t: id id …" lines, one per
// second that admitted something.
func (sm *sim) admissions() []string {
	var out []string
	last := -1.0
	for _, e := range sm.started {
		at := sm.at(e)
		if at != last {
			out = append(out, itoa(int(at))+":")
			last = at
		}
		out[len(out)-1] += " " + e.tid.id
	}
	return out
}
