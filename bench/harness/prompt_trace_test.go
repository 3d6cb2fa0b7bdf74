package harness

import (
	"os"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/bench/driver"
)

// TestCellTraceKeepsSlowCells: a prompt cell's trace stays only when the
// cell was slow, with its slow requests listed beside it.
func TestCellTraceKeepsSlowCells(t *testing.T) {
	echo := &driver.Result{SentAt: []int64{100, 200, 300, 0}, ReceivedAt: []int64{150, 200 + int64(2*time.Millisecond), 300 + int64(time.Millisecond), 0}}
	for _, c := range []struct {
		sum  PromptSummary
		keep bool
	}{
		{PromptSummary{P99: 0.5, Max: 2}, false},
		{PromptSummary{P99: 1.5, Max: 2}, true},
		{PromptSummary{P99: 0.5, Max: 5}, true},
	} {
		dir := t.TempDir()
		rec := &Record{Kind: kindPrompt, Kernel: "sort", Procs: 2, Criterion: "50-0-50", Echo: echo}
		tr, err := startCellTrace(dir, rec)
		if err != nil {
			t.Fatal(err)
		}
		rec.PromptSummary = &c.sum
		if err := tr.stop(rec); err != nil {
			t.Fatal(err)
		}
		name := dir + "/sort-P2-50-0-50"
		_, errTrace := os.Stat(name + ".trace")
		slow, errSlow := os.ReadFile(name + ".slow")
		if kept := errTrace == nil; kept != c.keep || (errSlow == nil) != c.keep {
			t.Errorf("%+v: trace kept %v (.slow: %v), want %v", c.sum, kept, errSlow, c.keep)
		}
		// Only request 1 is slower than PromptTraceSlow (request 2 took
		// exactly that; request 3 was never sent).
		if want := "1 200 2000000\n"; c.keep && string(slow) != want {
			t.Errorf(".slow = %q, want %q", slow, want)
		}
	}
	if tr, err := startCellTrace("", &Record{}); tr != nil || err != nil {
		t.Errorf("no folder: trace %v, %v", tr, err)
	}
	if err := (*cellTrace)(nil).stop(&Record{}); err != nil {
		t.Error(err)
	}
}
