package thread_test

// Adversarial tests: races between Close, Go, SetCriterion, joins, Await and
// Sleep, the watchdog and deep recursion. None of them asserts a duration;
// each checks results, exactly-once execution or errors. Assertions that can
// stop the goroutine (require.*) are only made outside threads: a Goexit in a
// thread would take its worker with it.

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// TestAdvCloseRacesGo: many goroutines submit threads while Close runs. Every
// handle either finishes with the right value (and its body ran exactly once)
// or reports ErrClosed (and its body never ran); nothing hangs.
func TestAdvCloseRacesGo(t *testing.T) {
	for iter := range 20 {
		_, ps, c := three(t, 1, 1, 1)
		rt, err := runtime.New(runtime.Config{Procs: 1 + iter%3, Criterion: c})
		require.NoError(t, err)
		var ran, ok, closed atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; ; i++ {
					p := ps[(g+i)%3]
					h := thread.Go(rt, p, func(c *thread.Ctx) int {
						ran.Add(1)
						if i%5 == 0 {
							thread.Sleep(c, 20*time.Microsecond)
						}
						if i%7 == 0 {
							return thread.Await(c, func() int { return seqFib(8) })
						}
						return fib(c, 8)
					})
					v, err := h.Wait()
					if err != nil {
						if !errors.Is(err, runtime.ErrClosed) {
							t.Errorf("unexpected error %v", err)
						}
						closed.Add(1)
						return
					}
					if v != 21 {
						t.Errorf("got %d want 21", v)
					}
					ok.Add(1)
				}
			}()
		}
		close(start)
		time.Sleep(time.Duration(iter%4) * time.Millisecond)
		// Several closers at once: all must return, once everything ran.
		var cw sync.WaitGroup
		for range 3 {
			cw.Add(1)
			go func() { defer cw.Done(); assert.NoError(t, rt.Close()) }()
		}
		cw.Wait()
		wg.Wait()
		assert.Equal(t, int64(8), closed.Load(), "every submitter sees ErrClosed once")
		assert.Equal(t, ok.Load(), ran.Load(), "bodies run == successful handles")
		assert.ErrorIs(t, rt.SetCriterion(c), runtime.ErrClosed)
	}
}

// TestAdvSetCriterionStorm re-weights the runtime continually, including
// criteria giving running priorities a share of 0, while fork-join work runs
// at every priority; every result must be right.
func TestAdvSetCriterionStorm(t *testing.T) {
	o, ps, c := three(t, 1, 1, 1)
	var crits []*fairness.Criterion
	for _, w := range [][3]float64{{1, 0, 0}, {0, 0, 1}, {0, 1, 0}, {50, 25, 25}, {1, 1, 0}, {0, 1, 1}} {
		cr, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ps[0]: w[0], ps[1]: w[1], ps[2]: w[2]})
		require.NoError(t, err)
		crits = append(crits, cr)
	}
	topOnly, err := fairness.NewCriterion(o, map[fairness.Priority]float64{o.Top(): 1})
	require.NoError(t, err)
	crits = append(crits, topOnly)
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			rt, err := runtime.New(runtime.Config{Procs: procs, Criterion: c, RoundQuantum: 200 * time.Microsecond})
			require.NoError(t, err)
			defer func() { require.NoError(t, rt.Close()) }()
			stop := make(chan struct{})
			var sw sync.WaitGroup
			sw.Add(1)
			go func() {
				defer sw.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					assert.NoError(t, rt.SetCriterion(crits[i%len(crits)]))
					goruntime.Gosched()
				}
			}()
			all := []fairness.Priority{ps[0], ps[1], ps[2], o.Top(), o.Bottom()}
			var hs []*thread.Handle[int]
			for i := range 15 {
				p := all[i%len(all)]
				hs = append(hs, thread.Go(rt, p, func(c *thread.Ctx) int {
					s := 0
					for range 3 {
						s += fib(c, 14)
						thread.Yield(c)
					}
					return s
				}))
			}
			for _, h := range hs {
				v, err := h.Wait()
				require.NoError(t, err)
				assert.Equal(t, 3*seqFib(14), v)
			}
			close(stop)
			sw.Wait()
		})
	}
}

