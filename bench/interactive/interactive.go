// Package interactive holds the interactive kernels of the benchmark suite:
// a terminal echo (lines in, the same lines out, over any reader and writer)
// and a network echo (a listener that serves each connection in its own
// thread). Each comes as fairly threads, runnable at any priority, and as
// plain goroutines, for comparison.
//
// Reads are blocking calls, so the fairly versions make them through
// thread.Await: the worker runs other threads while a read waits, and the
// echo thread comes back, at its priority, as soon as a line arrives. Writes
// are made directly: the driver on the other end keeps reading, so a write
// of one line to a pipe or a socket does not block, and an Await there
// would only add a hand-off to every response.
package interactive

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fairlyprompt/fairly/thread"
)

// TermEcho copies r to w line by line inside thread c. It returns nil when
// r ends or either side is closed, and any other error of r or w.
func TermEcho(c *thread.Ctx, r io.Reader, w io.Writer) error {
	return echo(r, w, awaiter(c), nil)
}

// TermEchoGoroutine is TermEcho for an ordinary goroutine.
func TermEchoGoroutine(r io.Reader, w io.Writer) error {
	return echo(r, w, direct, nil)
}

// awaiter makes blocking calls of thread c without holding its worker.
func awaiter(c *thread.Ctx) func(func()) {
	return func(f func()) {
		thread.Await(c, func() struct{} { f(); return struct{}{} })
	}
}

// echo is the loop both versions share; wait makes the blocking read. If
// log is not nil, each line's timings go to it.
func echo(r io.Reader, w io.Writer, wait func(read func()), log *timings) error {
	br := bufio.NewReader(r)
	for {
		var line []byte
		var err error
		var read int64
		wait(func() {
			line, err = br.ReadBytes('\n')
			if log != nil {
				read = time.Now().UnixNano()
			}
		})
		if len(line) > 0 {
			var resumed int64
			if log != nil {
				resumed = time.Now().UnixNano()
			}
			if _, werr := w.Write(line); werr != nil {
				return quiet(werr)
			}
			if log != nil {
				log.add(Timing{Head: string(line[:min(len(line), timingHead)]), Read: read, Resumed: resumed, Written: time.Now().UnixNano()})
			}
		}
		if err != nil {
			return quiet(err)
		}
	}
}

func direct(f func()) { f() }

// quiet turns the errors that mean "the other side or Close ended it" into nil.
func quiet(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}

// Timing is what the network echo saw of one line, in wall-clock Unix ns,
// so that a client in another process can line it up with its own clock.
type Timing struct {
	// Head is the start of the line (at most 16 bytes), by which a client
	// tells its requests apart.
	Head string
	// Read is when the blocking read returned the line: in the fairly
	// version, inside Await, before the echo's thread is running again.
	Read int64
	// Resumed is when the echo's code went on with the line: for fairly,
	// when its thread ran again after the Await; for goroutines, Read.
	Resumed int64
	// Written is when the write of the echo returned.
	Written int64
}

// timingHead is how much of a line a Timing keeps.
const timingHead = 16

// timings collects the Timings of a server's connections. echoed and
// lastRead let a harness watch the echo without copying the list (and so
// without allocating) while it runs.
type timings struct {
	mu       sync.Mutex
	list     []Timing
	echoed   atomic.Int64 // len(list)
	lastRead atomic.Int64 // the largest Read in list
}

func (t *timings) add(x Timing) {
	t.mu.Lock()
	t.list = append(t.list, x)
	t.echoed.Store(int64(len(t.list)))
	if x.Read > t.lastRead.Load() {
		t.lastRead.Store(x.Read)
	}
	t.mu.Unlock()
}
