package interactive

import (
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Listen opens a TCP listener on a free loopback port.
func Listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// Server is a running network echo. Close stops it.
type Server struct {
	ln       net.Listener
	accepted atomic.Int64
	wait     func() // until every handler has returned

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}

	log timings
}

func newServer(ln net.Listener) *Server {
	return &Server{ln: ln, conns: make(map[net.Conn]struct{})}
}

// ServeNet starts a network echo on rt: a listener thread at priority p
// accepts connections on ln and spawns a thread at p for each one, which
// echoes its lines until the client hangs up. The server owns ln.
func ServeNet(rt *runtime.Runtime, p fairness.Priority, ln net.Listener) *Server {
	s := newServer(ln)
	h := thread.Go(rt, p, func(c *thread.Ctx) struct{} {
		var handlers []*thread.Handle[error]
		wait := awaiter(c)
		for {
			var conn net.Conn
			var err error
			wait(func() { conn, err = s.accept() })
			if err != nil {
				break
			}
			handlers = append(handlers, thread.Spawn(c, c.Priority(), func(c *thread.Ctx) error {
				defer s.drop(conn)
				return echo(conn, conn, awaiter(c), &s.log)
			}))
		}
		for _, h := range handlers {
			_, _ = thread.Join(c, h) // a connection's error ends only that connection
		}
		return struct{}{}
	})
	s.wait = func() { _, _ = h.Wait() }
	return s
}

// ServeNetGoroutines is ServeNet with a goroutine per connection, as a Go
// program without fairly would write it.
func ServeNetGoroutines(ln net.Listener) *Server {
	s := newServer(ln)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := s.accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer s.drop(conn)
				_ = echo(conn, conn, direct, &s.log) // a connection's error ends only that connection
			})
		}
	})
	s.wait = wg.Wait
	return s
}

// accept waits for the next connection and registers it, failing once the
// server is closed.
func (s *Server) accept() (net.Conn, error) {
	conn, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		conn.Close()
		return nil, net.ErrClosed
	}
	s.conns[conn] = struct{}{}
	s.accepted.Add(1)
	return conn, nil
}

func (s *Server) drop(conn net.Conn) {
	conn.Close()
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()
}

// Addr is the address clients connect to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Timings returns what the server saw of every line echoed so far, in the
// order the writes returned.
func (s *Server) Timings() []Timing {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return slices.Clone(s.log.list)
}

// Echoed counts the lines echoed so far, as Timings would, without
// copying them.
func (s *Server) Echoed() int64 { return s.log.echoed.Load() }

// LastRead is the latest Timing.Read of the lines echoed so far (wall-clock
// Unix ns), 0 before the first. A connection's lines are read and echoed in
// order, so once LastRead is at or after t, every line of that connection
// read before t has been echoed.
func (s *Server) LastRead() int64 { return s.log.lastRead.Load() }

// Accepted counts the connections accepted so far.
func (s *Server) Accepted() int64 { return s.accepted.Load() }

// Close stops accepting, hangs up every connection and waits until every
// thread or goroutine of the server has returned. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	err := s.ln.Close()
	for conn := range s.conns {
		conn.Close()
	}
	s.mu.Unlock()
	s.wait()
	if !first {
		return nil
	}
	return err
}
