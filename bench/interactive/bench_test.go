package interactive

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/bench/latency"
)

// BenchmarkNetEcho measures one round trip of a 64-byte line through the
// network echo, on an otherwise idle fairly runtime and on plain goroutines,
// and reports the round trips' p50 and p99 in µs.
func BenchmarkNetEcho(b *testing.B) {
	run := func(b *testing.B, s *Server) {
		conn, err := net.Dial("tcp", s.Addr().String())
		require.NoError(b, err)
		defer conn.Close()
		r := bufio.NewReader(conn)
		line := make([]byte, 64)
		for i := range line {
			line[i] = 'x'
		}
		line[63] = '\n'
		var rtt []time.Duration
		for b.Loop() {
			start := time.Now()
			_, err := conn.Write(line)
			require.NoError(b, err)
			_, err = r.ReadSlice('\n')
			require.NoError(b, err)
			rtt = append(rtt, time.Since(start))
		}
		l := latency.Of(rtt, 0)
		b.ReportMetric(float64(l.P50.Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(l.P99.Nanoseconds())/1e3, "p99-µs")
	}
	b.Run("fairly", func(b *testing.B) {
		rt, hi := newRuntime(b)
		ln, err := Listen()
		require.NoError(b, err)
		s := ServeNet(rt, hi, ln)
		run(b, s)
		require.NoError(b, s.Close())
		require.NoError(b, rt.Close())
	})
	b.Run("goroutines", func(b *testing.B) {
		ln, err := Listen()
		require.NoError(b, err)
		s := ServeNetGoroutines(ln)
		run(b, s)
		require.NoError(b, s.Close())
	})
}
