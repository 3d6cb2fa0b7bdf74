package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/kernels"
)

// TestMain lets the test binary run the driver subcommand, as the real
// binary does when the suite re-executes itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "driver" {
		os.Exit(driver.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
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
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "Command: `fairbench -kernels fib,uts")
	assert.Contains(t, string(md), "fib n=12, uts depth=3")
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-kernels", "nope"},
		{"-procs", "0"},
		{"-procs", "x"},
		{"-procs", ""},
		{"-criteria", "50-50"},
		{"-shares", "90"},
		{"-size", "fib=-3"},
		{"-size", "nope=3"},
		{"-size", "huge"},
		{"-reps", "-1"},
		{"-experiments", "table7"},
		{"-rate", "0"},
		{"-out", ""},
		{"-bogus"},
		{"stray"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(args, &out, &errOut), "%q", args)
		assert.NotEmpty(t, errOut.String(), "%q", args)
		assert.Empty(t, out.String(), "%q", args)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "-experiments")
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
	assert.ErrorIs(t, err, errUsage)
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
