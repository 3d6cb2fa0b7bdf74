package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunHTTPOpenLoop holds the first ten requests until all ten are under
// way: a driver that waited for answers before sending more would never
// get there.
func TestRunHTTPOpenLoop(t *testing.T) {
	const held = 10
	var arrived atomic.Int64
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n := arrived.Add(1); n == held {
			once.Do(func() { close(release) })
		} else if n < held {
			<-release
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	res, err := RunHTTP(context.Background(), HTTPConfig{URL: srv.URL + "/x", Rate: 200, For: 300 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, "http", res.Mode)
	assert.Empty(t, res.Stopped)
	assert.Equal(t, res.Sent, res.Received)
	assert.Len(t, res.RTT, res.Sent)
	assert.GreaterOrEqual(t, res.Sent, held)
	assert.InDelta(t, res.Requests, res.Sent, 2, "the schedule is kept")
	// The first request waited for the tenth, sent 9 intervals (45 ms) after
	// the first's scheduled start; the attacker's ticks may come a little
	// early (one run measured 44.96 ms), so one interval is left as slack.
	assert.GreaterOrEqual(t, res.RTT[0], 40*time.Millisecond)
}

func TestRunHTTPFailures(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%2 == 0 {
			http.Error(w, "no", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	res, err := RunHTTP(context.Background(), HTTPConfig{URL: srv.URL, Rate: 100, For: 100 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, res.Sent/2, res.Sent-res.Received)
	assert.Contains(t, res.Stopped, "status 503")
}

func TestRunHTTPErrors(t *testing.T) {
	for _, cfg := range []HTTPConfig{
		{URL: "http://example.com/", Rate: 1, For: time.Second},
		{URL: "ftp://127.0.0.1:1/", Rate: 1, For: time.Second},
		{URL: "http://127.0.0.1:1/", Rate: 0, For: time.Second},
		{URL: "http://127.0.0.1:1/", Rate: 1, For: 0},
	} {
		_, err := RunHTTP(context.Background(), cfg)
		assert.Error(t, err, "%+v", cfg)
	}
	_, err := RunHTTP(context.Background(), HTTPConfig{URL: "http://10.0.0.1:80/", Rate: 1, For: time.Second})
	assert.ErrorIs(t, err, ErrNotLoopback)
}

func TestMainHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, Main([]string{"http", "-url", srv.URL, "-rate", "50", "-for", "100ms"}, nil, &stdout, &stderr), stderr.String())
	var res Result
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	assert.Equal(t, res.Sent, res.Received)
	assert.Positive(t, res.Sent)

	stderr.Reset()
	assert.Equal(t, 2, Main([]string{"http", "-url", srv.URL, "-rate", "-1"}, nil, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "driver http: rate -1 is not in (0, 10000]")
}
