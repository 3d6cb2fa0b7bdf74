package interactive

import (
	"bufio"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkNetEcho measures one round trip of a 64-byte line through the
// network echo, on an otherwise idle fairly runtime and on plain goroutines.
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
		for b.Loop() {
			_, err := conn.Write(line)
			require.NoError(b, err)
			_, err = r.ReadSlice('\n')
			require.NoError(b, err)
		}
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
