// Package trace reads event traces: small text scripts that say when an
// interaction driver sends requests to an interactive kernel and how large
// they are.
//
// A trace is a sequence of statements, one per line (or separated by ';').
// A '#' starts a comment that runs to the end of the line. Blank lines are
// ignored. Time advances only through the statements that say so; requests
// are scheduled at offsets from the start of the replay.
//
//	trace     = { statement } .
//	statement = rate | burst | pause | payload | repeat .
//	rate      = "rate" number "/s" "for" duration .
//	burst     = "burst" count [ "every" duration "for" duration ] .
//	pause     = "pause" duration .
//	payload   = "payload" count .
//	repeat    = "repeat" count "{" { statement } "}" .
//
// rate sends requests evenly spaced over its duration. burst sends count
// requests at once, or at the start of every period for its duration. pause
// sends nothing for its duration. payload sets the size in bytes of the
// requests that follow (DefaultPayload before any payload statement). repeat
// runs its body count times; its "{" ends the statement and the closing "}"
// is a statement of its own.
//
// Numbers are decimal (rates may have a fraction); durations use Go's
// syntax (500ms, 1.5s, 2m). For example
//
//	payload 64
//	repeat 3 {
//	    rate 50/s for 2s   # steady typing
//	    burst 20           # a paste
//	    pause 200ms
//	}
//
// A trace may schedule at most MaxEvents requests over at most MaxDuration,
// so that a replay always ends. Traces for the fairbench command are
// embedded; see Builtin.
package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits on what one trace may schedule.
const (
	MaxEvents   = 1_000_000
	MaxDuration = 24 * time.Hour
	MaxPayload  = 1 << 20
	// DefaultPayload is the request size before any payload statement.
	DefaultPayload = 64
)

// Errors of Parse, wrapped in an *Error that gives the line. Use errors.Is.
var (
	// ErrSyntax reports a statement that does not follow the grammar.
	ErrSyntax = errors.New("trace: syntax error")
	// ErrTooLarge reports a trace beyond MaxEvents, MaxDuration or MaxPayload.
	ErrTooLarge = errors.New("trace: too large")
)

// Error is a parse error at a line of the trace (1-based).
type Error struct {
	Line int
	Msg  string
	Err  error // ErrSyntax or ErrTooLarge
}

func (e *Error) Error() string { return fmt.Sprintf("trace line %d: %s", e.Line, e.Msg) }

// Unwrap returns ErrSyntax or ErrTooLarge.
func (e *Error) Unwrap() error { return e.Err }

// Op is the kind of a statement.
type Op int

// The statements of the grammar.
const (
	OpRate Op = iota + 1
	OpBurst
	OpPause
	OpPayload
	OpRepeat
)

// Step is one parsed statement.
type Step struct {
	Op   Op
	Line int
	// Rate is the requests per second of OpRate.
	Rate float64
	// Count is the burst size, the payload in bytes or the repeat count.
	Count int
	// Every is the period of a repeated burst (0 for a single burst).
	Every time.Duration
	// For is how long a rate, a repeated burst or a pause lasts.
	For time.Duration
	// Body holds the statements of OpRepeat.
	Body []Step

	// Precomputed by Parse so that replay never loops over empty blocks.
	events      int
	span        time.Duration
	lastPayload int // the payload in force after the step, 0 if it sets none
}

// Trace is a parsed trace.
type Trace struct {
	Steps []Step
	// Requests is the number of requests the trace schedules.
	Requests int
	// Duration is the offset at which the trace ends.
	Duration time.Duration
}

// Event is one scheduled request.
type Event struct {
	// At is the offset from the start of the replay.
	At time.Duration
	// Size is the request's length in bytes, line end excluded.
	Size int
}

// ParseString parses a trace held in a string.
func ParseString(s string) (*Trace, error) { return Parse(strings.NewReader(s)) }

