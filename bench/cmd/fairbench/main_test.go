package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/harness"
	"github.com/fairlyprompt/fairly/bench/kernels"
)

// TestMain lets the test binary run the driver subcommand, as the real
// binary does when the suite re-executes itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "driver" {
		os.Exit(driver.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

func TestRunTiny(t *testing.T) {
	t.Setenv("GORACE", "atexit_sleep_ms=0") // a race-enabled driver would sleep a second at exit
	dir := filepath.Join(t.TempDir(), "report")
	var out, errOut bytes.Buffer
	code := run([]string{"-kernels", "fib,uts", "-size", "fib=12,uts=3", "-procs", "2", "-reps", "1",
		"-experiments", "table2,table5", "-echo-for", "100ms", "-fib", "14", "-out", dir}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "## Table 2")
	assert.Contains(t, out.String(), "## Table 5")
	assert.NotContains(t, out.String(), "## Table 1")
	assert.Contains(t, errOut.String(), "report written")
	// Standard error is no terminal here: one line per step, no redrawn bar.
	assert.NotContains(t, errOut.String(), "\r")
	assert.Contains(t, errOut.String(), "fairbench: [1/")
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "Command: `fairbench -kernels fib,uts")
	assert.Contains(t, string(md), "fib n=12, uts depth=3")
}

// Every mistake on the command line exits with status 2 and one line
// that starts with the command's name, once, and says what is wrong.
func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-kernels", "nope"}, `-kernels: unknown kernel "nope" (known kernels: fib,`},
		{[]string{"-kernels", ""}, "-kernels: no value given"},
		{[]string{"-procs", "0"}, "processor count 0 is not in 1..256"},
		{[]string{"-procs", "-2"}, "processor count -2 is not in 1..256"},
		{[]string{"-procs", "5000"}, "processor count 5000 is not in 1..256"},
		{[]string{"-procs", "x"}, `-procs: "x" is not an integer`},
		{[]string{"-procs", ""}, "-procs: no value given"},
		{[]string{"-criteria", "50-50"}, `-criteria: criterion "50-50" is not HIGH-MEDIUM-LOW`},
		{[]string{"-criteria", "50-50-0"}, "gives the kernel no share"},
		{[]string{"-criteria", "0-0-0"}, "gives no priority a share"},
		{[]string{"-shares", "90"}, "interactive share 90 is not in (0, 50] percent"},
		{[]string{"-shares", "ten"}, `-shares: "ten" is not a number`},
		{[]string{"-size", "fib=-3"}, `-size: "fib=-3": "-3" is not a positive integer`},
		{[]string{"-size", "nope=3"}, `-size: "nope=3" is not name=N with a known kernel`},
		{[]string{"-size", "huge"}, `-size: "huge" is not name=N`},
		{[]string{"-reps", "-1"}, "repetitions -1 is not in 1..1000"},
		{[]string{"-reps", "100000"}, "repetitions 100000 is not in 1..1000"},
		{[]string{"-experiments", "table7"}, `unknown experiment "table7" (known: table1, table2`},
		{[]string{"-experiments", ","}, "-experiments: no value given"},
		{[]string{"-rate", "0"}, "echo rate 0 is not in (0, 10000] requests per second"},
		{[]string{"-rate", "-3"}, "echo rate -3 is not in (0, 10000]"},
		{[]string{"-rate", "1e9"}, "echo rate 1e+09 is not in (0, 10000]"},
		{[]string{"-sim-rate", "0"}, "-sim-rate 0 is not between"},
		{[]string{"-sim-work", "0s"}, "-sim-work 0s is not between"},
		{[]string{"-sim-work", "1h"}, "-sim-work 1h0m0s is not between"},
		{[]string{"-sim-seed", "0"}, "-sim-seed is 0; give a positive seed"},
		{[]string{"-sim-seed", "-1"}, `invalid value "-1" for flag -sim-seed`},
		{[]string{"-echo-for", "-1s"}, "echo replay length -1s is not in (0, 1h0m0s]"},
		{[]string{"-fib", "-2"}, "fib size -2 is not in 1..50"},
		{[]string{"-stall-mib", "-1"}, "stall input -1 MiB is not in 1..1024"},
		{[]string{"-driver-nice", "50"}, "-driver-nice 50 is not between -20 and 19"},
		{[]string{"-out", ""}, "-out is empty"},
		{[]string{"-prompt-rate", "0"}, "-prompt-rate 0 is not between"},
		{[]string{"-prompt-requests", "0"}, "-prompt-requests 0 is not between"},
		{[]string{"-experiments", "prompt", "-kernels", "batch+9go"}, `-kernels: unknown kernel "batch+9go"`},
		{[]string{"-experiments", "table1", "-kernels", "alloc"}, "no kernel chosen"},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-procs"}, "flag needs an argument: -procs"},
		{[]string{"-reps", "many"}, `invalid value "many" for flag -reps`},
		{[]string{"stray"}, `unexpected arguments ["stray"]`},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(c.args, &out, &errOut), "%q", c.args)
		assert.Empty(t, out.String(), "%q", c.args)
		msg, _, _ := strings.Cut(errOut.String(), "\n")
		assert.True(t, strings.HasPrefix(msg, "fairbench: "), "%q: %q", c.args, msg)
		assert.Equal(t, 1, strings.Count(msg, "fairbench"), "%q: one prefix in %q", c.args, msg)
		assert.Contains(t, msg, c.want, "%q", c.args)
		assert.Contains(t, errOut.String(), "Run 'fairbench -h' for the flags.", "%q", c.args)
	}
}

