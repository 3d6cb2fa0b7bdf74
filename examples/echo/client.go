package main

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fairlyprompt/fairly/bench/latency"
)

// line gives a summary on one line, rounded to microseconds.
func line(l latency.Summary) string {
	return fmt.Sprintf("%d requests: mean %v, p50 %v, p90 %v, p99 %v, max %v",
		l.N, l.Mean.Round(time.Microsecond), l.P50.Round(time.Microsecond), l.P90.Round(time.Microsecond),
		l.P99.Round(time.Microsecond), l.Max.Round(time.Microsecond))
}

// drive sends n lines over rw at the given rate (requests per second,
// paced from the start so a slow answer does not slow the schedule down
// beyond itself) and records each line's round-trip time.
func drive(rw io.ReadWriter, n int, rate float64, id int) ([]time.Duration, error) {
	br := bufio.NewReader(rw)
	interval := time.Duration(float64(time.Second) / rate)
	begin := time.Now()
	lat := make([]time.Duration, 0, n)
	for i := range n {
		if wait := time.Until(begin.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		req := fmt.Sprintf("client %d request %d\n", id, i)
		sent := time.Now()
		if _, err := io.WriteString(rw, req); err != nil {
			return lat, err
		}
		got, err := br.ReadString('\n')
		if err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(sent))
		if got != req {
			return lat, fmt.Errorf("echo: sent %q, got %q", req, got)
		}
	}
	return lat, nil
}

// driveAll runs one drive per stream, splitting n requests and the rate
// between them, and merges their measurements.
func driveAll(streams []io.ReadWriter, n int, rate float64) ([]time.Duration, error) {
	var (
		mu    sync.Mutex
		all   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	k := len(streams)
	for i, s := range streams {
		share := n / k
		if i < n%k {
			share++
		}
		wg.Go(func() {
			lat, err := drive(s, share, rate/float64(k), i)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return all, first
}
