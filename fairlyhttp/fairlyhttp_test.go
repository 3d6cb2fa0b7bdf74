package fairlyhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairlyprompt/fairly/fairlyhttp"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// TestMain checks that no test leaves a goroutine behind: every runtime is
// closed and every server shut.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// setup is a runtime of two workers with priorities ui > batch at 50-50.
type setup struct {
	rt        *runtime.Runtime
	ui, batch fairness.Priority
	mu        sync.Mutex
	panics    []any // reported to OnPanic
}

func newSetup(t testing.TB) *setup {
	t.Helper()
	o := fairness.NewOrder()
	s := &setup{ui: o.New("ui"), batch: o.New("batch")}
	require.NoError(t, o.Less(s.batch, s.ui))
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{s.ui: 50, s.batch: 50})
	require.NoError(t, err)
	s.rt, err = runtime.New(runtime.Config{Procs: 2, Criterion: crit, OnPanic: func(_ fairness.Priority, v any, _ []byte) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.panics = append(s.panics, v)
	}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.rt.Close()) })
	return s
}

func (s *setup) reported() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]any(nil), s.panics...)
}

// serve runs h for one request and returns the recorded response.
func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// priorityName answers with the priority of the thread serving it.
var priorityName = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	fmt.Fprint(w, fairlyhttp.Thread(r).Priority())
})

func TestPriorityChoice(t *testing.T) {
	s := newSetup(t)
	h := fairlyhttp.Handler(s.rt, priorityName,
		fairlyhttp.Default(s.ui),
		fairlyhttp.Header("X-Priority", "batch", s.batch),
		fairlyhttp.Func(func(r *http.Request) fairness.Priority {
			if r.URL.Query().Get("bulk") == "1" {
				return s.batch
			}
			return fairness.Priority{} // undecided: the next options
		}),
		fairlyhttp.Route("/reports/", s.batch),
		fairlyhttp.Route("/", s.ui), // never reached for /reports/: the first match wins
	)
	for _, tc := range []struct {
		target, header, want string
	}{
		{"/search", "", "ui"},
		{"/reports/daily", "", "batch"},
		{"/search", "batch", "batch"},
		{"/search", "ui", "ui"},
		{"/search?bulk=1", "", "batch"},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.target, nil)
		if tc.header != "" {
			r.Header.Set("x-priority", tc.header)
		}
		w := serve(h, r)
		assert.Equal(t, http.StatusOK, w.Code, tc.target)
		assert.Equal(t, tc.want, w.Body.String(), "%s with X-Priority %q", tc.target, tc.header)
	}
	// Middleware is the same handler in a router's shape.
	w := serve(fairlyhttp.Middleware(s.rt, fairlyhttp.Default(s.batch))(priorityName), httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, "batch", w.Body.String())
}

func TestConfigErrors(t *testing.T) {
	s := newSetup(t)
	foreign := fairness.NewOrder().New("elsewhere")
	for name, build := range map[string]func(){
		"nil runtime":     func() { fairlyhttp.Handler(nil, priorityName, fairlyhttp.Default(s.ui)) },
		"nil handler":     func() { fairlyhttp.Handler(s.rt, nil, fairlyhttp.Default(s.ui)) },
		"no default":      func() { fairlyhttp.Handler(s.rt, priorityName, fairlyhttp.Route("/", s.ui)) },
		"foreign default": func() { fairlyhttp.Handler(s.rt, priorityName, fairlyhttp.Default(foreign)) },
		"foreign in route": func() {
			fairlyhttp.Handler(s.rt, priorityName, fairlyhttp.Default(s.ui), fairlyhttp.Route("/", foreign))
		},
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				assert.ErrorIs(t, err, fairlyhttp.ErrConfig, name)
			}()
			build()
		}()
	}
	// A foreign priority from Func shows only when a request comes.
	h := fairlyhttp.Handler(s.rt, priorityName, fairlyhttp.Default(s.ui),
		fairlyhttp.Func(func(*http.Request) fairness.Priority { return foreign }))
	assert.Equal(t, http.StatusInternalServerError, serve(h, httptest.NewRequest(http.MethodGet, "/", nil)).Code)
}