// TestAdvManyJoinersSameHandle: one handle, spawned by a thread, is joined by
// many threads (siblings, threads of other roots, and priorities below it)
// and waited for by ordinary goroutines. It runs once; everybody sees its value.
func TestAdvManyJoinersSameHandle(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			_, ps, c := three(t, 1, 1, 1)
			rt := newRT(t, procs, c)
			for iter := range 10 {
				var runs atomic.Int32
				shared := make(chan *thread.Handle[int], 1)
				// The owner (lowest priority, so it may join everything)
				// spawns the shared handle at the highest of the three and
				// publishes it before doing anything else.
				owner := thread.Go(rt, ps[2], func(c *thread.Ctx) int {
					h := thread.Spawn(c, ps[0], func(c *thread.Ctx) int {
						runs.Add(1)
						if iter%2 == 0 {
							thread.Sleep(c, 50*time.Microsecond)
						}
						return fib(c, 15)
					})
					shared <- h
					kids := make([]*thread.Handle[int], 8)
					for i := range kids {
						p := ps[i%3]
						kids[i] = thread.Spawn(c, p, func(c *thread.Ctx) int {
							v, err := thread.Join(c, h)
							if err != nil {
								return -1
							}
							return v
						})
					}
					s := 0
					for _, k := range kids {
						v, err := thread.Join(c, k)
						if err != nil {
							return -1
						}
						s += v
					}
					v, err := thread.Join(c, h)
					if err != nil {
						return -1
					}
					return s + v
				})
				h := <-shared
				var others []*thread.Handle[int]
				for i := range 6 {
					others = append(others, thread.Go(rt, ps[i%3], func(c *thread.Ctx) int {
						v, err := thread.Join(c, h)
						if err != nil {
							return -1
						}
						return v
					}))
				}
				var wg sync.WaitGroup
				for range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						v, err := h.Wait()
						assert.NoError(t, err)
						assert.Equal(t, 610, v)
					}()
				}
				v, err := owner.Wait()
				require.NoError(t, err)
				assert.Equal(t, 9*610, v)
				for _, o := range others {
					v, err := o.Wait()
					require.NoError(t, err)
					assert.Equal(t, 610, v)
				}
				wg.Wait()
				assert.Equal(t, int32(1), runs.Load(), "the shared thread ran once")
			}
		})
	}
}

// TestAdvJoinInversionAcrossThreads: a handle of a low priority, spawned by
// one thread and joined by a higher-priority thread elsewhere, is refused.
func TestAdvJoinInversionAcrossThreads(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 2, c)
	ch := make(chan *thread.Handle[int], 1)
	refused := make(chan struct{})
	low := thread.Go(rt, ps[2], func(c *thread.Ctx) int {
		h := thread.Spawn(c, ps[2], func(c *thread.Ctx) int { return fib(c, 10) })
		ch <- h
		// Joined only after the refused join: else the handle may be spent
		// by then, and that join fails with ErrSpent instead.
		thread.Await(c, func() struct{} { <-refused; return struct{}{} })
		v, err := thread.Join(c, h)
		if err != nil {
			return -1
		}
		return v
	})
	h := <-ch
	res, err := thread.Run(rt, ps[0], func(c *thread.Ctx) error {
		_, err := thread.Join(c, h)
		return err
	})
	close(refused)
	require.NoError(t, err)
	assert.ErrorIs(t, res, thread.ErrIncompatiblePriorities)
	v, err := low.Wait()
	require.NoError(t, err)
	assert.Equal(t, 55, v)
}