// Parse reads a trace. Errors are *Error values wrapping ErrSyntax or
// ErrTooLarge, or the reader's own error.
func Parse(r io.Reader) (*Trace, error) {
	p := &parser{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		p.line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		for stmt := range strings.SplitSeq(text, ";") {
			if err := p.statement(strings.Fields(stmt)); err != nil {
				return nil, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace: reading: %w", err)
	}
	if len(p.open) > 0 {
		return nil, &Error{Line: p.open[len(p.open)-1].Line, Msg: "repeat block is never closed", Err: ErrSyntax}
	}
	steps := p.top
	events, span, _, err := measure(steps, p.line)
	if err != nil {
		return nil, err
	}
	return &Trace{Steps: steps, Requests: events, Duration: span}, nil
}

type parser struct {
	line int
	top  []Step
	open []*Step // repeat blocks being read, innermost last
}

func (p *parser) emit(s Step) {
	s.Line = p.line
	if n := len(p.open); n > 0 {
		p.open[n-1].Body = append(p.open[n-1].Body, s)
		return
	}
	p.top = append(p.top, s)
}

func (p *parser) errorf(format string, args ...any) error {
	return &Error{Line: p.line, Msg: fmt.Sprintf(format, args...), Err: ErrSyntax}
}

func (p *parser) statement(f []string) error {
	if len(f) == 0 {
		return nil
	}
	switch f[0] {
	case "rate":
		// "rate 50/s for 2s" or "rate 50 /s for 2s"
		if len(f) == 5 && f[2] == "/s" {
			f = []string{f[0], f[1] + f[2], f[3], f[4]}
		}
		if len(f) != 4 || f[2] != "for" || !strings.HasSuffix(f[1], "/s") {
			return p.errorf("want: rate N/s for DURATION")
		}
		rate, err := strconv.ParseFloat(strings.TrimSuffix(f[1], "/s"), 64)
		if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
			return p.errorf("bad rate %q: want a positive number of requests per second", f[1])
		}
		d, err := p.duration(f[3])
		if err != nil {
			return err
		}
		p.emit(Step{Op: OpRate, Rate: rate, For: d})
	case "burst":
		if len(f) != 2 && (len(f) != 6 || f[2] != "every" || f[4] != "for") {
			return p.errorf("want: burst N [every DURATION for DURATION]")
		}
		n, err := p.count(f[1], 1)
		if err != nil {
			return err
		}
		s := Step{Op: OpBurst, Count: n}
		if len(f) == 6 {
			if s.Every, err = p.duration(f[3]); err != nil {
				return err
			}
			if s.Every == 0 {
				return p.errorf("burst period must be positive")
			}
			if s.For, err = p.duration(f[5]); err != nil {
				return err
			}
		}
		p.emit(s)
	case "pause":
		if len(f) != 2 {
			return p.errorf("want: pause DURATION")
		}
		d, err := p.duration(f[1])
		if err != nil {
			return err
		}
		p.emit(Step{Op: OpPause, For: d})
	case "payload":
		if len(f) != 2 {
			return p.errorf("want: payload BYTES")
		}
		n, err := p.count(f[1], 1)
		if err != nil {
			return err
		}
		if n > MaxPayload {
			return &Error{Line: p.line, Msg: fmt.Sprintf("payload %d is over %d bytes", n, MaxPayload), Err: ErrTooLarge}
		}
		p.emit(Step{Op: OpPayload, Count: n})
	case "repeat":
		if len(f) != 3 || f[2] != "{" {
			return p.errorf("want: repeat N {")
		}
		n, err := p.count(f[1], 0)
		if err != nil {
			return err
		}
		p.emit(Step{Op: OpRepeat, Count: n})
		if k := len(p.open); k > 0 {
			body := p.open[k-1].Body
			p.open = append(p.open, &body[len(body)-1])
		} else {
			p.open = append(p.open, &p.top[len(p.top)-1])
		}
	case "}":
		if len(f) != 1 {
			return p.errorf("'}' must stand alone")
		}
		if len(p.open) == 0 {
			return p.errorf("'}' without a repeat")
		}
		p.open = p.open[:len(p.open)-1]
	default:
		return p.errorf("unknown statement %q", f[0])
	}
	return nil
}

func (p *parser) count(s string, lowest int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < lowest {
		return 0, p.errorf("bad count %q: want an integer ≥ %d", s, lowest)
	}
	return n, nil
}

func (p *parser) duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, p.errorf("bad duration %q", s)
	}
	return d, nil
}

// measure fills in the requests, span and final payload of every step and
// returns the totals of steps, failing once they pass the limits.
func measure(steps []Step, line int) (events int, span time.Duration, payload int, err error) {
	tooLarge := func(l int) error {
		return &Error{Line: l, Msg: fmt.Sprintf("trace schedules more than %d requests or lasts more than %v", MaxEvents, MaxDuration), Err: ErrTooLarge}
	}
	for i := range steps {
		s := &steps[i]
		switch s.Op {
		case OpRate:
			n := s.Rate * s.For.Seconds()
			if n > MaxEvents {
				return 0, 0, 0, tooLarge(s.Line)
			}
			s.events, s.span = int(n), s.For
		case OpBurst:
			k := 1
			if s.Every > 0 {
				k = int(s.For / s.Every)
				s.span = s.For
			}
			if k > 0 && s.Count > MaxEvents/k {
				return 0, 0, 0, tooLarge(s.Line)
			}
			s.events = k * s.Count
		case OpPause:
			s.span = s.For
		case OpPayload:
			s.lastPayload = s.Count
		case OpRepeat:
			e, d, pl, err := measure(s.Body, s.Line)
			if err != nil {
				return 0, 0, 0, err
			}
			if s.Count > 0 && (e > MaxEvents/s.Count || d > MaxDuration/time.Duration(s.Count)) {
				return 0, 0, 0, tooLarge(s.Line)
			}
			s.events, s.span = e*s.Count, d*time.Duration(s.Count)
			if s.Count > 0 {
				s.lastPayload = pl
			}
		}
		events += s.events
		span += s.span
		if s.lastPayload != 0 {
			payload = s.lastPayload
		}
		if events > MaxEvents || span > MaxDuration {
			return 0, 0, 0, tooLarge(s.Line)
		}
	}
	return events, span, payload, nil
}

// Events expands the trace into its requests, in order of their offsets.
func (t *Trace) Events() []Event {
	ev := make([]Event, 0, t.Requests)
	payload := DefaultPayload
	expand(t.Steps, 0, &payload, &ev)
	return ev
}

// expand appends the requests of steps, starting at offset at, and returns
// the offset where they end.
func expand(steps []Step, at time.Duration, payload *int, ev *[]Event) time.Duration {
	for i := range steps {
		s := &steps[i]
		if s.events == 0 { // nothing to send: only time and payload change
			at += s.span
			if s.lastPayload != 0 {
				*payload = s.lastPayload
			}
			continue
		}
		switch s.Op {
		case OpRate:
			gap := time.Duration(float64(time.Second) / s.Rate)
			for k := range s.events {
				*ev = append(*ev, Event{At: at + time.Duration(k)*gap, Size: *payload})
			}
		case OpBurst:
			for k := range max(1, s.events/s.Count) {
				for range s.Count {
					*ev = append(*ev, Event{At: at + time.Duration(k)*s.Every, Size: *payload})
				}
			}
		case OpRepeat:
			start := at
			for range s.Count {
				start = expand(s.Body, start, payload, ev)
			}
		}
		at += s.span
	}
	return at
}
