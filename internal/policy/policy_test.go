package policy

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
)

// criterion gives a three-rank criterion (low, mid, high) with the given
// weights, high first as the benchmarks write them.
func criterion(t *testing.T, hi, mid, lo float64) *fairness.Criterion {
	t.Helper()
	o := fairness.NewOrder()
	l, m, h := o.New("lo"), o.New("mid"), o.New("hi")
	require.NoError(t, o.Less(l, m))
	require.NoError(t, o.Less(m, h))
	c, err := fairness.NewCriterion(o, map[fairness.Priority]float64{h: hi, m: mid, l: lo})
	require.NoError(t, err)
	return c
}

// Every window of rounds gives each rank its share up to a small constant,
// and a rank with no share is never primary.
func TestAlignedPrimaryShares(t *testing.T) {
	c := criterion(t, 50, 0, 50)
	ranks := c.Len()
	for _, seed := range []uint64{1, 42, 0xdeadbeef} {
		counts := make([]int, ranks)
		for k := range uint64(1000) {
			counts[AlignedPrimary(c, seed, k, ranks)]++
		}
		for r := range ranks {
			want := 1000 * c.ShareByRank(r)
			assert.LessOrEqual(t, math.Abs(float64(counts[r])-want), 3.0, "seed %d rank %d: %d rounds, want %.0f", seed, r, counts[r], want)
		}
	}
}

func TestRounds(t *testing.T) {
	assert.Equal(t, uint64(2), RoundOf(10_500, 5_000))
	assert.Equal(t, int64(15_000), RoundEnd(10_500, 5_000))
	assert.Equal(t, int64(15_000), RoundEnd(10_000, 5_000), "a round that starts now ends a quantum later")
	assert.Equal(t, int64(5_000_000), DefaultBudget(5_000_000), "the whole round: the share bounds borrowing")
}

func TestChoose(t *testing.T) {
	yes := func(int) bool { return true }
	no := func(int) bool { return false }
	never := func(int) bool { t.Fatal("borrow asked when its answer does not matter"); return false }
	for _, c := range []struct {
		name                       string
		top, primary, cur, primLen int
		borrow                     func(int) bool
		rank                       int
		donating                   bool
	}{
		{"nothing", NoRank, 1, NoRank, 0, never, NoRank, false},
		{"primary has work", 1, 1, NoRank, 3, never, 1, false},
		{"primary runs now", 1, 1, 1, 0, never, 1, false},
		{"donate to the highest", 2, 0, NoRank, 0, never, 2, true},
		{"borrow up", 2, 0, 0, 1, yes, 2, false},
		{"may not borrow", 2, 0, 0, 1, no, 0, false},
		{"lower work waits", 0, 1, 1, 0, never, 1, false},
	} {
		r, d := Choose(c.top, c.primary, c.cur, c.primLen, c.borrow)
		assert.Equal(t, c.rank, r, c.name)
		assert.Equal(t, c.donating, d, c.name)
	}
}

func TestMayBorrow(t *testing.T) {
	const q = 1_000
	w := UsageWindow(q)
	assert.Equal(t, int64(q<<UsageShift), w)
	assert.True(t, MayBorrow(w/10, w, 0.2, 0, q, false, 0, 10_000), "under its share: not running, so only what was recorded counts")
	assert.False(t, MayBorrow(w/5, w, 0.2, 0, q, false, 0, 10_000), "at its share")
	assert.False(t, MayBorrow(w/2, w, 0.2, 0, q, false, 0, 0), "a busy rank that had more than its share")
	assert.True(t, MayBorrow(w/10, w, 0.2, 0, w, true, 1_000, 1_000+w/20), "the running stretch counts")
	assert.False(t, MayBorrow(w/10, w, 0.2, 0, w, true, 1_000, 1_000+w/8), "the running stretch takes it to its share")
	assert.False(t, MayBorrow(0, w, 0.2, 250, 250, false, 0, 0), "a round's budget, when smaller than the round, caps it")
	assert.False(t, MayBorrow(0, w, 0.2, 200, 250, true, 1_000, 1_050), "the running stretch counts in the budget too")
	assert.False(t, MayBorrow(0, w, 0, 0, q, false, 0, 0), "no share, no borrowing")
	// On oversubscribed cores the worker had two thirds of the window: a
	// rank's share is of that.
	assert.False(t, MayBorrow(w/7, 2*w/3, 0.2, 0, q, false, 0, 0), "at its share of the time the worker had")
	assert.True(t, MayBorrow(w/8, 2*w/3, 0.2, 0, q, false, 0, 0), "under it")
}

