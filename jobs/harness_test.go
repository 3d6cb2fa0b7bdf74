package jobs

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/thread"
	"github.com/stretchr/testify/require"
)

// manual is a launcher that only records admitted jobs: the test ends
// them with Scheduler.finish, on a fake clock.
type manual struct {
	mu      sync.Mutex
	started []*entry
}

func (m *manual) launch(_ *Scheduler, e *entry) {
	m.mu.Lock()
	m.started = append(m.started, e)
	m.mu.Unlock()
}

// take returns and forgets the jobs started since the last call.
func (m *manual) take() []*entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.started
	m.started = nil
	return out
}

// launchedOne waits until the scheduler has handed one job to m, and
// returns it. A job started by a RunSync on another goroutine counts as
// running (Snapshot) before the scheduler hands it to the launcher.
func (m *manual) launchedOne(t *testing.T) *entry {
	t.Helper()
	var got []*entry
	require.Eventually(t, func() bool {
		got = append(got, m.take()...)
		return len(got) > 0
	}, 10*time.Second, time.Millisecond)
	require.Len(t, got, 1)
	return got[0]
}

// fakeSched is a Scheduler on a fake clock whose jobs the test ends.
type fakeSched struct {
	*Scheduler
	m     *manual
	clock atomic.Int64 // nanoseconds since epoch
}

func newFakeSched(t *testing.T, cfg Config) *fakeSched {
	t.Helper()
	fs := &fakeSched{m: &manual{}}
	cfg.Clock = func() time.Time { return epoch.Add(time.Duration(fs.clock.Load())) }
	s, err := validate(cfg)
	require.NoError(t, err)
	fs.Scheduler, err = newScheduler(s, fs.m)
	require.NoError(t, err)
	return fs
}

// advance moves the fake clock and makes the scheduler notice.
func (fs *fakeSched) advance(d time.Duration) {
	fs.clock.Add(int64(d))
	fs.Reschedule()
}

func noop(context.Context, *thread.Ctx) error { return nil }

// oneType is a single-tier configuration with one job type.
func oneType(slots int) Config {
	return Config{Slots: slots, Tiers: []Tier{{Name: "t"}},
		Types: map[JobType]TypeConfig{"j": {DefaultCost: time.Second, Tier: "t"}}}
}
