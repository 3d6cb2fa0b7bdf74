package fairlyprom_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fairlyprompt/fairly/fairlyprom"
	"github.com/fairlyprompt/fairly/fairness"
	"github.com/fairlyprompt/fairly/runtime"
	"github.com/fairlyprompt/fairly/thread"
)

func ExampleNewRuntimeCollector() {
	o := fairness.NewOrder()
	ui, batch := o.New("ui"), o.New("batch")
	if err := o.Less(batch, ui); err != nil {
		panic(err)
	}
	crit, err := fairness.NewCriterion(o, map[fairness.Priority]float64{ui: 75, batch: 25})
	if err != nil {
		panic(err)
	}
	rt, err := runtime.New(runtime.Config{Procs: 2, Criterion: crit})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(fairlyprom.NewRuntimeCollector(rt))
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{}) // serve it at /metrics

	if _, err := thread.Run(rt, batch, func(c *thread.Ctx) int { return fib(c, 20) }); err != nil {
		panic(err)
	}

	// A scrape.
	rec := httptest.NewRecorder()
	metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		switch {
		case strings.HasPrefix(line, "fairly_runtime_share_ratio{"):
			fmt.Print(line)
		case strings.HasPrefix(line, `fairly_runtime_cpu_seconds_total{priority="batch"}`):
			fmt.Println("batch ran:", !strings.HasSuffix(line, " 0\n"))
		}
	}
	// Output:
	// batch ran: true
	// fairly_runtime_share_ratio{priority="batch"} 0.25
	// fairly_runtime_share_ratio{priority="bottom"} 0
	// fairly_runtime_share_ratio{priority="top"} 0
	// fairly_runtime_share_ratio{priority="ui"} 0.75
}