func TestCharge(t *testing.T) {
	assert.Equal(t, int64(30), Charge(100, 30), "the processor time, when the OS took the thread off its core")
	assert.Equal(t, int64(100), Charge(100, -1), "unknown: the wall time")
	assert.Equal(t, int64(100), Charge(100, 120), "never more than the wall time (the thread ran other goroutines too)")
}

func TestUsage(t *testing.T) {
	const q = 1_000
	assert.Equal(t, UsageWindow(q)/4, UsageAtShare(0.25, q))
	used := []int64{0, 1 << 20, UsageWindow(q)}
	Decay(used, 5*q+300, 6*q+100, q)
	assert.Equal(t, []int64{0, 1<<20 - 1<<(20-UsageShift), UsageWindow(q) - q}, used, "one round start: each keeps 1 - 1/2^UsageShift")
	used = []int64{1 << 20}
	Decay(used, 5*q, 5*q+10, q)
	assert.Equal(t, int64(1<<20-1<<(20-UsageShift)), used[0], "at least one quantum")
	used = []int64{1 << 20}
	Decay(used, 0, 1_000_000*q, q)
	assert.Less(t, used[0], int64(1<<UsageShift), "a long sleep forgets")
	// A rank that runs a fraction f of every round settles near f of the
	// window, so that MayBorrow compares it with its share.
	x := []int64{0}
	for k := range int64(4000) {
		x[0] += q / 10
		Decay(x, k*q, (k+1)*q, q)
	}
	assert.InDelta(t, 0.1, float64(x[0])/float64(UsageWindow(q)), 0.002)
}

func TestKeep(t *testing.T) {
	assert.Equal(t, 1, Keep(2, 2, 0), "the thread run next stays")
	assert.Equal(t, 0, Keep(2, 2, 2), "the running thread is not in the bank")
	assert.Equal(t, 0, Keep(1, 2, 0))
}

func TestVictim(t *testing.T) {
	for n := 2; n <= 5; n++ {
		for self := range n {
			seen := make([]bool, n)
			for x := range uint64(4 * n) {
				v := Victim(x, self, n)
				require.NotEqual(t, self, v)
				seen[v] = true
			}
			assert.Equal(t, n-1, len(slices.DeleteFunc(seen, func(b bool) bool { return !b })), "every other worker is picked")
		}
	}
}

func TestRequest(t *testing.T) {
	for _, r := range []int{0, 3, 1000} {
		for _, any := range []bool{false, true} {
			got, gotAny := RequestedRank(Request(r, any))
			assert.Equal(t, r, got)
			assert.Equal(t, any, gotAny)
		}
	}
	assert.Equal(t, []int{1}, RequestOrder(nil, 1, false, 0, 2))
	assert.True(t, AsksForPrimary(false, 100, 100), "a new pass, the interval over")
	assert.False(t, AsksForPrimary(true, 100, 100), "asked in this pass")
	assert.False(t, AsksForPrimary(false, 99, 100), "asked within the deal interval")
	assert.True(t, DealsAfterRequest(false, false), "a donating worker's request for its primary rank, not served")
	assert.False(t, DealsAfterRequest(true, false), "served")
	assert.False(t, DealsAfterRequest(false, true), "an idle asker refused: no surplus at all")
	assert.Equal(t, []int{1, 0, 2, 1, 0}, RequestOrder(nil, 1, true, 0, 2))
	assert.Equal(t, []int{2, 0}, OfferOrder(nil, 2, 0))
}

