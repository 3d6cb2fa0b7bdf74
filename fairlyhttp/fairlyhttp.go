// Package fairlyhttp runs net/http handlers on a fairly runtime: each
// request's handler is a fairly thread, at a priority chosen per request
// (by route prefix, header value or a function of the request). Requests at
// an interactive priority then answer promptly beside heavy parallel work
// at a lower priority in the same process, with no checkpoints to write:
// the runtime gives each priority its share of the processors.
//
//	mux := http.NewServeMux()
//	mux.HandleFunc("/search", search)
//	mux.HandleFunc("/report", report)
//	h := fairlyhttp.Handler(rt, mux,
//		fairlyhttp.Default(ui),              // every request at ui...
//		fairlyhttp.Route("/report", batch))  // ...but reports at batch
//	log.Fatal(http.ListenAndServe(":8080", h))
//
// The handler receives the request with its context as usual; Thread gives
// it its thread, to fork parallel work with thread.Spawn, thread.Fork2 or
// thread.For. A handler runs on a worker of the runtime: wrap calls that
// block for long (a database query, a large upload read) in thread.Await so
// that the worker serves other threads meanwhile.
//
// A panic in the handler becomes a 500 response (or, when the response has
// already begun, an aborted one, as net/http does) and is reported to the
// runtime's runtime.Config.OnPanic; the server keeps running. Once the
// runtime is closing, requests get 503 Service Unavailable.
package fairlyhttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// ErrConfig is matched (errors.Is) by the value Handler and Middleware panic
// with when they are misconfigured: a nil runtime or handler, no default
// priority, or a priority of an order the runtime does not use.
var ErrConfig = errors.New("fairlyhttp: invalid configuration")

// Option configures Handler and Middleware.
type Option func(*config)

// rule gives a request's priority, or false when it does not apply.
type rule func(*http.Request) (fairness.Priority, bool)

type config struct {
	def   fairness.Priority
	rules []rule
	prios []fairness.Priority // every priority named, checked against the runtime
}

// Default sets the priority of the requests no other option places. It is
// required.
func Default(p fairness.Priority) Option {
	return func(c *config) {
		c.def = p
		c.prios = append(c.prios, p)
	}
}

// Route places the requests whose URL path starts with prefix at p.
func Route(prefix string, p fairness.Priority) Option {
	return addRule(p, func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, prefix) })
}

// Header places the requests whose header name has the value value at p
// (http.Header.Get: the first value, name in any case). Use it for a
// priority the client chooses, e.g. Header("X-Priority", "batch", batch).
func Header(name, value string, p fairness.Priority) Option {
	key := textproto.CanonicalMIMEHeaderKey(name) // once, not per request
	return addRule(p, func(r *http.Request) bool {
		vs := r.Header[key]
		return len(vs) > 0 && vs[0] == value
	})
}

// Func places each request at the priority f returns; the zero
// fairness.Priority leaves the request to the next options and Default.
// f runs on the serving goroutine, before the thread starts: keep it cheap.
// A priority the runtime does not know gives a 500 response.
func Func(f func(*http.Request) fairness.Priority) Option {
	return func(c *config) {
		c.rules = append(c.rules, func(r *http.Request) (fairness.Priority, bool) {
			p := f(r)
			return p, !p.IsZero()
		})
	}
}

func addRule(p fairness.Priority, match func(*http.Request) bool) Option {
	return func(c *config) {
		c.prios = append(c.prios, p)
		c.rules = append(c.rules, func(r *http.Request) (fairness.Priority, bool) { return p, match(r) })
	}
}

// handler is the http.Handler that Handler returns.
type handler struct {
	rt   *runtime.Runtime
	next http.Handler
	cfg  config
}

// Handler returns a handler that serves each request by running next as a
// thread of rt. Options choose the request's priority: they are tried in
// the order given and the first that applies wins; Default places the rest.
//
// Handler panics with an error matching ErrConfig when rt or next is nil,
// no Default is given, or a priority does not belong to rt's order: these
// are mistakes in the program, found when it starts.
func Handler(rt *runtime.Runtime, next http.Handler, opts ...Option) http.Handler {
	h := &handler{rt: rt, next: next}
	for _, o := range opts {
		o(&h.cfg)
	}
	switch {
	case rt == nil:
		panic(fmt.Errorf("%w: nil runtime", ErrConfig))
	case next == nil:
		panic(fmt.Errorf("%w: nil handler", ErrConfig))
	case h.cfg.def.IsZero():
		panic(fmt.Errorf("%w: no Default priority", ErrConfig))
	}
	for _, p := range h.cfg.prios {
		if _, err := rt.Rank(p); err != nil {
			panic(fmt.Errorf("%w: priority %v: %w", ErrConfig, p, err))
		}
	}
	return h
}

// Middleware is Handler in the form routers and middleware chains take:
// func(next http.Handler) http.Handler.
func Middleware(rt *runtime.Runtime, opts ...Option) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return Handler(rt, next, opts...) }
}

// priority chooses the priority of r.
func (h *handler) priority(r *http.Request) fairness.Priority {
	for _, rule := range h.cfg.rules {
		if p, ok := rule(r); ok {
			return p
		}
	}
	return h.cfg.def
}

// ctxKey is the context key of a request's thread.
type ctxKey struct{}

// Thread returns the thread that serves r, for the handler to fork work
// with (thread.Spawn, thread.Fork2, thread.For), or nil when r is not
// served by Handler. Like every *thread.Ctx it is valid only in the
// handler's own code, not in goroutines it starts.
func Thread(r *http.Request) *thread.Ctx {
	c, _ := r.Context().Value(ctxKey{}).(*thread.Ctx)
	return c
}

// ServeHTTP runs the handler as a thread at the request's priority and
// answers for it when it cannot: 503 when the runtime is closing, 500 when
// the handler panicked or the thread could not start.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.priority(r)
	rw := &responseWriter{ResponseWriter: w}
	// The thread has the request's context: cancelled when the client
	// leaves. RunContext returns only once the handler has.
	_, err := thread.RunContext(r.Context(), h.rt, p, func(c *thread.Ctx) struct{} {
		h.next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, c)))
		return struct{}{}
	})
	if err == nil {
		return
	}
	var pe *thread.PanicError
	switch {
	case errors.As(err, &pe):
		if pe.Value == http.ErrAbortHandler {
			panic(http.ErrAbortHandler) // the handler's own way to abort: net/http does it quietly
		}
		h.rt.ReportPanic(p, pe.Value, pe.Stack)
		if rw.wrote {
			panic(http.ErrAbortHandler) // too late for a 500: cut the response short, as net/http would
		}
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
	case errors.Is(err, runtime.ErrClosed):
		http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
	default: // a priority of Func the runtime does not know; a Goexit in a handler run by a worker (on the serving goroutine it ends that goroutine)
		slog.Error("fairlyhttp: request not served", "method", r.Method, "path", r.URL.Path, "priority", p.String(), "err", err)
		if !rw.wrote {
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		}
	}
}

// responseWriter remembers whether the response has begun, so that a panic
// after that aborts the response instead of appending a 500 to it.
type responseWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *responseWriter) WriteHeader(code int) {
	if code >= 200 { // 1xx responses are informational: the real one is still to come
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer (deadlines,
// full duplex).
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush keeps handlers that stream (w.(http.Flusher)) working.
func (w *responseWriter) Flush() {
	w.wrote = true
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack keeps handlers that take over the connection (w.(http.Hijacker))
// working; it fails with http.ErrNotSupported where the server's writer
// cannot.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.wrote = true
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
