// Package mailbox provides the lock-free cells through which workers ask each other for work
// and deliver it: a Mailbox per (worker, priority) and a RequestCell per worker.
//
// # Mailbox protocol
//
// A mailbox has one receiver (the worker that owns it) and any number of senders (the other
// workers). Its state moves through four values:
//
//	Closed  --Open (receiver)-------> Open      the receiver is out of work and asks for some
//	Open    --Close (receiver)------> Closed    the receiver found work elsewhere
//	Open    --TryClaim (sender, CAS)> Claimed   one sender has promised to deliver
//	Claimed --Send (that sender)----> Full      the items are stored
//	Full    --Receive/Close (recv.)-> Closed    the receiver takes the items
//
// Invariants:
//   - Only the receiver moves the state out of Closed, and only the receiver leaves Full.
//   - Only a sender leaves Open for Claimed, by compare-and-swap, so among concurrent claimers
//     exactly one wins; only the winner may call Send, and it is the only way out of Claimed.
//   - The items are written before the state becomes Full and read only after the receiver has
//     seen Full, so the atomic state orders every access to them; they are nil in every state
//     but Full.
//   - Claimed lasts only while the winner stores the items, so a receiver that closes a
//     claimed mailbox spins briefly until it is Full, then takes what was sent: no delivery
//     is ever lost.
//
// # Request cells
//
// A RequestCell holds at most one pending request (the asking worker's id and the rank of the
// priority it wants work for), packed into one atomic word so that posting and taking are
// single atomic operations.
package mailbox

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

// State is the state of a Mailbox.
type State int32

// The states of a Mailbox; see the package documentation for the transitions.
const (
	Closed  State = iota // refuses work; the zero value
	Open                 // asks for work
	Claimed              // a sender is delivering
	Full                 // holds delivered items
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case Claimed:
		return "claimed"
	case Full:
		return "full"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Mailbox is a lock-free one-shot delivery slot from any sender to its single receiver.
// The zero value is Closed.
type Mailbox[T any] struct {
	state atomic.Int32
	items []T // guarded by state: written in Claimed, read in Full
}

// State returns the current state. It may be stale as soon as it returns.
func (m *Mailbox[T]) State() State { return State(m.state.Load()) }

// Open is called by the receiver to ask for work. It moves a Closed mailbox to Open and reports
// whether the mailbox is Open now; false means work is already on its way or waiting (Claimed
// or Full), and the receiver should Receive.
func (m *Mailbox[T]) Open() bool {
	if m.state.CompareAndSwap(int32(Closed), int32(Open)) {
		return true
	}
	return m.State() == Open
}

// TryClaim is called by a sender to reserve an Open mailbox. Among concurrent callers at most
// one succeeds; the winner must then call Send.
func (m *Mailbox[T]) TryClaim() bool {
	return m.state.CompareAndSwap(int32(Open), int32(Claimed))
}

// Send is called by the sender whose TryClaim succeeded: it stores items, taking ownership of
// the slice, and marks the mailbox Full. It panics if the mailbox is not Claimed, which is a
// programming error.
func (m *Mailbox[T]) Send(items []T) {
	if s := m.State(); s != Claimed {
		panic(fmt.Sprintf("mailbox: Send on a %v mailbox; Send requires a successful TryClaim", s))
	}
	m.items = items
	m.state.Store(int32(Full))
}

// Receive is called by the receiver. If the mailbox is Full it takes the items, closes the
// mailbox and returns them with true; otherwise it returns nil, false at once.
func (m *Mailbox[T]) Receive() ([]T, bool) {
	if m.State() != Full {
		return nil, false
	}
	return m.take(), true
}

// take empties a Full mailbox and closes it.
func (m *Mailbox[T]) take() []T {
	items := m.items
	m.items = nil
	m.state.Store(int32(Closed))
	return items
}

// Close is called by the receiver to refuse further work. It returns whatever was delivered
// or is being delivered: if a sender has claimed the mailbox, Close waits, yielding the
// processor, until that sender's Send completes. It returns nil if nothing was delivered.
func (m *Mailbox[T]) Close() []T {
	for {
		switch m.State() {
		case Closed:
			return nil
		case Open:
			if m.state.CompareAndSwap(int32(Open), int32(Closed)) {
				return nil
			}
			// A sender claimed it meanwhile: look again.
		case Claimed:
			runtime.Gosched() // the sender is between TryClaim and the end of Send
		case Full:
			return m.take()
		}
	}
}

// RequestCell holds at most one request for work: the id of the asking worker and the rank of
// the priority it asks for. The zero value is empty. Its methods are safe for concurrent use.
type RequestCell struct {
	// 0 when empty, else (worker+1)<<32 | rank.
	v atomic.Uint64
}

// Post stores a request if the cell is empty and reports whether it did; false means another
// request is already pending. worker and rank must lie in [0, 2^32-1) and [0, 2^32); Post panics
// otherwise.
func (r *RequestCell) Post(worker, rank int) bool {
	if worker < 0 || uint64(worker) >= 1<<32-1 || rank < 0 || uint64(rank) >= 1<<32 {
		panic(fmt.Sprintf("mailbox: request (worker %d, rank %d) out of range", worker, rank))
	}
	return r.v.CompareAndSwap(0, uint64(worker+1)<<32|uint64(rank))
}

// Take empties the cell and returns the request it held, with ok false if it was empty.
func (r *RequestCell) Take() (worker, rank int, ok bool) {
	v := r.v.Swap(0)
	if v == 0 {
		return 0, 0, false
	}
	return int(v>>32) - 1, int(uint32(v)), true
}

// Pending reports whether a request is waiting. It may be stale as soon as it returns.
func (r *RequestCell) Pending() bool { return r.v.Load() != 0 }