// TestAdvAwaitSleepStorm mixes fine-grained fork-join with Await and Sleep
// at most leaves, at P=1 and P=4, on three priorities, and checks that every
// leaf ran exactly once.
func TestAdvAwaitSleepStorm(t *testing.T) {
	for _, procs := range []int{1, 4} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			_, ps, c := three(t, 50, 25, 25)
			rt := newRT(t, procs, c)
			const n = 4096
			ran := make([]atomic.Int32, n)
			pipe := make(chan int) // unbuffered: sender and receiver both Await
			var tree func(c *thread.Ctx, lo, hi int) int
			tree = func(c *thread.Ctx, lo, hi int) int {
				if hi-lo == 1 {
					ran[lo].Add(1)
					switch lo % 4 {
					case 0:
						return thread.Await(c, func() int { return 1 })
					case 1:
						thread.Sleep(c, time.Duration(lo%50)*time.Microsecond)
					case 2:
						if lo%8 == 2 {
							thread.Await(c, func() struct{} { pipe <- 1; return struct{}{} })
						} else {
							return thread.Await(c, func() int { return <-pipe })
						}
					}
					return 1
				}
				mid := (lo + hi) / 2
				p := c.Priority()
				if lo%3 == 0 {
					p = ps[0]
				}
				h := thread.Spawn(c, p, func(c *thread.Ctx) int { return tree(c, mid, hi) })
				a := tree(c, lo, mid)
				b, err := thread.Join(c, h)
				if err != nil {
					panic(err)
				}
				return a + b
			}
			var hs []*thread.Handle[int]
			parts := 4
			for i := range parts {
				lo, hi := i*n/parts, (i+1)*n/parts
				hs = append(hs, thread.Go(rt, ps[i%3], func(c *thread.Ctx) int { return tree(c, lo, hi) }))
			}
			total := 0
			for _, h := range hs {
				v, err := h.Wait()
				require.NoError(t, err)
				total += v
			}
			assert.Equal(t, n, total)
			for i := range ran {
				if ran[i].Load() != 1 {
					t.Fatalf("leaf %d ran %d times", i, ran[i].Load())
				}
			}
		})
	}
}

// TestAdvFireAndForgetThenClose: threads spawn children (some at a higher
// priority, some nested) that nobody joins, and return. Close must not
// return before every one of them ran, and none may run twice.
func TestAdvFireAndForgetThenClose(t *testing.T) {
	iters := 60
	if testing.Short() {
		iters = 15
	}
	for iter := range iters {
		_, ps, c := three(t, 1, 1, 1)
		procs := 1 + iter%4
		rt, err := runtime.New(runtime.Config{Procs: procs, Criterion: c, DealInterval: 10 * time.Microsecond})
		require.NoError(t, err)
		var ran atomic.Int64
		var spawnTree func(c *thread.Ctx, d int)
		spawnTree = func(c *thread.Ctx, d int) {
			ran.Add(1)
			if d == 0 {
				return
			}
			for i := range 3 {
				p := ps[(d+i)%3]
				thread.Spawn(c, p, func(c *thread.Ctx) int {
					if i == 1 && d%2 == 0 {
						thread.Sleep(c, 10*time.Microsecond)
					}
					spawnTree(c, d-1)
					return 0
				})
			}
		}
		const roots, depth = 4, 5 // each root: (3^6-1)/2 = 364 bodies
		for i := range roots {
			_, err := thread.Go(rt, ps[2-i%3], func(c *thread.Ctx) int { spawnTree(c, depth); return 0 }).Wait()
			if i == roots-1 {
				require.NoError(t, err)
			}
		}
		require.NoError(t, rt.Close())
		per := int64(1)
		for d, x := 0, int64(1); d < depth; d++ {
			x *= 3
			per += x
		}
		require.Equal(t, roots*per, ran.Load(), "iteration %d (P=%d): threads lost or run twice at Close", iter, procs)
	}
}

