package harness

import (
	"time"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/interactive"
	"github.com/fairlyprompt/fairly/bench/kernels"
)

// The measured phase. An echo replay runs from before the load starts to
// after it ends, and between the runs of a kernel the harness does work of
// its own: it checks each run's result (bfs's check takes about a second,
// on a goroutine outside fairly that holds the P kept free for wake-ups).
// A request sent then measures the harness, not the setting the table
// names. So every run beside an echo records the spans in which the load
// ran and the harness did nothing else (Record.Measured), and a request
// counts in the tables only if it was sent in one of them; the others are
// counted by phase (Record.PhaseRequests) and left out. A record without
// spans (an idle echo, or one written before spans were recorded) counts
// every request.

// Span is a stretch of the machine's wall clock, in Unix ns, in which a
// load ran and the harness did nothing else.
type Span struct {
	Start int64 `json:"start_unix_ns"`
	End   int64 `json:"end_unix_ns"`
}

// Phases of a request, by the time it was sent.
const (
	phaseMeasured = "measured" // in a Span
	phaseBefore   = "before"   // before the first Span: the harness starting the load
	phaseBetween  = "between"  // between two Spans: the harness checking a run
	phaseAfter    = "after"    // after the last Span: the harness waiting for the echo to end
)

// measure runs f as a measured span of rec.
func (rec *Record) measure(f func() error) error {
	start := time.Now().UnixNano()
	err := f()
	rec.Measured = append(rec.Measured, Span{Start: start, End: time.Now().UnixNano()})
	return err
}

// phaseOf is the phase of a request sent at sent (Unix ns) under spans,
// which are in order.
func phaseOf(spans []Span, sent int64) string {
	switch {
	case len(spans) == 0:
		return phaseMeasured
	case sent < spans[0].Start:
		return phaseBefore
	case sent >= spans[len(spans)-1].End:
		return phaseAfter
	}
	for _, s := range spans {
		if sent >= s.Start && sent < s.End {
			return phaseMeasured
		}
	}
	return phaseBetween
}

// measured reports whether the request sent at sent counts in rec's tables.
func (rec *Record) measured(sent int64) bool { return phaseOf(rec.Measured, sent) == phaseMeasured }

// countPhases counts rec's sent requests by phase, when rec has spans.
func (rec *Record) countPhases() {
	if rec.Echo == nil || len(rec.Measured) == 0 {
		return
	}
	rec.PhaseRequests = make(map[string]int)
	for _, sent := range rec.Echo.SentAt {
		if sent != 0 {
			rec.PhaseRequests[phaseOf(rec.Measured, sent)]++
		}
	}
}

// measuredLatency summarises the response times of the requests rec's
// tables count: all of them without spans, else those sent in a span (and
// the unanswered ones among those as lost).
func (rec *Record) measuredLatency() Latency {
	res := rec.Echo
	if len(rec.Measured) == 0 || len(res.SentAt) == 0 {
		return res.Latency()
	}
	var r driver.Result
	for i, sent := range res.SentAt {
		if sent == 0 || !rec.measured(sent) {
			continue
		}
		r.Sent++
		if got := res.ReceivedAt[i]; got != 0 {
			r.Received++
			r.RTT = append(r.RTT, time.Duration(got-sent))
		}
	}
	return r.Latency()
}

// drainWait bounds drain's wait.
const drainWait = 200 * time.Millisecond

// drain waits, after a measured run that ended at end (Unix ns), until the
// echo has had time to answer the requests sent during the run: until it
// has read a line one request interval after end, or for drainWait. Lines
// are read in order, so the harness's own work (a check) then starts only
// once those requests were answered, unless delivering one took longer
// than the interval.
func drain(srv *interactive.Server, end int64, rate float64) {
	target := end + int64(float64(time.Second)/rate)
	for deadline := time.Now().Add(drainWait); srv.LastRead() < target && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// timedBeside is timed for a run of inst beside a network echo: the run is
// a measured span of rec, and the check waits (drain) until the echo has
// answered the requests sent during the run.
func (s *suite) timedBeside(echo *netEcho, rec *Record, inst kernels.Instance, run func() error) (time.Duration, error) {
	var d time.Duration
	err := rec.measure(func() error {
		start := time.Now()
		err := run()
		d = time.Since(start)
		return err
	})
	if err != nil {
		return d, err
	}
	drain(echo.srv, rec.Measured[len(rec.Measured)-1].End, s.cfg.EchoRate)
	return d, inst.Check()
}

// untilChecked repeats run as measured spans of rec until done is closed,
// at least once, and then checks the last run's result: no check runs while
// the echo does.
func untilChecked(done <-chan struct{}, rec *Record, inst kernels.Instance, run func() error) ([]time.Duration, error) {
	var times []time.Duration
	for {
		start := time.Now()
		if err := rec.measure(run); err != nil {
			return times, err
		}
		times = append(times, time.Since(start))
		select {
		case <-done:
			return times, inst.Check()
		default:
		}
	}
}
