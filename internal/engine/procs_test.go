package engine

import (
	goruntime "runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/internal/policy"
)

// Others' goroutines count only once every tick over policy.OthersFor saw them,
// and never beyond the limit.
func TestPsFitNeedFiltersBriefGoroutines(t *testing.T) {
	ms := int64(time.Millisecond)
	span := int64(policy.OthersFor) / ms
	f := newPsFit()
	at := int64(0)
	for range span {
		assert.Zero(t, f.need(at, 1, 8), "at %d ms", at/ms)
		at += ms
	}
	assert.Equal(t, 1, f.need(at, 1, 8))
	at += ms
	assert.Equal(t, 1, f.need(at, 3, 8), "the lowest of the window")
	at += ms
	f.need(at, 0, 8)
	at += ms
	assert.Zero(t, f.need(at, 3, 8))

	// Ticks far apart, as while the spare P is taken: two suffice.
	f = newPsFit()
	at = 0
	f.need(at, 2, 8)
	at += 2 * int64(policy.OthersFor)
	assert.Equal(t, 2, f.need(at, 2, 8))
	at += 2 * int64(policy.OthersFor)
	assert.Equal(t, 2, f.need(at, 9, 2), "bounded")
}

// Raises are made at once; a lowering waits for a calm window and goes
// down only to the most the window needed; a raise soon after a lowering
// doubles the window, so that a load that comes and goes changes
// GOMAXPROCS ever more rarely.
func TestPsFitRaisesAtOnceLowersAfterCalm(t *testing.T) {
	ms := int64(time.Millisecond)
	win := int64(policy.CalmWindow)
	f := newPsFit()
	n, ok := f.next(0, 2)
	assert.True(t, ok)
	assert.Equal(t, 2, n)
	_, ok = f.next(1*ms, 2)
	assert.False(t, ok, "no change")

	// The need falls: nothing before the window is over.
	_, ok = f.next(2*ms, 0)
	assert.False(t, ok)
	_, ok = f.next(3*ms, 1)
	assert.False(t, ok)
	_, ok = f.next(2*ms+win-1, 0)
	assert.False(t, ok)
	n, ok = f.next(2*ms+win, 0)
	assert.True(t, ok)
	assert.Equal(t, 1, n, "down to the most the window needed")

	// Back up soon after: at once, and the next lowering waits twice as long.
	at := 2*ms + win + 10*ms
	n, ok = f.next(at, 2)
	assert.True(t, ok)
	assert.Equal(t, 2, n)
	_, ok = f.next(at+ms, 1)
	assert.False(t, ok)
	_, ok = f.next(at+ms+win, 1)
	assert.False(t, ok, "the window doubled")
	n, ok = f.next(at+ms+2*win, 1)
	assert.True(t, ok)
	assert.Equal(t, 1, n)

	// A need back at asked restarts the calm.
	at += 2 * win
	for _, need := range []int{0, 1, 0} {
		at += win
		_, ok = f.next(at, need)
		assert.False(t, ok)
	}

	// A long steady state forgets the doubling.
	at += int64(policy.MaxCalm)
	_, ok = f.next(at, 1)
	assert.False(t, ok)
	assert.Equal(t, win, f.window)
}

// The program's GOMAXPROCS is the floor: a raise after New survives the
// runtimes' own changes and the last Close, and without one Close gives
// back what the program had.
func TestProcsKeepProgramsSetting(t *testing.T) {
	prev := goruntime.GOMAXPROCS(1)
	t.Cleanup(func() { goruntime.GOMAXPROCS(prev) })

	spare := policy.SpareProcs
	joinProcs(2)
	require.Equal(t, 2+spare, goruntime.GOMAXPROCS(0), "the workers and the spares")
	assert.Equal(t, 1, BaseProcs())
	reserveP(1)
	assert.Equal(t, 3+spare, goruntime.GOMAXPROCS(0))
	reserveP(-1)
	assert.Equal(t, 2+spare, goruntime.GOMAXPROCS(0))
	leaveProcs(2, 0)
	assert.Equal(t, 1, goruntime.GOMAXPROCS(0), "back to the program's")

	joinProcs(2)
	raise := 4 + spare
	goruntime.GOMAXPROCS(raise) // the program raises it
	assert.Equal(t, raise, BaseProcs())
	reserveP(1)
	assert.Equal(t, raise, goruntime.GOMAXPROCS(0), "the program's raise stays")
	reserveP(-1)
	assert.Equal(t, raise, goruntime.GOMAXPROCS(0))
	leaveProcs(2, 0)
	assert.Equal(t, raise, goruntime.GOMAXPROCS(0), "Close keeps the program's raise")

	joinProcs(2)
	reserveP(1)
	goruntime.GOMAXPROCS(5) // set while the runtime had raised it
	leaveProcs(2, 1)
	assert.Equal(t, 5, goruntime.GOMAXPROCS(0), "Close keeps the program's setting")

	// A program that lowers it below the workers and a spare takes it
	// over, until it sets a value that holds them again.
	joinProcs(2)
	goruntime.GOMAXPROCS(1)
	reserveP(1)
	assert.Equal(t, 1, goruntime.GOMAXPROCS(0), "the program's lowering stays")
	goruntime.GOMAXPROCS(3)
	reserveP(1)
	assert.Equal(t, 4+spare, goruntime.GOMAXPROCS(0), "raised again above the program's 3")
	leaveProcs(2, 2)
	assert.Equal(t, 3, goruntime.GOMAXPROCS(0))
}
