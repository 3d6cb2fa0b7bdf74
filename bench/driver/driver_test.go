package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/bench/latency"
	"github.com/fairlyprompt/fairly/bench/trace"
)

// serve runs a tiny echo server that hands each connection to handle.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			go handle(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func echo(c net.Conn) { _, _ = io.Copy(c, c) }

func mustTrace(t *testing.T, src string) *trace.Trace {
	t.Helper()
	tr, err := trace.ParseString(src)
	require.NoError(t, err)
	return tr
}

// TestMain checks that replays leave no goroutine behind once their
// servers are gone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunTCP(t *testing.T) {
	addr := serve(t, echo)
	tr := mustTrace(t, "payload 100; rate 200/s for 100ms; payload 3; burst 5; payload 100000; burst 2")
	res, err := Run(context.Background(), Config{Trace: tr, Addr: addr, Conns: 3})
	require.NoError(t, err)
	assert.Equal(t, "tcp", res.Mode)
	assert.Equal(t, 27, res.Requests)
	assert.Equal(t, 27, res.Sent)
	assert.Equal(t, 27, res.Received)
	assert.Len(t, res.RTT, 27)
	assert.Empty(t, res.Stopped)
	for _, d := range res.RTT {
		assert.Positive(t, d)
		assert.Less(t, d, 10*time.Second, "sanity bound only")
	}
	require.Len(t, res.SentAt, 27)
	require.Len(t, res.ReceivedAt, 27)
	for i := range 27 {
		assert.Positive(t, res.SentAt[i], "request %d", i)
		assert.Greater(t, res.ReceivedAt[i], res.SentAt[i], "request %d", i)
	}
	l := res.Latency()
	assert.Equal(t, 27, l.N)
	assert.Zero(t, l.Lost)
	assert.Equal(t, slices.Max(res.RTT), l.Max)
}

func TestRunStream(t *testing.T) {
	toServer, fromDriver := io.Pipe()
	toDriver, fromServer := io.Pipe()
	go func() { _, _ = io.Copy(fromServer, toServer) }()
	defer func() {
		toServer.Close()
		fromServer.Close() // ends the driver's reader
	}()
	res, err := Run(context.Background(), Config{Trace: mustTrace(t, "burst 3 every 10ms for 50ms"), In: toDriver, Out: fromDriver})
	require.NoError(t, err)
	assert.Equal(t, "stream", res.Mode)
	assert.Equal(t, 15, res.Received)
	assert.Empty(t, res.Stopped)
}

func TestRunLost(t *testing.T) {
	addr := serve(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) // never answers
	res, err := Run(context.Background(), Config{Trace: mustTrace(t, "burst 4"), Addr: addr, Grace: 50 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, 4, res.Sent)
	assert.Zero(t, res.Received)
	assert.Contains(t, res.Stopped, "4 requests unanswered")
	assert.Equal(t, []int64{0, 0, 0, 0}, res.ReceivedAt)
	assert.Equal(t, latency.Summary{Lost: 4}, res.Latency())
}

func TestRunHangUp(t *testing.T) {
	addr := serve(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		line, _ := r.ReadBytes('\n')
		_, _ = c.Write(line)
		c.Close()
	})
	res, err := Run(context.Background(), Config{Trace: mustTrace(t, "rate 100/s for 1s"), Addr: addr})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Received)
	assert.Less(t, res.Sent, 100, "stops sending once the server is gone")
	assert.NotEmpty(t, res.Stopped)
}

func TestRunBadEcho(t *testing.T) {
	addr := serve(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		_, _ = r.ReadBytes('\n')
		_, _ = io.WriteString(c, "garbage\n")
	})
	res, err := Run(context.Background(), Config{Trace: mustTrace(t, "burst 1"), Addr: addr, Grace: 100 * time.Millisecond})
	require.NoError(t, err)
	assert.Contains(t, res.Stopped, "echo of no request")
}

func TestRunCancel(t *testing.T) {
	addr := serve(t, echo)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, Config{Trace: mustTrace(t, "rate 100/s for 1h"), Addr: addr})
	require.NoError(t, err)
	assert.Less(t, res.Sent, 1000)
	assert.Equal(t, res.Sent, res.Received)
	assert.Contains(t, res.Stopped, "stopped by the caller")
}

func TestRunErrors(t *testing.T) {
	tr := mustTrace(t, "burst 1")
	_, err := Run(context.Background(), Config{Trace: tr, Addr: "192.0.2.1:7"})
	assert.ErrorIs(t, err, ErrNotLoopback)
	_, err = Run(context.Background(), Config{Trace: tr})
	assert.ErrorIs(t, err, ErrNoTarget)
	_, err = Run(context.Background(), Config{Addr: "127.0.0.1:1"})
	assert.Error(t, err)
}

func TestRequest(t *testing.T) {
	assert.Equal(t, "00000007\n", string(request(nil, 7, 1)))
	assert.Equal(t, "00000012xx\n", string(request(nil, 12, 10)))
	seq, ok := SeqOf(request(nil, 12, 10))
	assert.True(t, ok)
	assert.Equal(t, 12, seq)
	for _, bad := range []string{"", "0000001", "0000001x\n", "-0000001\n"} {
		_, ok := SeqOf([]byte(bad))
		assert.False(t, ok, "%q", bad)
	}
}

func TestMainCommand(t *testing.T) {
	addr := serve(t, echo)
	var out, errOut bytes.Buffer
	code := Main([]string{"-addr", addr, "-script", "burst 2; pause 10ms; burst 1"}, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	var res Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	assert.Equal(t, 3, res.Received)

	file := filepath.Join(t.TempDir(), "r.json")
	out.Reset()
	code = Main([]string{"-addr", addr, "-trace", "steady50", "-stop-on-eof", "-results", file}, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &res))
	assert.Less(t, res.Sent, 500, "standard input ended at once, so the trace stopped early")
}

func TestMainUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-addr", "127.0.0.1:1", "-stdio"},
		{"-stdio"},
		{"-stdio", "-results", "x", "-stop-on-eof"},
		{"-addr", "127.0.0.1:1", "-conns", "0"},
		{"-addr", "127.0.0.1:1", "-script", "bogus"},
		{"-addr", "127.0.0.1:1", "-trace", "no-such-trace"},
		{"-addr", "127.0.0.1:1", "extra"},
		{"-addr", "127.0.0.1:1", "-conns", "100000"},
		{"-addr", "127.0.0.1:1", "-grace", "-1s"},
		{"-addr", "127.0.0.1:1", "-timeout", "-1s"},
		{"-nope"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, Main(args, strings.NewReader(""), &out, &errOut), "%q", args)
		assert.True(t, strings.HasPrefix(errOut.String(), "driver: "), "%q: %q", args, errOut.String())
		assert.Equal(t, 1, strings.Count(errOut.String(), "driver: "), "%q: one prefix in %q", args, errOut.String())
		assert.Contains(t, errOut.String(), "Run 'driver -h' for the flags.", "%q", args)
	}
	for _, h := range []string{"-h", "-help"} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 0, Main([]string{h}, strings.NewReader(""), &out, &errOut), h)
		assert.Contains(t, errOut.String(), "usage: driver", h)
	}
}