func TestSteer(t *testing.T) {
	const r = 2
	donating := SteerScore(r, 0, r, false, false)
	asleep := SteerScore(r, NoRank, 0, true, false)
	primary := SteerScore(r, r, r, false, false)
	lowest := SteerScore(r, 0, 0, false, false)
	higher := SteerScore(r, 1, 0, false, false)
	stale := SteerScore(r, 0, r, false, true)
	assert.Greater(t, donating, asleep)
	assert.Greater(t, asleep, primary)
	assert.Greater(t, primary, lowest)
	assert.Greater(t, lowest, higher)
	assert.Less(t, stale, higher)
	assert.True(t, SteerRevokes(SteerScore(r, 0, 0, false, true)))
	assert.False(t, SteerRevokes(lowest))

	// The highest score wins; of equal ones, the first from start on.
	scores := []int{5, 9, 9, -3}
	score := func(v int) int { return scores[v] }
	for start, want := range []int{1, 1, 2, 1, 1} {
		v, best := Steer(len(scores), start, score)
		assert.Equal(t, [2]int{want, 9}, [2]int{v, best}, "from %d", start)
	}
	v, best := Steer(1, 7, func(int) int { return SteerScore(r, 0, 0, false, true) })
	assert.Equal(t, 0, v, "a single worker, stale or not")
	assert.True(t, SteerRevokes(best))
}

// A resumed thread seizes a worker that runs a lower rank's code and would
// switch to it: its primary rank, or a rank that may borrow.
func TestSeizes(t *testing.T) {
	const r = 2
	assert.True(t, Seizes(r, 0, r, false), "its primary rank")
	assert.True(t, Seizes(r, 1, 0, true), "may borrow the round")
	assert.False(t, Seizes(r, 1, 0, false), "no share to borrow with")
	assert.False(t, Seizes(r, 0, 3, true), "a higher primary rank's round")
	assert.False(t, Seizes(r, r, r, true), "runs the same rank")
	assert.False(t, Seizes(r, 3, r, true), "runs a higher rank")
	assert.False(t, Seizes(r, NoRank, r, true), "in the scheduler, not in thread code")
}

func TestWatchdog(t *testing.T) {
	rt := RoundTicks(5_000_000, 1_000_000)
	assert.Equal(t, 5, rt)
	assert.Equal(t, StallTicks, RoundTicks(1, 1_000_000))
	assert.Equal(t, Wait, Watchdog(1, rt, true))
	assert.Equal(t, RevokeBusy, Watchdog(StallTicks, rt, true))
	assert.Equal(t, Wait, Watchdog(StallTicks, rt, false))
	assert.Equal(t, RevokeBlocked, Watchdog(rt, rt, false))
	assert.Equal(t, Wait, Measured(Wait, true, true), "no revocation yet")
	assert.Equal(t, RevokeBlocked, Measured(RevokeBlocked, false, false), "not known: the guess stands")
	assert.Equal(t, RevokeBusy, Measured(RevokeBlocked, true, true), "unasked, but it computes")
	assert.Equal(t, RevokeBlocked, Measured(RevokeBusy, true, false), "asked for, but it blocks")
}

func TestPromote(t *testing.T) {
	assert.False(t, Promote(1, false), "nobody to give it to")
	assert.True(t, Promote(2, false))
	assert.False(t, Promote(2, true), "the bank has work to give already")
}

// A deal's victim is the first sleeper among AskTries draws, an ask's the
// first worker awake; with none found, the last draw.
func TestDealAndAskVictims(t *testing.T) {
	seq := func(vs ...uint64) func() uint64 {
		i := 0
		return func() uint64 { i++; return vs[i-1] }
	}
	asleep := func(v int) bool { return v == 3 }
	// Victim(r, 0, 8) is r%7+1.
	assert.Equal(t, 3, DealVictim(0, 8, seq(0, 1, 2, 3), asleep), "the third draw sleeps")
	assert.Equal(t, 5, DealVictim(0, 8, seq(3, 4, 5, 4), func(int) bool { return false }), "no sleeper: the last draw")
	assert.Equal(t, 1, AskVictim(0, 8, seq(2, 0), asleep), "the first awake")
	assert.Equal(t, 3, AskVictim(0, 8, seq(2, 2, 2, 2), asleep), "all asleep: the last draw")
}

// The watchdog revokes for a waiting thread above the stuck one, as its
// arrival would; otherwise with AboveAll.
func TestWatchdogBelow(t *testing.T) {
	assert.Equal(t, 2, WatchdogBelow(2, 0), "a higher rank waits")
	assert.Equal(t, AboveAll, WatchdogBelow(0, 0), "only its own rank waits")
	assert.Equal(t, AboveAll, WatchdogBelow(NoRank, 1), "nothing waits")
	assert.False(t, RefuseRevoke(true, 1, 0, 0, WatchdogBelow(2, 0)), "let through above every detached goroutine")
	assert.True(t, RefuseRevoke(true, 1, 0, 0, WatchdogBelow(0, 0)), "a second detached goroutine at the same level")
}