// TestAdvPanics: panics in Await-ed functions, in inline-joined children, in
// children running elsewhere and in grandchildren all come back as
// *PanicError from the right Join, and the runtime goes on.
func TestAdvPanics(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			_, ps, c := three(t, 1, 1, 1)
			rt := newRT(t, procs, c)
			sentinel := errors.New("sentinel")
			res, err := thread.Run(rt, ps[2], func(c *thread.Ctx) string {
				// 1. Panic in an Await-ed function inside an inline-joined child.
				h1 := thread.Spawn(c, ps[1], func(c *thread.Ctx) int {
					return thread.Await(c, func() int { panic(sentinel) })
				})
				_, err := thread.Join(c, h1)
				var pe *thread.PanicError
				if !errors.As(err, &pe) || !errors.Is(err, sentinel) {
					return fmt.Sprintf("1: %v", err)
				}
				// 2. A child that panics after its own children ran and one panicked.
				h2 := thread.Spawn(c, ps[0], func(c *thread.Ctx) int {
					g := thread.Spawn(c, ps[0], func(c *thread.Ctx) int { panic("grandchild") })
					s := fib(c, 10)
					if _, err := thread.Join(c, g); err == nil {
						return -1
					}
					panic(fmt.Sprint("child ", s))
				})
				_, err = thread.Join(c, h2)
				if !errors.As(err, &pe) || pe.Value != "child 55" {
					return fmt.Sprintf("2: %v", err)
				}
				// 3. Many panicking children joined in reverse order, some after
				// an Await so they may run on another worker.
				var hs []*thread.Handle[int]
				for i := range 32 {
					hs = append(hs, thread.Spawn(c, ps[i%3], func(c *thread.Ctx) int {
						if i%2 == 0 {
							thread.Await(c, func() int { return 0 })
						}
						if i%3 == 0 {
							panic(i)
						}
						return i
					}))
				}
				for i := len(hs) - 1; i >= 0; i-- {
					if ps[i%3] != ps[2] && !c.Priority().Order().LessEq(c.Priority(), ps[i%3]) {
						continue
					}
					v, err := thread.Join(c, hs[i])
					switch {
					case i%3 == 0:
						if !errors.As(err, &pe) || pe.Value != i {
							return fmt.Sprintf("3: child %d gave %v, %v", i, v, err)
						}
					case err != nil || v != i:
						return fmt.Sprintf("3: child %d gave %v, %v", i, v, err)
					}
				}
				// 4. A panic in the thread itself after an Await resumed it.
				thread.Await(c, func() int { return 0 })
				return "ok"
			})
			require.NoError(t, err)
			assert.Equal(t, "ok", res)
			_, err = thread.Run(rt, ps[0], func(c *thread.Ctx) int {
				thread.Sleep(c, time.Microsecond)
				panic(sentinel)
			})
			assert.ErrorIs(t, err, sentinel)
			v, err := thread.Run(rt, ps[1], func(c *thread.Ctx) int { return fib(c, 16) })
			require.NoError(t, err)
			assert.Equal(t, seqFib(16), v)
		})
	}
}

// TestAdvDeepRecursion: spawn chains far deeper than 10000, with a sibling
// left in the bank at every level so banks hold threads of every depth and
// deals split them; the result must be exact.
func TestAdvDeepRecursion(t *testing.T) {
	const depth = 20000
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			_, ps, c := three(t, 1, 1, 1)
			rt := newRT(t, procs, c)
			var chain func(c *thread.Ctx, d int) int
			chain = func(c *thread.Ctx, d int) int {
				if d == 0 {
					return 0
				}
				sib := thread.Spawn(c, c.Priority(), func(*thread.Ctx) int { return 1 })
				h := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) int { return chain(c, d-1) })
				a, err := thread.Join(c, h)
				if err != nil {
					panic(err)
				}
				b, err := thread.Join(c, sib)
				if err != nil {
					panic(err)
				}
				return a + b
			}
			v, err := thread.Run(rt, ps[2], func(c *thread.Ctx) int { return chain(c, depth) })
			require.NoError(t, err)
			assert.Equal(t, depth, v)
			// The other way round: all siblings are spawned first, going
			// ever deeper, and joined on the way back.
			var down func(c *thread.Ctx, d int) int
			down = func(c *thread.Ctx, d int) int {
				if d == 0 {
					return 0
				}
				h := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) int { return 1 })
				r := down(c, d-1)
				// A child spawned by the parent of h's spawner is deeper in
				// the bank than h: exercise joins that are not the youngest.
				v, err := thread.Join(c, h)
				if err != nil {
					panic(err)
				}
				return r + v
			}
			v, err = thread.Run(rt, ps[0], func(c *thread.Ctx) int {
				h := thread.Spawn(c, c.Priority(), func(c *thread.Ctx) int { return down(c, depth) })
				v, err := thread.Join(c, h)
				if err != nil {
					panic(err)
				}
				return v
			})
			require.NoError(t, err)
			assert.Equal(t, depth, v)
		})
	}
}

