package fairlyhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/fairlyprompt/fairly/fairlyhttp"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

// get prints the body of a GET of url.
func get(url string) {
	resp, err := http.Get(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%s %s\n", resp.Status, body)
}

// A server whose searches run at ui and whose reports run at batch, with
// half of the processors each when both are busy.
func ExampleHandler() {
	o := fairness.NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	_ = o.Less(batch, ui)
	crit, _ := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 50, batch: 50})
	rt, err := runtime.New(runtime.Config{Criterion: crit})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s at %v", r.URL.Path, fairlyhttp.Thread(r).Priority())
	})
	srv := httptest.NewServer(fairlyhttp.Handler(rt, mux,
		fairlyhttp.Default(ui),
		fairlyhttp.Route("/reports/", batch)))
	defer srv.Close()

	get(srv.URL + "/search")
	get(srv.URL + "/reports/daily")
	// Output:
	// 200 OK /search at ui
	// 200 OK /reports/daily at batch
}

// A handler that sums a large slice in parallel on its own thread.
func ExampleThread() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	top := rt.Order().Top()

	xs := make([]int, 1<<16)
	for i := range xs {
		xs[i] = i
	}
	sum := func(c *thread.Ctx, xs []int) int {
		s := 0
		for _, x := range xs {
			s += x
		}
		return s
	}
	h := fairlyhttp.Handler(rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := fairlyhttp.Thread(r)
		half := len(xs) / 2
		a, b := thread.Fork2(c, sum, xs[:half], xs[half:])
		fmt.Fprint(w, a+b)
	}), fairlyhttp.Default(top))
	srv := httptest.NewServer(h)
	defer srv.Close()

	get(srv.URL)
	// Output:
	// 200 OK 2147450880
}

// A client chooses the priority of its request with a header.
func ExampleHeader() {
	o := fairness.NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	_ = o.Less(batch, ui)
	rt, err := runtime.New(runtime.Config{Order: o})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	h := fairlyhttp.Handler(rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, fairlyhttp.Thread(r).Priority())
	}), fairlyhttp.Default(ui), fairlyhttp.Header("X-Priority", "batch", batch))

	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-Priority", "batch")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Body)
	// Output: batch
}
