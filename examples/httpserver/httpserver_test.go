package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServe starts the server on a random port with its background
// computation and checks both endpoints and the stats.
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, Config{Procs: 2, UIShare: 50, Background: true, BgFib: cutoff + 2}, ln) }()

	base := "http://" + ln.Addr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		require.NoError(t, err, path)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err, path)
		return resp.StatusCode, string(body)
	}
	code, body := get("/hash?text=fairly")
	assert.Equal(t, http.StatusOK, code)
	assert.Len(t, strings.TrimSpace(body), 64, "a SHA-256 in hex")
	_, again := get("/hash?text=fairly")
	assert.Equal(t, body, again)

	code, body = get("/fib?n=30")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "832040\n", body)
	code, _ = get("/fib?n=99")
	assert.Equal(t, http.StatusBadRequest, code)

	code, body = get("/stats")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "ui: ")
	assert.Contains(t, body, "owed 50% when busy")

	cancel()
	assert.NoError(t, <-done)
}

func TestFlags(t *testing.T) {
	for args, want := range map[string]string{
		"-procs -1":     "-procs -1 is not between 0 and 256",
		"-ui-share 100": "-ui-share 100 is not between 1 and 99",
		"-bg-fib 60":    "-bg-fib 60 is not between 20 and 45",
		"-addr nowhere": "listen tcp: address nowhere: missing port in address",
	} {
		var out, errOut strings.Builder
		code := run(context.Background(), strings.Fields(args), &out, &errOut)
		assert.NotEqual(t, 0, code, args)
		assert.Contains(t, errOut.String(), want, args)
	}
}