// TestAdvWatchdogWithAwait: on one worker, a thread spins without any
// preemption point until other threads, which first Await and Sleep, set a
// flag. They must run on rescue workers; fork-join work submitted meanwhile
// completes too.
func TestAdvWatchdogWithAwait(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 1, c)
	var released atomic.Int32
	spinning := make(chan struct{})
	spinner := thread.Go(rt, ps[2], func(c *thread.Ctx) bool {
		close(spinning)
		deadline := time.Now().Add(20 * time.Second)
		for released.Load() < 3 {
			if time.Now().After(deadline) {
				return false
			}
		}
		return true
	})
	<-spinning
	var hs []*thread.Handle[int]
	for i := range 3 {
		hs = append(hs, thread.Go(rt, ps[i%2], func(c *thread.Ctx) int {
			v := thread.Await(c, func() int { time.Sleep(time.Millisecond); return 1 })
			thread.Sleep(c, 100*time.Microsecond)
			v += fib(c, 12)
			released.Add(1)
			return v
		}))
	}
	for _, h := range hs {
		v, err := h.Wait()
		require.NoError(t, err)
		assert.Equal(t, 1+seqFib(12), v)
	}
	ok, err := spinner.Wait()
	require.NoError(t, err)
	assert.True(t, ok, "the awaiting threads never ran while the worker was stalled")
}

// TestAdvZeroShareFinishesByDonation: threads at a priority whose share is
// set to 0 while they run, and threads at Top and Bottom (share 0 in three's
// criterion), must still finish.
func TestAdvZeroShareFinishesByDonation(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			o, ps, c := three(t, 1, 1, 1)
			rt := newRT(t, procs, c)
			hiOnly, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ps[0]: 1})
			require.NoError(t, err)
			started := make(chan struct{})
			var once sync.Once
			var hs []*thread.Handle[int]
			for _, p := range []fairness.Priority{ps[2], ps[1], o.Bottom(), o.Top()} {
				hs = append(hs, thread.Go(rt, p, func(c *thread.Ctx) int {
					once.Do(func() { close(started) })
					s := 0
					for range 4 {
						s += fib(c, 15)
						thread.Sleep(c, 10*time.Microsecond)
					}
					return s
				}))
			}
			<-started
			require.NoError(t, rt.SetCriterion(hiOnly))
			// Meanwhile the only priority with a share has bursts of work.
			for range 5 {
				v, err := thread.Run(rt, ps[0], func(c *thread.Ctx) int { return fib(c, 13) })
				require.NoError(t, err)
				assert.Equal(t, seqFib(13), v)
			}
			for _, h := range hs {
				v, err := h.Wait()
				require.NoError(t, err)
				assert.Equal(t, 4*seqFib(15), v)
			}
		})
	}
}

// TestAdvProcsAboveGOMAXPROCS: more workers than GOMAXPROCS (and cores),
// with fork-join, Await and Sleep; and GOMAXPROCS is restored at Close.
func TestAdvProcsAboveGOMAXPROCS(t *testing.T) {
	before := goruntime.GOMAXPROCS(0)
	_, ps, c := three(t, 1, 1, 1)
	procs := 4*before + 1
	rt, err := runtime.New(runtime.Config{Procs: procs, Criterion: c})
	require.NoError(t, err)
	assert.Equal(t, procs, rt.Procs())
	var hs []*thread.Handle[int]
	for i := range 2 * procs {
		hs = append(hs, thread.Go(rt, ps[i%3], func(c *thread.Ctx) int {
			v := fib(c, 14)
			v += thread.Await(c, func() int { return 1 })
			thread.Sleep(c, time.Duration(i)*time.Microsecond)
			return v
		}))
	}
	for _, h := range hs {
		v, err := h.Wait()
		require.NoError(t, err)
		assert.Equal(t, seqFib(14)+1, v)
	}
	require.NoError(t, rt.Close())
	assert.Equal(t, before, goruntime.GOMAXPROCS(0))
}

// TestAdvRuntimesOverlap: GOMAXPROCS is shared by every runtime; closing
// them in another order than they were opened must restore it.
func TestAdvRuntimesOverlap(t *testing.T) {
	before := goruntime.GOMAXPROCS(0)
	a, err := runtime.New(runtime.Config{Procs: 1})
	require.NoError(t, err)
	b, err := runtime.New(runtime.Config{Procs: 6})
	require.NoError(t, err)
	v, err := thread.Run(b, b.Order().Top(), func(c *thread.Ctx) int { return fib(c, 12) })
	require.NoError(t, err)
	assert.Equal(t, seqFib(12), v)
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	assert.Equal(t, before, goruntime.GOMAXPROCS(0))
}

