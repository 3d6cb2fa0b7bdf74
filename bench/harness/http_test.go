package harness

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTTPExperiment runs the http experiment at a tiny size and checks its
// records, table and chart.
func TestHTTPExperiment(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Experiments, cfg.Procs, cfg.Reps = []string{"http"}, []int{2}, 1
	cfg.HTTP = HTTPConfig{Rate: 100, For: 200 * time.Millisecond, KiB: 4}
	res, err := Run(cfg)
	require.NoError(t, err)
	require.Len(t, res.Records, 3*len(httpSystems), "alone, idle and batch on each system")
	for _, rec := range res.Records {
		assert.Equal(t, kindHTTP, rec.Kind)
		what := rec.System + " " + rec.Kernel
		if rec.Kernel == loadAlone {
			assert.Nil(t, rec.Echo, what)
		} else {
			require.NotNil(t, rec.Echo, what)
			assert.Positive(t, rec.Echo.Sent, what)
			assert.Equal(t, rec.Echo.Sent, rec.Echo.Received, "%s: %s", what, rec.Echo.Stopped)
		}
		assert.Equal(t, rec.Kernel != loadIdle, rec.Throughput > 0, "%s: only a batch has a throughput", what)
	}
	require.NotNil(t, res.HTTP)
	assert.Equal(t, cfg.HTTP, *res.HTTP)

	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, "# test\n\n", res))
	st, err := os.Stat(filepath.Join(dir, "http.png"))
	require.NoError(t, err)
	assert.Positive(t, st.Size())
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	tbs := tables(string(md))
	require.Len(t, tbs, 1)
	require.Len(t, tbs[0], 2+len(httpSystems))
	for _, r := range tbs[0][2:] {
		assert.Len(t, r, len(tbs[0][0]))
		assert.NotContains(t, r, "—", "row %q has a missing measurement", r)
	}
	assert.Equal(t, []string{"net/http", "2"}, tbs[0][2][:2])
	assert.Equal(t, "none", tbs[0][2][11], "plain net/http gives the batch no share")
	assert.Equal(t, "0.50", tbs[0][3][11], "fairlyhttp's batch has half")
}

func TestHTTPOptional(t *testing.T) {
	assert.NotContains(t, Experiments, "http", "the default suite stays short")
	cfg := tinyConfig(t)
	cfg.Experiments = slices.Concat(Experiments, OptionalExperiments)
	assert.NoError(t, cfg.Validate())
	for name, h := range map[string]HTTPConfig{
		"rate":   {Rate: MaxEchoRate + 1},
		"length": {For: -time.Second},
		"work":   {KiB: MaxHTTPKiB + 1},
	} {
		cfg.HTTP = h
		err := cfg.Validate()
		assert.ErrorIs(t, err, ErrConfig, name)
		assert.ErrorContains(t, err, "http", name)
	}
}

func TestHTTPWork(t *testing.T) {
	get := func(target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		httpWork(w, httptest.NewRequest(http.MethodGet, target, nil))
		return w
	}
	a, b := get("/work?seed=1&kib=4"), get("/work?seed=2&kib=4")
	assert.Equal(t, http.StatusOK, a.Code)
	assert.Len(t, strings.TrimSpace(a.Body.String()), 64, "a SHA-256 in hex")
	assert.NotEqual(t, a.Body.String(), b.Body.String(), "the seed counts")
	assert.Equal(t, a.Body.String(), get("/work?seed=1&kib=4").Body.String())
	for _, bad := range []string{"/work", "/work?seed=x&kib=1", "/work?seed=1&kib=2000"} {
		assert.Equal(t, http.StatusBadRequest, get(bad).Code, bad)
	}
}
