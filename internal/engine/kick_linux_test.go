package engine

import (
	"crypto/sha256"
	"maps"
	goruntime "runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pinnedThreads counts, per processor, the threads of the process that may
// run only on it.
func pinnedThreads(t *testing.T) map[int]int {
	t.Helper()
	out := map[int]int{}
	for _, tid := range threadIDs(t) {
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) != nil || set.Count() != 1 {
			continue // gone meanwhile, or not pinned
		}
		for cpu := range len(set) * 64 {
			if set.IsSet(cpu) {
				out[cpu]++
			}
		}
	}
	return out
}

// kickShares is how many runtimes hold a share of the kicks.
func kickShares() int {
	osKicks.Lock()
	defer osKicks.Unlock()
	return osKicks.users
}

// TestKicks: the first share starts one kicker pinned to each processor the
// process may run on, a second share starts none, and the last drop ends
// them with their threads (P6).
func TestKicks(t *testing.T) {
	var cpus unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(unix.Getpid(), &cpus))
	if cpus.Count() < 2 {
		t.Skip("every thread is pinned on a single processor")
	}
	before := pinnedThreads(t)
	want := maps.Clone(before)
	for cpu := range len(cpus) * 64 {
		if cpus.IsSet(cpu) {
			want[cpu]++
		}
	}
	kick(true)
	kick(true)
	require.True(t, eventually(func() bool { return maps.Equal(pinnedThreads(t), want) }),
		"a kicker on each processor: want %v, have %v", want, pinnedThreads(t))
	kick(false)
	assert.Equal(t, want, pinnedThreads(t), "one share left")
	kick(false)
	settleKicks()
	assert.True(t, eventually(func() bool { return maps.Equal(pinnedThreads(t), before) }),
		"the kickers' threads end with the last share: want %v, have %v", before, pinnedThreads(t))
}

// BenchmarkKicks: what the kicks cost the threads they interrupt. One
// goroutine per processor hashes b.N blocks of 64 bytes, with GOMAXPROCS
// leaving Ps free as the runtime does, with the kicks off and on: the
// difference is what a kick on every processor every policy.KickEvery
// takes from code that computes.
func BenchmarkKicks(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			n := goruntime.NumCPU()
			defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(2*n + 4))
			if on {
				kick(true)
				defer settleKicks()
				defer kick(false)
			}
			var wg sync.WaitGroup
			b.ResetTimer()
			for range n {
				wg.Go(func() {
					var block [64]byte
					for range b.N {
						sum := sha256.Sum256(block[:])
						copy(block[:], sum[:])
					}
				})
			}
			wg.Wait()
		})
	}
}
