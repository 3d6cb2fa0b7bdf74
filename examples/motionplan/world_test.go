package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMapRoundTrip(t *testing.T) {
	g := Generate(rand.New(rand.NewPCG(1, 2)), 40, 30, 10, 0.05)
	var buf bytes.Buffer
	require.NoError(t, WriteMap(&buf, g))
	text := buf.String()
	require.True(t, strings.HasPrefix(text, "type octile\nheight 30\nwidth 40\nmap\n"))
	back, err := ReadMap(&buf)
	require.NoError(t, err)
	assert.Equal(t, g, back)
}

func TestReadMapTerrain(t *testing.T) {
	g, err := ReadMap(strings.NewReader("type octile\nheight 2\nwidth 4\nmap\n.G@T\r\nSOW.\n"))
	require.NoError(t, err)
	var free []Point
	for y := 0; y < g.H; y++ {
		for x := 0; x < g.W; x++ {
			if !g.Blocked(Point{x, y}) {
				free = append(free, Point{x, y})
			}
		}
	}
	assert.Equal(t, []Point{{0, 0}, {1, 0}, {0, 1}, {3, 1}}, free)
	assert.True(t, g.Blocked(Point{-1, 0}), "off-grid cells are blocked")
}

func TestReadMapErrors(t *testing.T) {
	for name, text := range map[string]string{
		"no header":   "map\n...\n",
		"bad width":   "type octile\nheight 1\nwidth x\nmap\n.\n",
		"short row":   "type octile\nheight 1\nwidth 3\nmap\n..\n",
		"rows short":  "type octile\nheight 2\nwidth 1\nmap\n.\n",
		"header junk": "typeoctile\nmap\n",
	} {
		_, err := ReadMap(strings.NewReader(text))
		assert.True(t, errors.Is(err, ErrMapFormat), "%s: %v", name, err)
	}
}

// The maps kept in the repository parse and connect their corners.
func TestStoredMaps(t *testing.T) {
	files, err := filepath.Glob("maps/*.map")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		g, err := ReadMap(bytes.NewReader(data))
		require.NoError(t, err, f)
		_, ok := AStar(g, Point{1, 1}, Point{g.W - 2, g.H - 2})
		assert.True(t, ok, "%s: corners not connected", f)
	}
}

func TestGenerateConnectsCorners(t *testing.T) {
	for seed := range uint64(20) {
		g := Generate(rand.New(rand.NewPCG(seed, 7)), 48, 32, 8, 0.25)
		_, ok := AStar(g, Point{1, 1}, Point{g.W - 2, g.H - 2})
		assert.True(t, ok, "seed %d", seed)
	}
}
