package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarise(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	l := summarise(d)
	assert.Equal(t, Latencies{N: 100, Mean: 50500 * time.Microsecond, P50: 50 * time.Millisecond,
		P90: 90 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}, l)
	assert.Equal(t, Latencies{}, summarise(nil))
	assert.Equal(t, time.Millisecond, summarise([]time.Duration{time.Millisecond}).P99)
}

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
	var out strings.Builder
	require.NoError(t, run(context.Background(), []string{"-requests", "10", "-rate", "500", "-procs", "2"}, nil, &out))
	assert.Contains(t, out.String(), "net echo on fairly, no load\n10 requests: mean")
	assert.ErrorIs(t, run(context.Background(), []string{"-mode", "udp"}, nil, &out), ErrBadMode)
}

// Serving the terminal until its input ends, on fairly.
func TestServeTerm(t *testing.T) {
	var out strings.Builder
	in := strings.NewReader("one\ntwo\nthree")
	require.NoError(t, run(context.Background(), []string{"-client=false", "-mode", "term", "-load", "-fib", "15", "-procs", "2"}, in, &out))
	assert.Equal(t, "one\ntwo\nthree", out.String())
}

// Serving the network until the context ends.
func TestServeNetStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out strings.Builder
	require.NoError(t, run(ctx, []string{"-client=false", "-addr", "127.0.0.1:0", "-procs", "2"}, nil, &out))
	assert.Contains(t, out.String(), "serving on 127.0.0.1:")
}