// TestAdvJoinForeignAndClosedHandles: a handle that failed with ErrClosed,
// joined from a thread of another runtime, and a handle of another runtime.
func TestAdvJoinForeignAndClosedHandles(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	closed, err := runtime.New(runtime.Config{Procs: 1, Criterion: c})
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	dead := thread.Go(closed, ps[0], func(*thread.Ctx) int { return 1 })
	_, err = dead.Wait()
	require.ErrorIs(t, err, runtime.ErrClosed)
	rt := newRT(t, 1, c)
	res, err := thread.Run(rt, ps[2], func(c *thread.Ctx) error {
		_, err := thread.Join(c, dead)
		return err
	})
	require.NoError(t, err)
	assert.Error(t, res, "joining a failed handle of another runtime must fail")
}

// TestAdvProcsZeroIsStable: Procs 0 means GOMAXPROCS, the program's own
// setting. A second runtime must not count the extra P that the first one
// added for wake-ups: two runtimes made the same way get the same workers.
func TestAdvProcsZeroIsStable(t *testing.T) {
	before := goruntime.GOMAXPROCS(0)
	a, err := runtime.New(runtime.Config{})
	require.NoError(t, err)
	b, err := runtime.New(runtime.Config{})
	require.NoError(t, err)
	pa, pb := a.Procs(), b.Procs()
	require.NoError(t, b.Close())
	require.NoError(t, a.Close())
	assert.Equal(t, before, pa)
	assert.Equal(t, pa, pb, "Procs 0 of the second runtime counted the first runtime's extra P")
	assert.Equal(t, before, goruntime.GOMAXPROCS(0))
}

// TestAdvRunInsideAwait: an Await-ed function holds no processor, so it may
// start and wait for threads of the same runtime, even at P=1.
func TestAdvRunInsideAwait(t *testing.T) {
	_, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 1, c)
	v, err := thread.Run(rt, ps[2], func(c *thread.Ctx) int {
		h := thread.Spawn(c, ps[2], func(c *thread.Ctx) int { return fib(c, 12) })
		inner := thread.Await(c, func() int {
			v, err := thread.Run(rt, ps[0], func(c *thread.Ctx) int { return fib(c, 13) })
			if err != nil {
				return -1
			}
			return v
		})
		a, err := thread.Join(c, h)
		if err != nil {
			return -1
		}
		return a + inner
	})
	require.NoError(t, err)
	assert.Equal(t, seqFib(12)+seqFib(13), v)
}

// TestAdvRecoverAwaitPanic: a thread recovers a panic that came out of
// Await and goes on spawning, joining, awaiting and sleeping; the runtime's
// bookkeeping (processor hand-off, suspended count) must survive it.
func TestAdvRecoverAwaitPanic(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("P=%d", procs), func(t *testing.T) {
			_, ps, c := three(t, 1, 1, 1)
			rt := newRT(t, procs, c)
			v, err := thread.Run(rt, ps[1], func(c *thread.Ctx) int {
				total := 0
				for i := range 50 {
					func() {
						defer func() {
							if r := recover(); r != nil {
								total++
							}
						}()
						thread.Await(c, func() int {
							if i%2 == 0 {
								panic(i)
							}
							return 0
						})
					}()
					total += fib(c, 8)
					thread.Sleep(c, time.Microsecond)
				}
				return total
			})
			require.NoError(t, err)
			assert.Equal(t, 25+50*seqFib(8), v)
		})
	}
}

// TestAdvLateAndZeroPriorities: a priority created after the runtime froze
// the order, and the zero Priority, are refused from Go and from Spawn
// without disturbing the worker.
func TestAdvLateAndZeroPriorities(t *testing.T) {
	o, ps, c := three(t, 1, 1, 1)
	rt := newRT(t, 1, c)
	late := o.New("late")
	for _, p := range []fairness.Priority{late, {}} {
		_, err := thread.Run(rt, p, func(*thread.Ctx) int { return 1 })
		assert.ErrorIs(t, err, fairness.ErrForeignPriority)
		res, err := thread.Run(rt, ps[2], func(c *thread.Ctx) error {
			_, err := thread.Join(c, thread.Spawn(c, p, func(*thread.Ctx) int { return 1 }))
			return err
		})
		require.NoError(t, err)
		assert.ErrorIs(t, res, fairness.ErrForeignPriority)
	}
	v, err := thread.Run(rt, ps[1], func(c *thread.Ctx) int { return fib(c, 12) })
	require.NoError(t, err)
	assert.Equal(t, seqFib(12), v)
}
