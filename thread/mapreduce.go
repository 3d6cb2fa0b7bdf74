package thread

// Map, Reduce and MapReduce are For over the elements of a slice: they run
// on the calling thread and split off the second half of what remains only
// when another worker wants work (see For), so there is no grain to choose,
// and they allocate nothing per element (Map allocates its result).

// Map returns the slice of f(c, x) for every x of in, in in's order,
// computed in parallel where workers are free, at c's priority.
//
// Like For, Map needs no grain and allocates nothing per element; the
// result is one allocation of len(in) elements (to fill a slice of your
// own, or to use the index, call For). An empty or nil in gives an empty
// slice and no error.
//
// A panic in f comes back as a *PanicError, and a done context of c as the
// context's error, both once every call under way has returned, as with
// For; the result is then nil. A nil f gives ErrNilFunction.
func Map[T, U any](c *Ctx, in []T, f func(c *Ctx, x T) U) ([]U, error) {
	if f == nil {
		return nil, ErrNilFunction
	}
	out := make([]U, len(in))
	if _, err := part(c, mapper[T, U]{in: in, out: out, f: f}, 0, len(in)); err != nil {
		return nil, err
	}
	return out, nil
}

// Reduce combines the elements of in in order, in parallel where workers
// are free: with in = [x0, x1, ..., xn], it returns
// combine(...combine(combine(identity, x0), x1)..., xn), computed as the
// combination of partial results of adjacent runs of in.
//
// combine must be associative and identity an identity of it
// (combine(identity, x) = combine(x, identity) = x): then the result is
// the sequential one at every number of workers, whether or not combine
// is commutative (string concatenation works). Floating-point addition is
// associative only nearly: sums may differ from run to run in the last
// bits. Each part of the slice starts from identity, so identity must not
// be a value that combine modifies (a map, a slice it appends to in
// place). A nil or empty in gives identity and no error.
//
// Like For, Reduce needs no grain and allocates nothing per element; a
// panic in combine comes back as a *PanicError, and a done context of c as
// the context's error, once every call under way has returned; the result
// is then the zero value. A nil combine gives ErrNilFunction.
func Reduce[T any](c *Ctx, in []T, identity T, combine func(a, b T) T) (T, error) {
	if combine == nil {
		var zero T
		return zero, ErrNilFunction
	}
	return reduced(part(c, reducer[T]{monoid[T]{identity, combine}, in}, 0, len(in)))
}

// MapReduce is Reduce(c, Map(c, in, f), identity, combine) without the
// intermediate slice: it returns the combination, in in's order, of
// f(c, x) for every x of in, with the same requirements on identity and
// combine as Reduce, and the same errors. A nil f or combine gives
// ErrNilFunction.
func MapReduce[T, A any](c *Ctx, in []T, f func(c *Ctx, x T) A, identity A, combine func(a, b A) A) (A, error) {
	if f == nil || combine == nil {
		var zero A
		return zero, ErrNilFunction
	}
	return reduced(part(c, mapReducer[T, A]{monoid[A]{identity, combine}, in, f}, 0, len(in)))
}

// reduced is the accumulator of a whole loop, or the zero value with its
// error.
func reduced[A any](acc A, err error) (A, error) {
	if err != nil {
		var zero A
		return zero, err
	}
	return acc, nil
}

// mapper is Map's loop: it stores f's results and has no accumulator.
type mapper[T, U any] struct {
	noAcc
	in  []T
	out []U
	f   func(*Ctx, T) U
}

func (m mapper[T, U]) run(c *Ctx, _ struct{}, lo, hi int) (struct{}, int) {
	for {
		m.out[lo] = m.f(c, m.in[lo])
		lo++
		if lo == hi || c.task.Attention() {
			return struct{}{}, lo
		}
	}
}

// monoid is the identity and combine function of a reduction.
type monoid[A any] struct {
	id A
	op func(a, b A) A
}

func (m monoid[A]) identity() A      { return m.id }
func (m monoid[A]) combine(a, b A) A { return m.op(a, b) }

// reducer is Reduce's loop.
type reducer[T any] struct {
	monoid[T]
	in []T
}

func (r reducer[T]) run(c *Ctx, acc T, lo, hi int) (T, int) {
	for {
		acc = r.op(acc, r.in[lo])
		lo++
		if lo == hi || c.task.Attention() {
			return acc, lo
		}
	}
}

// mapReducer is MapReduce's loop.
type mapReducer[T, A any] struct {
	monoid[A]
	in []T
	f  func(*Ctx, T) A
}

func (m mapReducer[T, A]) run(c *Ctx, acc A, lo, hi int) (A, int) {
	for {
		acc = m.op(acc, m.f(c, m.in[lo]))
		lo++
		if lo == hi || c.task.Attention() {
			return acc, lo
		}
	}
}
