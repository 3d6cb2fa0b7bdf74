package thread

// Fork starts f as a new thread at the running thread c's priority, forked
// by c, and returns its handle: Spawn(c, c.Priority(), f), the common case
// of fork-join code. The fork is lazy (see Spawn): it stays on c's own
// stack until another worker wants work, and Join usually runs it inline.
func Fork[T any](c *Ctx, f func(*Ctx) T) *Handle[T] {
	return Spawn(c, c.Priority(), f)
}
