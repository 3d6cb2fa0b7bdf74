package interactive

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// Generous bounds for Eventually: the machine is shared and noisy.
const (
	timeout   = 10 * time.Second
	pollEvery = 5 * time.Millisecond
)

// newRuntime gives a two-priority runtime and its high priority.
func newRuntime(t testing.TB) (*runtime.Runtime, fairness.Priority) {
	t.Helper()
	o := fairness.NewOrder()
	hi, lo := o.New("echo"), o.New("other")
	require.NoError(t, o.Less(lo, hi))
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{hi: 50, lo: 50})
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: crit})
	require.NoError(t, err)
	return rt, hi
}

func TestTermEcho(t *testing.T) {
	defer goleak.VerifyNone(t)
	const input = "hello\nworld\n\nno newline at the end"
	t.Run("fairly", func(t *testing.T) {
		rt, hi := newRuntime(t)
		var out strings.Builder
		err, werr := thread.Run(rt, hi, func(c *thread.Ctx) error { return TermEcho(c, strings.NewReader(input), &out) })
		require.NoError(t, werr)
		require.NoError(t, err)
		assert.Equal(t, input, out.String())
		require.NoError(t, rt.Close())
	})
	t.Run("goroutine", func(t *testing.T) {
		var out strings.Builder
		require.NoError(t, TermEchoGoroutine(strings.NewReader(input), &out))
		assert.Equal(t, input, out.String())
	})
}

// TestTermEchoPipe drives the echo line by line, the way the driver does
// over a process's standard input and output.
func TestTermEchoPipe(t *testing.T) {
	defer goleak.VerifyNone(t)
	rt, hi := newRuntime(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := thread.Go(rt, hi, func(c *thread.Ctx) error { return TermEcho(c, inR, outW) })
	replies := bufio.NewReader(outR)
	for i := range 20 {
		_, err := fmt.Fprintf(inW, "line %d\n", i)
		require.NoError(t, err)
		got, err := replies.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("line %d\n", i), got)
	}
	require.NoError(t, inW.Close())
	err, werr := h.Wait()
	require.NoError(t, werr)
	require.NoError(t, err)
	require.NoError(t, rt.Close())
}

func TestTermEchoWriteError(t *testing.T) {
	r, w := io.Pipe()
	require.NoError(t, r.CloseWithError(assert.AnError))
	err := TermEchoGoroutine(strings.NewReader("x\n"), w)
	assert.ErrorIs(t, err, assert.AnError)
}

// exercise runs clients concurrent clients against s, each sending lines
// and checking every echo.
func exercise(t *testing.T, s *Server, clients, lines int) {
	t.Helper()
	var wg sync.WaitGroup
	for k := range clients {
		wg.Go(func() {
			conn, err := net.Dial("tcp", s.Addr().String())
			if !assert.NoError(t, err) {
				return
			}
			defer conn.Close()
			r := bufio.NewReader(conn)
			for i := range lines {
				msg := fmt.Sprintf("client %d line %d %s\n", k, i, strings.Repeat("x", i))
				_, err := io.WriteString(conn, msg)
				require.NoError(t, err)
				got, err := r.ReadString('\n')
				require.NoError(t, err)
				assert.Equal(t, msg, got)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, clients, s.Accepted())
	// Every line was timed, in the order its parts happened. A line's
	// timing is logged after its echo is written, so the client may have
	// read the last echo first.
	require.Eventually(t, func() bool { return len(s.Timings()) == clients*lines }, timeout, pollEvery)
	for _, x := range s.Timings() {
		assert.True(t, strings.HasPrefix(x.Head, "client "), x.Head)
		assert.LessOrEqual(t, len(x.Head), timingHead)
		assert.True(t, 0 < x.Read && x.Read <= x.Resumed && x.Resumed <= x.Written, "%+v", x)
	}
}

func TestServeNet(t *testing.T) {
	defer goleak.VerifyNone(t)
	rt, hi := newRuntime(t)
	ln, err := Listen()
	require.NoError(t, err)
	s := ServeNet(rt, hi, ln)
	exercise(t, s, 4, 30)
	// A client still connected when the server closes is hung up on.
	idle, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer idle.Close()
	require.Eventually(t, func() bool { return s.Accepted() == 5 }, timeout, pollEvery)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "a second Close is harmless")
	_, err = bufio.NewReader(idle).ReadString('\n')
	assert.ErrorIs(t, err, io.EOF)
	require.NoError(t, rt.Close())
}

func TestServeNetGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := Listen()
	require.NoError(t, err)
	s := ServeNetGoroutines(ln)
	exercise(t, s, 4, 30)
	idle, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer idle.Close()
	require.Eventually(t, func() bool { return s.Accepted() == 5 }, timeout, pollEvery)
	require.NoError(t, s.Close())
	_, err = net.Dial("tcp", s.Addr().String())
	assert.Error(t, err, "closed listener refuses connections")
}

// TestServerCounters checks Echoed and LastRead against Timings.
func TestServerCounters(t *testing.T) {
	ln, err := Listen()
	require.NoError(t, err)
	s := ServeNetGoroutines(ln)
	defer s.Close()
	assert.Zero(t, s.Echoed())
	assert.Zero(t, s.LastRead())
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	for range 3 {
		_, err := conn.Write([]byte("00000001 hello\n"))
		require.NoError(t, err)
		_, err = r.ReadString('\n')
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return s.Echoed() == 3 }, timeout, pollEvery)
	log := s.Timings()
	assert.Len(t, log, 3)
	assert.Equal(t, log[2].Read, s.LastRead())
}
