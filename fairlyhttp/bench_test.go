package fairlyhttp_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/fairlyprompt/fairly/fairlyhttp"
	"github.com/fairlyprompt/fairly/thread"
)

// discard is a ResponseWriter that allocates nothing, so that allocs/op
// counts the middleware's allocations alone.
type discard struct{ h http.Header }

func (d discard) Header() http.Header        { return d.h }
func (discard) Write(b []byte) (int, error)  { return len(b), nil }
func (discard) WriteHeader(int)              {}
func (d discard) reset() http.ResponseWriter { clear(d.h); return d }

// BenchmarkMiddlewareIdle measures what the middleware adds to a request
// on an idle runtime, against calling the handler directly as plain
// net/http does. Each iteration times one plain call and one call through
// the middleware; ns/op is the middleware's, overhead-ns/op the difference.
//
//   - back-to-back: requests follow each other at once, so a worker is
//     still spinning from the last one when the next comes (a steady
//     stream of requests).
//   - sparse: a 2 ms pause (not timed) before each request lets every
//     worker park, as on a server that gets a request now and then; the
//     thread then waits for a parked worker's OS thread to wake.
//   - thread.Run: a bare thread.Run of an empty function in place of the
//     middleware, back to back: the part of the overhead that is the
//     runtime's own cost of starting a thread from a goroutine and waiting
//     for it.
func BenchmarkMiddlewareIdle(b *testing.B) {
	plain := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	w := discard{h: make(http.Header)}
	for _, bc := range []struct {
		name   string
		pause  time.Duration
		direct bool // a bare thread.Run instead of the middleware
	}{{"back-to-back", 0, false}, {"sparse", 2 * time.Millisecond, false}, {"thread.Run", 0, true}} {
		b.Run(bc.name, func(b *testing.B) {
			// A runtime per case, closed at its end, so that the case leaves
			// GOMAXPROCS as it found it.
			s := newSetup(b)
			h := fairlyhttp.Handler(s.rt, plain, fairlyhttp.Default(s.ui))
			call := func() { h.ServeHTTP(w.reset(), r) }
			if bc.direct {
				call = func() {
					_, _ = thread.Run(s.rt, s.ui, func(*thread.Ctx) struct{} { return struct{}{} })
				}
			}
			var plainT, fairlyT time.Duration
			var n int
			fairlyEach := make([]time.Duration, 1<<16) // a sample: the last 64Ki requests
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if bc.pause > 0 {
					time.Sleep(bc.pause)
				}
				t0 := time.Now()
				plain.ServeHTTP(w.reset(), r)
				t1 := time.Now()
				call()
				d := time.Since(t1)
				plainT += t1.Sub(t0)
				fairlyT += d
				fairlyEach[n%len(fairlyEach)] = d
				n++
			}
			fairlyEach = fairlyEach[:min(n, len(fairlyEach))]
			slices.Sort(fairlyEach)
			b.ReportMetric(float64(fairlyT)/float64(n), "ns/op")
			b.ReportMetric(float64(fairlyT-plainT)/float64(n), "overhead-ns/op")
			b.ReportMetric(float64(fairlyEach[len(fairlyEach)/2]), "p50-ns")
			b.ReportMetric(float64(fairlyEach[len(fairlyEach)*99/100]), "p99-ns")
		})
	}
}
