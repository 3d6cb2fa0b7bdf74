package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/bench/harness"
)

// writeCell writes a trace as fairbench -prompt-trace does, with a
// goroutine that sleeps inside it, and a .slow file of one request sent
// while that goroutine slept; it returns the trace's path.
func writeCell(t *testing.T, wall bool) string {
	t.Helper()
	dir := t.TempDir()
	name := filepath.Join(dir, "sort-P1-50-0-50")
	f, err := os.Create(name + ".trace")
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		t.Skip("the execution tracer is busy:", err)
	}
	if wall {
		trace.Log(context.Background(), harness.TraceWallCategory, strconv.FormatInt(time.Now().UnixNano(), 10))
	}
	sent := time.Now().UnixNano()
	done := make(chan struct{})
	go func() { time.Sleep(3 * time.Millisecond); close(done) }()
	<-done
	took := time.Now().UnixNano() - sent
	time.Sleep(time.Millisecond)
	trace.Stop()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	slow := fmt.Sprintf("6 %d %d\n7 %d %d\n", sent-int64(time.Second), 2_000_000, sent, took)
	if err := os.WriteFile(name+".slow", []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	return name + ".trace"
}

func TestStallWindow(t *testing.T) {
	path := writeCell(t, true)
	var out bytes.Buffer
	if err := run([]string{"-pre", "1ms", path}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	// The slowest request's cluster holds it and not request 6, sent a
	// second earlier.
	if !strings.Contains(s, "request 7 sent at 1.0") || strings.Contains(s, "request 6") {
		t.Errorf("the window's requests are wrong:\n%s", s)
	}
	// The goroutine that slept blocked and was readied in the window.
	if !strings.Contains(s, "Waiting") || !strings.Contains(s, "Runnable") {
		t.Errorf("the window shows no goroutine that blocked and woke:\n%s", s)
	}
	if !strings.Contains(s, "CLOCK_MONOTONIC") {
		t.Errorf("no monotonic bounds:\n%s", s)
	}
	out.Reset()
	if err := run([]string{"-req", "6", "-lines", "3", path}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "request 6 sent") {
		t.Errorf("-req 6 did not show request 6's cluster:\n%s", out.String())
	}
}

func TestStallErrors(t *testing.T) {
	path := writeCell(t, false)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "give one .trace"},
		{[]string{"x.json"}, "give one .trace"},
		{[]string{"-req", "99", path}, "not among the slow ones"},
		{[]string{path}, "no wall clock event"},
		{[]string{filepath.Join(t.TempDir(), "none.trace")}, "no such file"},
	} {
		var out bytes.Buffer
		err := run(c.args, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want an error with %q", c.args, err, c.want)
		}
	}
	slow := strings.TrimSuffix(path, ".trace") + ".slow"
	if err := os.WriteFile(slow, []byte("1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{path}, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "not \"index sent response\"") {
		t.Errorf("a malformed .slow line gave %v", err)
	}
}
