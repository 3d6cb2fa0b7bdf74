package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/trace"
	"strconv"
	"strings"
	"time"
)

// Execution traces of the prompt experiment's slow cells (Config.PromptTrace):
// each fairly cell runs under Go's execution tracer, and a cell whose p99
// misses PromptTraceP99 or whose slowest request took PromptTraceMax keeps
// its trace, DIR/<load>-P<procs>-<criterion>.trace, beside
// DIR/<same>.slow, the cell's requests slower than PromptTraceSlow: one
// line each, "index sent response", the request's index in the replay, when
// the driver sent it (Unix ns) and its response time (ns). The trace holds
// a log event of category "wall" whose message is the wall clock (Unix ns)
// as it was written, so that a reader can place the requests on the
// trace's clock (bench/cmd/stalltrace does). Other cells' traces are
// removed. The tracer costs the cell some processor time, so a traced
// run's figures are not the experiment's.

// The thresholds of a kept trace and of a listed request.
const (
	PromptTraceP99  = time.Millisecond
	PromptTraceMax  = 5 * time.Millisecond
	PromptTraceSlow = time.Millisecond
)

// TraceWallCategory is the category of the trace's log event that holds
// the wall clock.
const TraceWallCategory = "wall"

// cellTrace is the tracing of one cell, nil when none runs.
type cellTrace struct {
	name string // path without extension
	f    *os.File
}

// startCellTrace starts tracing the cell of rec into dir; it returns nil
// if dir is empty, and an error if the tracer could not start.
func startCellTrace(dir string, rec *Record) (*cellTrace, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-P%d-%s", rec.Kernel, rec.Procs, rec.Criterion))
	f, err := os.Create(name + ".trace")
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		return nil, closeAll(err, f.Close(), os.Remove(name+".trace"))
	}
	trace.Log(context.Background(), TraceWallCategory, strconv.FormatInt(time.Now().UnixNano(), 10))
	return &cellTrace{name: name, f: f}, nil
}

// stop ends the trace and keeps it, with its list of slow requests, if the
// cell of rec was slow (see above); else it removes it.
func (t *cellTrace) stop(rec *Record) error {
	if t == nil {
		return nil
	}
	trace.Stop()
	err := t.f.Close()
	sum := rec.PromptSummary
	if err != nil || sum == nil || rec.Echo == nil || (sum.P99 <= inMs(PromptTraceP99) && sum.Max < inMs(PromptTraceMax)) {
		return closeAll(err, os.Remove(t.name+".trace"))
	}
	return os.WriteFile(t.name+".slow", []byte(slowRequests(rec, PromptTraceSlow)), 0o644)
}

// slowRequests lists rec's requests slower than limit, as stop writes them.
func slowRequests(rec *Record, limit time.Duration) string {
	var b strings.Builder
	e := rec.Echo
	for i, sent := range e.SentAt {
		if got := e.ReceivedAt[i]; got != 0 && time.Duration(got-sent) > limit {
			fmt.Fprintf(&b, "%d %d %d\n", i, sent, got-sent)
		}
	}
	return b.String()
}
