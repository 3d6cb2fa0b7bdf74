package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"

	"github.com/fairlyprompt/fairly/bench/kernels"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// server is an echo service and a background compute load on one kind of
// threads. Each start method returns a function that waits for what it
// started to end.
type server interface {
	// serveNet answers every connection ln accepts until ln is closed.
	serveNet(ln net.Listener) (wait func() error)
	// serveTerm echoes the lines of r to w until r ends.
	serveTerm(r io.Reader, w io.Writer) (wait func() error)
	// startLoad computes Fibonacci numbers over and over until stop is
	// closed; wait returns how many it finished.
	startLoad(n, cutoff int, stop <-chan struct{}) (wait func() (int, error))
}

// fairlyServer runs the echo threads at priority hi and the load at lo.
type fairlyServer struct {
	rt     *runtime.Runtime
	hi, lo fairness.Priority
}

func (s *fairlyServer) serveNet(ln net.Listener) func() error {
	type accepted struct {
		conn net.Conn
		err  error
	}
	h := thread.Go(s.rt, s.hi, func(c *thread.Ctx) error {
		for {
			// Accept blocks in the network poller; Await frees the worker meanwhile.
			a := thread.Await(c, func() accepted {
				conn, err := ln.Accept()
				return accepted{conn, err}
			})
			if errors.Is(a.err, net.ErrClosed) {
				return nil
			}
			if a.err != nil {
				return a.err
			}
			// A thread per connection; nobody joins it, it ends with the connection.
			thread.Spawn(c, s.hi, func(c *thread.Ctx) error {
				defer a.conn.Close()
				return echoThread(c, a.conn, a.conn)
			})
		}
	})
	return func() error { return waitErr(h) }
}

func (s *fairlyServer) serveTerm(r io.Reader, w io.Writer) func() error {
	h := thread.Go(s.rt, s.hi, func(c *thread.Ctx) error { return echoThread(c, r, w) })
	return func() error { return waitErr(h) }
}

func (s *fairlyServer) startLoad(n, cutoff int, stop <-chan struct{}) func() (int, error) {
	h := thread.Go(s.rt, s.lo, func(c *thread.Ctx) int {
		done := 0
		for !closed(stop) {
			kernels.FibCutoff(c, n, cutoff)
			done++
		}
		return done
	})
	return h.Wait
}

// waitErr waits for a thread that returns an error.
func waitErr(h *thread.Handle[error]) error {
	err, errT := h.Wait()
	if errT != nil {
		return errT
	}
	return err
}

// echoThread writes back every line it reads. Reads wait in Await, so a
// connection that is idle holds no worker. The write is direct: one short
// line fits in the kernel's buffer and does not block.
func echoThread(c *thread.Ctx, r io.Reader, w io.Writer) error {
	type read struct {
		line []byte
		err  error
	}
	br := bufio.NewReader(r)
	for {
		rd := thread.Await(c, func() read {
			line, err := br.ReadBytes('\n')
			return read{line, err}
		})
		if len(rd.line) > 0 {
			if _, err := w.Write(rd.line); err != nil {
				return err
			}
		}
		if rd.err != nil {
			return ignoreEOF(rd.err)
		}
	}
}

// goServer is the same service on plain goroutines, for comparison.
type goServer struct{}

func (goServer) serveNet(ln net.Listener) func() error {
	errc := make(chan error, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					err = nil
				}
				errc <- err
				return
			}
			go func() {
				defer conn.Close()
				_ = echoGoroutine(conn, conn) // a broken connection only ends itself
			}()
		}
	}()
	return func() error { return <-errc }
}

func (goServer) serveTerm(r io.Reader, w io.Writer) func() error {
	errc := make(chan error, 1)
	go func() { errc <- echoGoroutine(r, w) }()
	return func() error { return <-errc }
}

func (goServer) startLoad(n, cutoff int, stop <-chan struct{}) func() (int, error) {
	donec := make(chan int, 1)
	go func() {
		done := 0
		for !closed(stop) {
			kernels.FibCutoffGo(n, cutoff)
			done++
		}
		donec <- done
	}()
	return func() (int, error) { return <-donec, nil }
}

func echoGoroutine(r io.Reader, w io.Writer) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if _, errW := w.Write(line); errW != nil {
				return errW
			}
		}
		if err != nil {
			return ignoreEOF(err)
		}
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// ignoreEOF treats the end of the input, or of a closed pipe or connection,
// as a normal end.
func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}