func TestHelp(t *testing.T) {
	for _, h := range []string{"-h", "-help", "--help"} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 0, run([]string{h}, &out, &errOut), h)
		assert.Contains(t, errOut.String(), "usage: fairbench [flags]", h)
		assert.Contains(t, errOut.String(), "-experiments", h)
		assert.Contains(t, errOut.String(), "prompt", h)
		assert.Empty(t, out.String(), h)
	}
}

// The prompt experiment takes its own criteria as a subset, 100-0-0
// among them, which the stretch experiments refuse.
func TestPromptTakesAllItsCriteria(t *testing.T) {
	cfg, _, _, err := parseFlags([]string{"-experiments", "prompt", "-criteria", "100-0-0,5-45-50"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []harness.Criterion{{100, 0, 0}, {5, 45, 50}}, cfg.PromptCriteria)
}

func TestParseSizes(t *testing.T) {
	sizes, err := parseSizes("", "quick")
	require.NoError(t, err)
	assert.Equal(t, quickSizes, sizes)
	sizes, err = parseSizes("paper, fib=20", "quick")
	require.NoError(t, err)
	assert.Equal(t, 20, sizes["fib"])
	assert.Equal(t, 11, sizes["uts"])
	_, err = parseSizes("fib", "quick")
	assert.ErrorContains(t, err, "-size")
}

func TestPresets(t *testing.T) {
	var errOut bytes.Buffer
	cfg, out, progress, err := parseFlags(nil, &errOut)
	require.NoError(t, err)
	assert.Equal(t, "fairbench-report", out)
	assert.True(t, progress)
	assert.Equal(t, 3, cfg.Reps)
	assert.Equal(t, quickSizes["fib"], cfg.Sizes["fib"])
	assert.Len(t, cfg.Procs, 2)

	cfg, _, _, err = parseFlags([]string{"-full", "-reps", "2", "-size", "sort=5"}, &errOut)
	require.NoError(t, err)
	assert.Equal(t, 2, cfg.Reps)
	fib, err := kernels.Lookup("fib")
	require.NoError(t, err)
	assert.Equal(t, fib.DefaultSize, cfg.Sizes["fib"])
	assert.Equal(t, 5, cfg.Sizes["sort"])
	assert.Greater(t, cfg.EchoFor, 2*time.Second)
}

// TestPromptFlags checks how the flags set the prompt experiment: -kernels
// names kernels and loads, and -criteria and -size apply only when given.
func TestPromptFlags(t *testing.T) {
	var errOut bytes.Buffer
	cfg, _, progress, err := parseFlags([]string{"-experiments", "prompt", "-kernels", "bfs,batch+2go", "-procs", "2", "-progress=false"}, &errOut)
	require.NoError(t, err)
	assert.False(t, progress)
	require.Len(t, cfg.Kernels, 1)
	assert.Equal(t, "bfs", cfg.Kernels[0].Name)
	assert.Equal(t, []string{"batch+2go"}, cfg.PromptLoads)
	assert.Nil(t, cfg.PromptCriteria, "the experiment's own criteria")
	assert.Nil(t, cfg.PromptSizes, "the kernels' default sizes")
	assert.Equal(t, []int{2}, cfg.Procs)
	assert.Equal(t, float64(harness.DefaultPromptRate), cfg.PromptRate)
	assert.Equal(t, harness.DefaultPromptRequests, cfg.PromptRequests)
	assert.False(t, cfg.PromptNoControls, "the controls run by default")

	cfg, _, _, err = parseFlags([]string{"-experiments", "prompt", "-criteria", "50-0-50", "-size", "bfs=1000", "-prompt-rate", "300", "-prompt-requests", "5000",
		"-prompt-controls=false"}, &errOut)
	require.NoError(t, err)
	assert.Equal(t, []harness.Criterion{{50, 0, 50}}, cfg.PromptCriteria)
	assert.Equal(t, 1000, cfg.PromptSizes["bfs"])
	assert.Equal(t, harness.PromptLoads, cfg.PromptLoads, "all: every kernel and every load")
	assert.Len(t, cfg.Kernels, len(kernels.All()))
	assert.Equal(t, 300.0, cfg.PromptRate)
	assert.Equal(t, 5000, cfg.PromptRequests)
	assert.True(t, cfg.PromptNoControls)
	assert.Contains(t, header(nil, cfg, "", ""), "without the plain-Go controls")

	_, _, _, err = parseFlags([]string{"-experiments", "prompt", "-prompt-controls=maybe"}, &errOut)
	assert.ErrorContains(t, err, "-prompt-controls")
}
