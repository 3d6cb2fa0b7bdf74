package mailbox

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStateString(t *testing.T) {
	assert.Equal(t, "closed", Closed.String())
	assert.Equal(t, "open", Open.String())
	assert.Equal(t, "claimed", Claimed.String())
	assert.Equal(t, "full", Full.String())
	assert.Equal(t, "State(9)", State(9).String())
}

func TestTransitions(t *testing.T) {
	var m Mailbox[string]
	require.Equal(t, Closed, m.State(), "zero value")
	assert.False(t, m.TryClaim(), "claim on Closed")
	items, ok := m.Receive()
	assert.False(t, ok)
	assert.Nil(t, items)
	assert.Nil(t, m.Close(), "Close on Closed")

	require.True(t, m.Open())
	require.True(t, m.Open(), "Open on Open")
	require.Equal(t, Open, m.State())
	_, ok = m.Receive()
	assert.False(t, ok, "Receive on Open")
	assert.Nil(t, m.Close(), "Open → Closed")
	require.Equal(t, Closed, m.State())

	require.True(t, m.Open())
	require.True(t, m.TryClaim())
	require.Equal(t, Claimed, m.State())
	assert.False(t, m.TryClaim(), "claim on Claimed")
	assert.False(t, m.Open(), "Open on Claimed")
	_, ok = m.Receive()
	assert.False(t, ok, "Receive on Claimed")
	m.Send([]string{"a", "b"})
	require.Equal(t, Full, m.State())
	assert.False(t, m.TryClaim(), "claim on Full")
	assert.False(t, m.Open(), "Open on Full")
	require.Equal(t, Full, m.State(), "items stay")
	items, ok = m.Receive()
	assert.True(t, ok)
	assert.Equal(t, []string{"a", "b"}, items)
	require.Equal(t, Closed, m.State())
	assert.Nil(t, m.items, "no reference kept")

	// Close on Full takes the items.
	require.True(t, m.Open())
	require.True(t, m.TryClaim())
	m.Send([]string{"c"})
	assert.Equal(t, []string{"c"}, m.Close())
	assert.Equal(t, Closed, m.State())
}

func TestSendWithoutClaimPanics(t *testing.T) {
	var m Mailbox[int]
	assert.PanicsWithValue(t, "mailbox: Send on a closed mailbox; Send requires a successful TryClaim", func() { m.Send([]int{1}) })
	m.Open()
	assert.Panics(t, func() { m.Send([]int{1}) }, "Open")
	m.TryClaim()
	m.Send([]int{1})
	assert.Panics(t, func() { m.Send([]int{2}) }, "Full")
}

func TestCloseWaitsForClaimedSender(t *testing.T) {
	var m Mailbox[int]
	require.True(t, m.Open())
	require.True(t, m.TryClaim())
	done := make(chan []int)
	go func() { done <- m.Close() }()
	runtime.Gosched()
	m.Send([]int{7})
	assert.Equal(t, []int{7}, <-done)
	assert.Equal(t, Closed, m.State())
}

func TestOneClaimerWins(t *testing.T) {
	const claimers = 8
	for range 1000 {
		var m Mailbox[int]
		require.True(t, m.Open())
		var wins atomic.Int32
		var start, wg sync.WaitGroup
		start.Add(1)
		for i := range claimers {
			wg.Go(func() {
				start.Wait()
				if m.TryClaim() {
					wins.Add(1)
					m.Send([]int{i})
				}
			})
		}
		start.Done()
		wg.Wait()
		require.Equal(t, int32(1), wins.Load())
		items, ok := m.Receive()
		require.True(t, ok)
		require.Len(t, items, 1)
	}
}

// TestStress has senders deliver numbered items while the receiver opens, closes and
// receives at random: every item must arrive exactly once.
func TestStress(t *testing.T) {
	const senders, perSender = 4, 2000
	var m Mailbox[int]
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := 0; i < perSender; {
				if !m.TryClaim() {
					runtime.Gosched()
					continue
				}
				n := min(1+i%3, perSender-i) // batches of 1 to 3
				batch := make([]int, n)
				for j := range batch {
					batch[j] = s*perSender + i + j
				}
				m.Send(batch)
				i += n
			}
		})
	}
	seen := make([]int, senders*perSender)
	received := 0
	collect := func(items []int) {
		for _, x := range items {
			seen[x]++
		}
		received += len(items)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for received < len(seen) {
		m.Open()
		switch rng.IntN(3) {
		case 0:
			collect(m.Close())
		case 1:
			items, _ := m.Receive()
			collect(items)
		default:
			runtime.Gosched()
		}
	}
	wg.Wait()
	assert.Nil(t, m.Close())
	for x, k := range seen {
		require.Equal(t, 1, k, "item %d", x)
	}
}

func TestRequestCell(t *testing.T) {
	var r RequestCell
	assert.False(t, r.Pending())
	_, _, ok := r.Take()
	assert.False(t, ok)

	require.True(t, r.Post(0, 0), "worker 0, rank 0 is not empty")
	assert.True(t, r.Pending())
	assert.False(t, r.Post(3, 1), "already pending")
	w, rank, ok := r.Take()
	assert.True(t, ok)
	assert.Equal(t, [2]int{0, 0}, [2]int{w, rank})
	assert.False(t, r.Pending())

	require.True(t, r.Post(1<<32-2, 1<<32-1))
	w, rank, ok = r.Take()
	assert.True(t, ok)
	assert.Equal(t, [2]int{1<<32 - 2, 1<<32 - 1}, [2]int{w, rank})

	assert.Panics(t, func() { r.Post(-1, 0) })
	assert.Panics(t, func() { r.Post(0, -1) })
	assert.Panics(t, func() { r.Post(1<<32-1, 0) })
	assert.Panics(t, func() { r.Post(0, 1<<32) })
}

func TestRequestCellOnePosterWins(t *testing.T) {
	for range 200 {
		var r RequestCell
		var wins atomic.Int32
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				if r.Post(w, w+10) {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), wins.Load())
		w, rank, ok := r.Take()
		require.True(t, ok)
		require.Equal(t, w+10, rank)
		require.False(t, r.Pending())
	}
}
