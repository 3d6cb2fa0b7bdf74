package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every combination answers every request, with the load running.
func TestBench(t *testing.T) {
	for _, mode := range []string{"net", "term"} {
		for _, gor := range []bool{false, true} {
			cfg := Config{Mode: mode, Goroutines: gor, Load: true, Requests: 30, Rate: 300, Conns: 2, Procs: 2, Fib: 18, Cutoff: 8}
			rep, err := Bench(cfg)
			require.NoError(t, err, "%s goroutines=%v", mode, gor)
			assert.Equal(t, 30, rep.N)
			assert.Positive(t, rep.P50)
			assert.LessOrEqual(t, rep.P99, rep.Max)
			assert.Positive(t, rep.LoadRuns, "the load ran")
			if gor {
				assert.Nil(t, rep.Stats)
			} else {
				require.NotNil(t, rep.Stats)
				assert.Equal(t, 2, rep.Stats.Procs)
			}
		}
	}
}

func TestCommand(t *testing.T) {
	var out, errOut strings.Builder
	require.Equal(t, 0, run(context.Background(), []string{"-requests", "10", "-rate", "500", "-procs", "2"}, nil, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "net echo on fairly, no load\n10 requests: mean")
}

// Every mistake on the command line exits 2 with one line that names the
// command once; -h exits 0.
func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-mode", "udp"}, `-mode must be net or term, not "udp"`},
		{[]string{"-rate", "-3"}, "-rate -3 is not between 0.1 and 10000"},
		{[]string{"-rate", "0"}, "-rate 0 is not between"},
		{[]string{"-procs", "-1"}, "-procs -1 is not between 0 and 256"},
		{[]string{"-procs", "100000"}, "-procs 100000 is not between 0 and 256"},
		{[]string{"-requests", "0"}, "-requests 0 is not between 1 and 1000000"},
		{[]string{"-conns", "0"}, "-conns 0 is not between 1 and 1024"},
		{[]string{"-fib", "-5"}, "-fib -5 is not between 1 and 50"},
		{[]string{"-cutoff", "-1"}, "-cutoff -1 is not between 0 and 50"},
		{[]string{"-addr", ""}, "-addr is empty"},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"stray"}, `unexpected arguments ["stray"]`},
	} {
		var out, errOut strings.Builder
		assert.Equal(t, 2, run(context.Background(), c.args, nil, &out, &errOut), "%q", c.args)
		assert.True(t, strings.HasPrefix(errOut.String(), "echo: "+c.want), "%q: %q", c.args, errOut.String())
		assert.Equal(t, 1, strings.Count(errOut.String(), "echo:"), "%q: one prefix in %q", c.args, errOut.String())
		assert.Empty(t, out.String())
	}
	for _, h := range []string{"-h", "-help"} {
		var out, errOut strings.Builder
		assert.Equal(t, 0, run(context.Background(), []string{h}, nil, &out, &errOut), h)
		assert.Contains(t, errOut.String(), "usage: echo [flags]")
	}
}

// Serving the terminal until its input ends, on fairly.
func TestServeTerm(t *testing.T) {
	var out strings.Builder
	in := strings.NewReader("one\ntwo\nthree")
	require.Equal(t, 0, run(context.Background(), []string{"-client=false", "-mode", "term", "-load", "-fib", "15", "-procs", "2"}, in, &out, &out))
	assert.Equal(t, "one\ntwo\nthree", out.String())
}

// Serving the network until the context ends.
func TestServeNetStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out strings.Builder
	require.Equal(t, 0, run(ctx, []string{"-client=false", "-addr", "127.0.0.1:0", "-procs", "2"}, nil, &out, &out))
	assert.Contains(t, out.String(), "serving on 127.0.0.1:")
}