func TestPanicBecomes500(t *testing.T) {
	s := newSetup(t)
	boom := errors.New("boom")
	h := fairlyhttp.Handler(s.rt, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(boom) }), fairlyhttp.Default(s.ui))
	w := serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Equal(t, []any{boom}, s.reported())

	// The server lives on: the next request is served.
	ok := fairlyhttp.Handler(s.rt, priorityName, fairlyhttp.Default(s.ui))
	assert.Equal(t, "ui", serve(ok, httptest.NewRequest(http.MethodGet, "/", nil)).Body.String())
}

func TestPanicAfterWriteAborts(t *testing.T) {
	s := newSetup(t)
	h := fairlyhttp.Handler(s.rt, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "partial")
		panic("late")
	}), fairlyhttp.Default(s.ui))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	assert.Error(t, err, "the response is cut short, not completed with a 500")
	assert.Equal(t, []any{"late"}, s.reported())
}

func TestAbortHandlerPassesThrough(t *testing.T) {
	s := newSetup(t)
	h := fairlyhttp.Handler(s.rt, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }), fairlyhttp.Default(s.ui))
	assert.PanicsWithValue(t, http.ErrAbortHandler, func() { serve(h, httptest.NewRequest(http.MethodGet, "/", nil)) })
	assert.Empty(t, s.reported(), "an abort is the handler's choice, not a failure to report")
}

func TestClosedRuntimeGives503(t *testing.T) {
	s := newSetup(t)
	h := fairlyhttp.Handler(s.rt, priorityName, fairlyhttp.Default(s.ui))
	require.NoError(t, s.rt.Close())
	assert.Equal(t, http.StatusServiceUnavailable, serve(h, httptest.NewRequest(http.MethodGet, "/", nil)).Code)
}

func TestHandlerForksOnItsThread(t *testing.T) {
	s := newSetup(t)
	h := fairlyhttp.Handler(s.rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := fairlyhttp.Thread(r)
		squares := make([]int, 1000)
		if err := thread.For(c, 0, len(squares), func(_ *thread.Ctx, i int) { squares[i] = i * i }); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := thread.Spawn(c, c.Priority(), func(*thread.Ctx) int { return squares[999] })
		last, err := thread.Join(c, h)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, last, " ", r.Context().Err())
	}), fairlyhttp.Default(s.ui))
	w := serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, "998001 <nil>", w.Body.String())
	assert.Nil(t, fairlyhttp.Thread(httptest.NewRequest(http.MethodGet, "/", nil)), "a request served elsewhere has no thread")
}

func TestRequestContextCarried(t *testing.T) {
	s := newSetup(t)
	type key struct{}
	h := fairlyhttp.Handler(s.rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Context().Value(key{}), " ", r.Context().Err())
	}), fairlyhttp.Default(s.ui))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "carried"))
	defer cancel()
	w := serve(h, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	assert.Equal(t, "carried <nil>", w.Body.String())
	cancel()
	w = serve(h, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	assert.Equal(t, "carried context canceled", w.Body.String(), "the handler sees its client leave")
}

func TestFlusherKept(t *testing.T) {
	s := newSetup(t)
	h := fairlyhttp.Handler(s.rt, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "chunk")
		w.(http.Flusher).Flush()
	}), fairlyhttp.Default(s.ui))
	w := serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.True(t, w.Flushed)
	assert.Equal(t, "chunk", w.Body.String())
}

func TestManyConcurrentRequests(t *testing.T) {
	s := newSetup(t)
	h := fairlyhttp.Handler(s.rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %v", r.URL.Query().Get("i"), fairlyhttp.Thread(r).Priority())
	}), fairlyhttp.Default(s.ui), fairlyhttp.Route("/batch", s.batch))
	srv := httptest.NewServer(h)
	defer srv.Close()
	const n = 200
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			path := []string{"/ui", "/batch"}[i%2]
			resp, err := srv.Client().Get(fmt.Sprintf("%s%s?i=%d", srv.URL, path, i))
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			assert.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			bodies[i] = string(b)
		})
	}
	wg.Wait()
	for i, b := range bodies {
		assert.Equal(t, fmt.Sprintf("%d %s", i, []string{"ui", "batch"}[i%2]), b)
	}
}
