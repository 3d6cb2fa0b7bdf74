package thread

// Fork starts f as a new thread at the running thread c's priority, forked
// by c, and returns its handle: Spawn(c, c.Priority(), f), the common case
// of fork-join code. The fork is lazy (see Spawn): it stays on c's own
// stack until another worker wants work, and Join usually runs it inline.
func Fork[T any](c *Ctx, f func(*Ctx) T) *Handle[T] {
	// As Spawn, small enough to inline.
	h := spawnFork(c, f)
	return &h
}

// spawnFork is Fork's handle. Inlined into Fork, it would take Fork over
// the inlining budget.
//
//go:noinline
func spawnFork[T any](c *Ctx, f func(*Ctx) T) Handle[T] { return spawn(c, c.Priority(), f) }
