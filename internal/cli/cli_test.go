package cli_test

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/internal/cli"
)

func newFlags() (*flag.FlagSet, *int) {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	return fs, fs.Int("n", 1, "a number")
}

func TestParse(t *testing.T) {
	var stderr bytes.Buffer
	fs, n := newFlags()
	require.NoError(t, cli.Parse(fs, []string{"-n", "3"}, &stderr))
	assert.Equal(t, 3, *n)
	assert.Empty(t, stderr.String())

	for _, h := range []string{"-h", "-help", "--help"} {
		stderr.Reset()
		fs, _ := newFlags()
		assert.ErrorIs(t, cli.Parse(fs, []string{h}, &stderr), flag.ErrHelp, h)
		assert.Contains(t, stderr.String(), "-n int", h)
	}

	for want, args := range map[string][]string{
		"flag provided but not defined: -x": {"-x"},
		`invalid value "a" for flag -n`:     {"-n", "a"},
		`unexpected arguments ["extra"]`:    {"extra"},
	} {
		stderr.Reset()
		fs, _ := newFlags()
		assert.ErrorContains(t, cli.Parse(fs, args, &stderr), want)
		assert.Empty(t, stderr.String(), "the flag package prints nothing")
	}
}

func TestMainExitCodes(t *testing.T) {
	var stderr bytes.Buffer
	ok := func() error { return nil }
	fail := func() error { return errors.New("it broke") }
	assert.Equal(t, 0, cli.Main("cmd", &stderr, ok, ok))
	assert.Equal(t, 0, cli.Main("cmd", &stderr, func() error { return flag.ErrHelp }, fail))
	assert.Empty(t, stderr.String())
	assert.Equal(t, 2, cli.Main("cmd", &stderr, fail, ok))
	assert.Equal(t, "cmd: it broke\nRun 'cmd -h' for the flags.\n", stderr.String())
	stderr.Reset()
	assert.Equal(t, 1, cli.Main("cmd", &stderr, ok, fail))
	assert.Equal(t, "cmd: it broke\n", stderr.String())
}

func TestBetween(t *testing.T) {
	assert.NoError(t, cli.Between("procs", 1, 1, 256))
	assert.EqualError(t, cli.Between("procs", 0, 1, 256), "-procs 0 is not between 1 and 256")
	assert.EqualError(t, cli.Between("rate", -3.0, 0.1, 1e4), "-rate -3 is not between 0.1 and 10000")
	assert.Error(t, cli.Between("rate", math.NaN(), 0.1, 1e4))
	assert.EqualError(t, cli.Between("limit", -time.Second, time.Millisecond, time.Hour), "-limit -1s is not between 1ms and 1h0m0s")
	assert.NoError(t, cli.First(nil, nil))
	assert.EqualError(t, cli.First(nil, errors.New("a"), errors.New("b")), "a")
}
