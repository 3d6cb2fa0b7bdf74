// Package driver replays an event trace against an echo server and records
// the response time of every request: the time from writing a request line
// to reading its echo.
//
// The driver is meant to run in a process of its own, so that the client's
// timing does not share a Go scheduler with the server it measures; Main is
// its command line (the fairbench command runs it as its hidden "driver"
// subcommand). It talks TCP to a loopback address, or writes requests to its
// standard output and reads echoes from its standard input.
//
// Requests are sent open-loop, at the offsets of the trace, whether or not
// earlier ones were answered. Each request is one line: an 8-digit sequence
// number and filler up to the trace's payload size (never shorter than the
// sequence number). Response times are measured from the moment a request
// was actually written; Result.MaxLag says how far behind the trace the
// driver itself fell.
package driver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairlyprompt/fairly/bench/latency"
	"github.com/fairlyprompt/fairly/bench/trace"
)

// Errors of Run.
var (
	// ErrNotLoopback refuses a TCP address outside the machine.
	ErrNotLoopback = errors.New("address is not a loopback address")
	// ErrNoTarget reports a Config with neither Addr nor In and Out.
	ErrNoTarget = errors.New("no server to talk to")
)

// seqDigits is the width of the sequence number that starts every request.
const seqDigits = 8

// Config describes one replay.
type Config struct {
	// Trace is what to send and when.
	Trace *trace.Trace
	// Addr is the echo server's TCP address; it must be on loopback. Empty
	// means the stream mode: requests go to Out and echoes come from In.
	Addr string
	// Conns is the number of TCP connections; requests are dealt to them in
	// turn. 0 means 1. Stream mode has one stream.
	Conns int
	// In and Out are the streams of the stream mode. Run does not wait for
	// its reader of In: close In to end it.
	In  io.Reader
	Out io.Writer
	// Grace is how long to wait for outstanding echoes once sending stops
	// (default 2 s). Requests still unanswered then count as lost.
	Grace time.Duration
	// Timeout bounds the whole replay (default: the trace's duration plus
	// Grace plus 10 s).
	Timeout time.Duration
}

// Result is what a replay measured. It marshals to JSON with durations in
// nanoseconds.
type Result struct {
	// Mode is "tcp" or "stream".
	Mode string `json:"mode"`
	// Requests is the number the trace schedules; Sent and Received count
	// what was written and what came back.
	Requests int `json:"requests"`
	Sent     int `json:"sent"`
	Received int `json:"received"`
	// Elapsed is the length of the replay.
	Elapsed time.Duration `json:"elapsed_ns"`
	// MaxLag is the longest delay between a request's offset in the trace
	// and its actual sending.
	MaxLag time.Duration `json:"max_lag_ns"`
	// RTT holds the response time of every answered request, in the order
	// of sending.
	RTT []time.Duration `json:"rtt_ns"`
	// SentAt holds, for every request the trace schedules, the wall-clock
	// time it was sent (Unix ns; 0 if it was not), and ReceivedAt the time
	// its echo came back (0 if it did not). A server in another process
	// that timestamps the same requests by their sequence number (SeqOf)
	// can split each response time into its parts: the clock is the
	// machine's.
	SentAt     []int64 `json:"sent_unix_ns,omitempty"`
	ReceivedAt []int64 `json:"received_unix_ns,omitempty"`
	// Stopped says why the replay ended before its last echo, if it did.
	Stopped string `json:"stopped,omitempty"`
}

// Latency summarises the response times of the answered requests; the
// unanswered ones count as lost.
func (r *Result) Latency() latency.Summary { return latency.Of(r.RTT, r.Sent-r.Received) }

// link is one request stream and its echoes.
type link struct {
	w     io.Writer
	r     *bufio.Reader
	close func() error
}

// replay is the state shared by the sender and the readers.
type replay struct {
	start    time.Time
	sentAt   []atomic.Int64 // ns after start; 0 until sent (start+0 is shifted by 1)
	rtt      []atomic.Int64 // 0 until answered
	sizes    []int
	answered atomic.Int64
	news     chan struct{} // a token after each echo or reader end
	dead     atomic.Int64  // readers that have ended
	mu       sync.Mutex
	failure  error // first reader error
}

