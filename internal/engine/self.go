package engine

// Which goroutine is calling.
//
// RunHere must refuse a caller that runs a thread already, and blocking
// calls such as Task.Wait must refuse thread code (InThread, Close). Go
// gives a goroutine no cheap identity: its id, read from runtime.Stack,
// cost more than the rest of a thread.Run's start on an idle runtime. But a
// goroutine of the runtime that runs thread code holds its OS thread locked
// (lock, from leave), and while it does, no other goroutine runs on that
// thread. So the runtime maps the key of every OS thread that one of its
// goroutines holds locked to that goroutine (locks), and a caller looks up
// the thread it runs on: on Linux its thread id, one system call and a map
// read; elsewhere the goroutine id, where the thread's is not at hand.
//
// Invariants I1 and I2 (PROTOCOLS.md): a running goroutine not in
// modeSched holds its OS thread locked, and locks[k] is g only while g
// holds thread k locked, with g.lockSeq odd exactly then. Invariant I3
// (PROTOCOLS.md) argues from them that a lookup (lockedSelf) is exact.
var locks lockTable // thread key → *gor (osthread_*.go)

// lockedSelf is the record of the calling goroutine if it holds its OS
// thread locked as the runtime's (a goroutine of the runtime after its
// first passage into thread code, or an ordinary goroutine running a thread
// in RunHere), else nil.
func lockedSelf() *gor {
	for {
		k, _ := threadKey()
		g := locks.load(k)
		if g == nil {
			return nil
		}
		s := g.lockSeq.Load()
		if s%2 == 1 {
			if again, _ := threadKey(); again == k && locks.load(k) == g && g.lockSeq.Load() == s {
				return g
			}
		}
	}
}

// register records that g now holds the OS thread of key k locked (I2).
func (g *gor) register(k int64) {
	g.lockKey = k
	g.lockSeq.Add(1)
	locks.store(k, g)
}

// forget takes g's entry out of locks before g lets go of its OS thread,
// or as g exits still locked to it (I2).
func (g *gor) forget() {
	locks.remove(g.lockKey, g)
	g.lockSeq.Add(1)
}