// A random deal's victim from the index of open mailboxes: the first set
// bit at or after the random position, going round, never self; -1 for
// none.
func TestOpenVictim(t *testing.T) {
	index := func(ws ...uint64) func(int) uint64 { return func(i int) uint64 { return ws[i] } }
	assert.Equal(t, -1, OpenVictim(0, 128, 5, index(0, 0)), "no open mailbox")
	assert.Equal(t, -1, OpenVictim(3, 8, 5, index(1<<3)), "only self's")
	assert.Equal(t, 6, OpenVictim(0, 8, 5, index(1<<2|1<<6)), "the first at or after 5")
	assert.Equal(t, 2, OpenVictim(0, 8, 7, index(1<<2|1<<6)), "going round")
	assert.Equal(t, 2, OpenVictim(6, 8, 6, index(1<<2|1<<6)), "not self")
	assert.Equal(t, 70, OpenVictim(0, 128, 5, index(0, 1<<6)), "in the next word")
	assert.Equal(t, 3, OpenVictim(0, 128, 100, index(1<<3, 1<<6)), "round past the last word, before the start")
	assert.Equal(t, 64+40, OpenVictim(0, 128, 100, index(1<<3, 1<<6|1<<40)), "the start's own word, wrapping to its low bits")
	assert.Equal(t, 64, OpenVictim(5, 65, 64, index(0, 1)), "a partial last word")
	// Every open mailbox is found, as often as the gap before it is long.
	hits := map[int]int{}
	for r := range uint64(128) {
		hits[OpenVictim(0, 128, r, index(1<<9|1<<50, 1<<1))]++
	}
	assert.Equal(t, map[int]int{9: 10 + 62, 50: 41, 65: 15}, hits, "the first at or after each position")
}

// Spreading: a deal that landed, a deal received or an idle worker's
// request refused open a window of a deal interval; a deal with surplus
// and no taker closes it; anything else leaves it.
func TestSpreadAfter(t *testing.T) {
	const now, window = 1000, 100
	assert.Equal(t, int64(1100), SpreadAfter(0, now, window, true, false, false, false), "dealt")
	assert.Equal(t, int64(1100), SpreadAfter(0, now, window, false, false, true, false), "received")
	assert.Equal(t, int64(1100), SpreadAfter(0, now, window, false, false, false, true), "refused an idle worker")
	assert.Equal(t, int64(now), SpreadAfter(1050, now, window, false, true, false, false), "no taker")
	assert.Equal(t, int64(1050), SpreadAfter(1050, now, window, false, false, false, false), "nothing to deal yet: the window stays")
	assert.False(t, Spreading(SpreadAfter(1050, now, window, false, true, false, false), now))
	assert.True(t, Spreading(1050, now))
	assert.False(t, Spreading(now, now))
	assert.True(t, DealDue(now, 2000, false, true), "spreading deals ahead of the interval")
	assert.True(t, DealDue(now, 2000, true, false), "a request waits")
	assert.True(t, DealDue(now, now, false, false), "the interval is over")
	assert.False(t, DealDue(now, 2000, false, false))
}

// Pace: points that come far apart pass the scheduler more often, down to
// every point; close ones grow the count back to CheckEvery.
func TestPace(t *testing.T) {
	far, close, mid := int64(2*PassEvery), int64(PassEvery/8), int64(PassEvery/2)
	assert.Equal(t, CheckEvery/2, Pace(0, far), "the first pass starts from CheckEvery")
	assert.Equal(t, CheckEvery, Pace(0, close))
	assert.Equal(t, 1, Pace(1, far), "never below one")
	assert.Equal(t, CheckEvery, Pace(CheckEvery, close), "never above CheckEvery")
	assert.Equal(t, 8, Pace(8, mid), "passes about PassEvery apart keep the count")
	every := CheckEvery
	for range 10 { // a thread whose points are 25 µs apart
		every = Pace(every, int64(every)*int64(25*time.Microsecond))
	}
	assert.LessOrEqual(t, int64(every)*int64(25*time.Microsecond), int64(PassEvery), "settles at passes PassEvery apart or closer")
	assert.GreaterOrEqual(t, every, 1)
}