// Run replays cfg.Trace until every request has been answered, the grace
// period after the last send has passed, ctx is cancelled (then it stops
// sending and waits Grace for echoes), or Timeout. Errors are for a replay
// that could not start; what went wrong during one is in Result.Stopped.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Trace == nil {
		return nil, errors.New("no trace")
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 2 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = cfg.Trace.Duration + cfg.Grace + 10*time.Second
	}
	links, mode, err := open(cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, l := range links {
			_ = l.close() // ends the readers
		}
	}()

	events := cfg.Trace.Events()
	rp := &replay{
		sentAt: make([]atomic.Int64, len(events)),
		rtt:    make([]atomic.Int64, len(events)),
		sizes:  make([]int, len(events)),
		news:   make(chan struct{}, 1),
	}
	hard, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	rp.start = time.Now()
	for _, l := range links {
		go rp.read(l)
	}
	res := &Result{Mode: mode, Requests: len(events)}
	res.Sent, res.MaxLag, res.Stopped = rp.send(ctx, hard, links, events)

	// Wait for the echoes still due.
	graceEnd := time.NewTimer(cfg.Grace)
	defer graceEnd.Stop()
	for rp.answered.Load() < int64(res.Sent) && rp.dead.Load() < int64(len(links)) {
		select {
		case <-rp.news:
			continue
		case <-graceEnd.C:
			res.Stopped = join(res.Stopped, fmt.Sprintf("%d requests unanswered after a grace of %v", int64(res.Sent)-rp.answered.Load(), cfg.Grace))
		case <-hard.Done():
			res.Stopped = join(res.Stopped, fmt.Sprintf("timeout of %v", cfg.Timeout))
		}
		break
	}
	res.Elapsed = time.Since(rp.start)
	rp.mu.Lock()
	if rp.failure != nil {
		res.Stopped = join(res.Stopped, rp.failure.Error())
	}
	rp.mu.Unlock()
	base := rp.start.UnixNano()
	res.SentAt = make([]int64, len(events))
	res.ReceivedAt = make([]int64, len(events))
	for i := range res.Sent {
		sent := base + rp.sentAt[i].Load() - 1
		res.SentAt[i] = sent
		if d := rp.rtt[i].Load(); d != 0 {
			res.RTT = append(res.RTT, time.Duration(d))
			res.ReceivedAt[i] = sent + d
		}
	}
	res.Received = len(res.RTT)
	return res, nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func open(cfg Config) ([]link, string, error) {
	if cfg.Addr == "" {
		if cfg.In == nil || cfg.Out == nil {
			return nil, "", ErrNoTarget
		}
		return []link{{w: cfg.Out, r: newLineReader(cfg.In), close: func() error { return nil }}}, "stream", nil
	}
	if err := checkLoopback(cfg.Addr); err != nil {
		return nil, "", err
	}
	links := make([]link, max(1, cfg.Conns))
	for i := range links {
		conn, err := net.DialTimeout("tcp", cfg.Addr, 5*time.Second)
		if err != nil {
			for _, l := range links[:i] {
				_ = l.close()
			}
			return nil, "", err
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true) // the default already, said for clarity: no batching of requests
		}
		links[i] = link{w: conn, r: newLineReader(conn), close: conn.Close}
	}
	return links, "tcp", nil
}

// send writes the requests at their offsets; it returns how many it sent,
// the largest lag behind the trace, and why it stopped early if it did.
func (rp *replay) send(ctx, hard context.Context, links []link, events []trace.Event) (int, time.Duration, string) {
	var buf []byte
	var lag time.Duration
	timer := time.NewTimer(0)
	<-timer.C
	for i, ev := range events {
		if wait := ev.At - time.Since(rp.start); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return i, lag, "stopped by the caller"
			case <-hard.Done():
				timer.Stop()
				return i, lag, "timeout"
			}
		}
		if n := rp.dead.Load(); n == int64(len(links)) {
			return i, lag, "server hung up"
		}
		buf = request(buf[:0], i, ev.Size)
		rp.sizes[i] = len(buf)
		now := time.Since(rp.start)
		rp.sentAt[i].Store(int64(now) + 1)
		if _, err := links[i%len(links)].w.Write(buf); err != nil {
			return i, lag, "write: " + err.Error()
		}
		lag = max(lag, now-ev.At)
	}
	return len(events), lag, ""
}

// newLineReader reads echoes; its buffer holds the longest request.
func newLineReader(r io.Reader) *bufio.Reader {
	return bufio.NewReaderSize(r, seqDigits+trace.MaxPayload+1)
}

// SeqOf is the sequence number at the head of a request line (or its echo):
// the index of the request in the trace, and in Result.SentAt.
func SeqOf(line []byte) (int, bool) {
	if len(line) < seqDigits {
		return 0, false
	}
	seq, err := strconv.Atoi(string(line[:seqDigits]))
	return seq, err == nil && seq >= 0
}

// request formats request seq of size bytes, line end included.
func request(buf []byte, seq, size int) []byte {
	buf = fmt.Appendf(buf, "%0*d", seqDigits, seq)
	for len(buf) < size {
		buf = append(buf, 'x')
	}
	return append(buf, '\n')
}

// read matches the echoes of one link to their requests until the link ends.
func (rp *replay) read(l link) {
	defer func() {
		rp.dead.Add(1)
		rp.notify()
	}()
	for {
		line, err := l.r.ReadSlice('\n')
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				rp.fail(err)
			}
			return
		}
		now := int64(time.Since(rp.start))
		seq, ok := SeqOf(line)
		switch {
		case !ok || seq >= len(rp.sentAt) || rp.sentAt[seq].Load() == 0:
			rp.fail(fmt.Errorf("driver: echo of no request: %.40q", line))
			return
		case len(line) != rp.sizes[seq]:
			rp.fail(fmt.Errorf("driver: echo of request %d has %d bytes, sent %d", seq, len(line), rp.sizes[seq]))
			return
		}
		if rp.rtt[seq].CompareAndSwap(0, max(1, now-(rp.sentAt[seq].Load()-1))) {
			rp.answered.Add(1)
		}
		rp.notify()
	}
}

func (rp *replay) notify() {
	select {
	case rp.news <- struct{}{}:
	default:
	}
}

func (rp *replay) fail(err error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.failure == nil {
		rp.failure = err
	}
}
