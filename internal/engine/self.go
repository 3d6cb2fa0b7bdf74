package engine

// Which goroutine is calling.
//
// RunHere must refuse a caller that runs a thread already, and blocking
// calls such as Task.Wait must refuse thread code (InThread, Close). Go
// gives a goroutine no cheap identity: its id, read from runtime.Stack,
// cost 6–20 µs, most of the start of a thread.Run on an idle runtime. But a
// goroutine of the runtime that runs thread code holds its OS thread locked
// (lock, from leave), and while it does, no other goroutine runs on that
// thread. So the runtime maps the key of every OS thread that one of its
// goroutines holds locked to that goroutine (locks), and a caller looks up
// the thread it runs on: on Linux its thread id, one system call and a map
// read; elsewhere the goroutine id, where the thread's is not at hand.
//
// Invariants:
//
//   - I1. A running goroutine whose mode is not modeSched holds its OS
//     thread locked. leave locks before it stores a thread mode; a revoker
//     changes only a thread mode into another; and every unlock (park,
//     suspend, the end of RunHere, the goroutine's exit) comes after enter
//     has stored modeSched.
//   - I2. locks[k] is g only while g holds thread k locked, and g.lockSeq
//     is odd exactly then and changes at every lock and unlock: lock stores
//     the entry after LockOSThread and the odd count, unlock (or forget, at
//     a pinned goroutine's exit) removes it before the even count and
//     UnlockOSThread.
//
// Why a lookup (lockedSelf) is exact:
//
//   - It answers g only if, reading in this order, the caller's key was k,
//     locks[k] was g, g.lockSeq was s (odd), the caller's key was k again,
//     locks[k] was still g and g.lockSeq still s. By I2, g held one thread
//     locked all the time between the two reads of lockSeq, and that thread
//     is k, since locks[k] named g within that time; the caller ran on k
//     within that time too, so the caller is g.
//   - It answers nil only if locks had no entry for the thread the caller
//     had just run on. A goroutine holding its thread locked stays on it,
//     and its entry stays, as long as it runs this code; so the caller
//     holds no thread locked, and by I1 runs no thread's code.
//   - Any other outcome (the caller moved to another thread between the
//     reads, or g let go of k) looks again. A caller moves only when Go
//     reschedules it, so the loop ends.
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
