package harness

import (
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairlyprompt/fairly/bench/driver"
	"github.com/fairlyprompt/fairly/bench/interactive"
)

// TestPartsOf checks the split of response times on made-up clocks: 200
// requests whose parts are 100 µs, 10 µs and 50 µs, but for one slow
// request whose delivery takes 5 ms, and one the server never saw.
func TestPartsOf(t *testing.T) {
	const n = 200
	res := &driver.Result{SentAt: make([]int64, n+1), ReceivedAt: make([]int64, n+1)}
	var log []interactive.Timing
	for i := range n {
		sent := int64(1_000_000_000 + i*20_000_000)
		delivery := int64(100_000)
		if i == 7 {
			delivery = 5_000_000
		}
		read := sent + delivery
		resumed := read + 10_000
		res.SentAt[i], res.ReceivedAt[i] = sent, resumed+50_000
		log = append(log, interactive.Timing{Head: fmt.Sprintf("%08dxxxxxxxx", i), Read: read, Resumed: resumed, Written: resumed + 20_000})
	}
	res.SentAt[n], res.ReceivedAt[n] = 9e9, 9e9+1e6 // answered, but not in the server's log
	log = append(log, interactive.Timing{Head: "garbage"})

	all := func(int64) bool { return true }
	p := partsOf(res, log, all)
	require.NotNil(t, p)
	assert.Equal(t, n, p.Matched)
	assert.Equal(t, 100*time.Microsecond, p.DeliveryP50)
	assert.Equal(t, 10*time.Microsecond, p.FairlyP99)
	assert.Equal(t, 50*time.Microsecond, p.ReplyP99)
	// The slowest 1 % (two requests): the slow one and an ordinary one.
	assert.Equal(t, (5*time.Millisecond+100*time.Microsecond)/2, p.TailDelivery)
	assert.Equal(t, 10*time.Microsecond, p.TailFairly)

	assert.Nil(t, partsOf(nil, log, all))
	assert.Nil(t, partsOf(res, nil, all))
	early := partsOf(res, log, func(sent int64) bool { return sent < res.SentAt[100] })
	require.NotNil(t, early)
	assert.Equal(t, 100, early.Matched, "only the requests keep keeps")
}

// TestPhases checks the phase of a request by its sending time, and that
// the tables count only the measured requests.
func TestPhases(t *testing.T) {
	spans := []Span{{Start: 100, End: 200}, {Start: 300, End: 400}}
	for sent, want := range map[int64]string{50: phaseBefore, 100: phaseMeasured, 199: phaseMeasured, 200: phaseBetween,
		350: phaseMeasured, 400: phaseAfter, 500: phaseAfter} {
		assert.Equal(t, want, phaseOf(spans, sent), "sent at %d", sent)
	}
	assert.Equal(t, phaseMeasured, phaseOf(nil, 5), "without spans every request counts")

	// Five requests, one per phase and two measured: one answered in 1 µs,
	// one never answered; the one sent between the spans took 9 ms.
	rec := &Record{Measured: spans, Echo: &driver.Result{
		Sent: 5, Received: 4,
		SentAt:     []int64{50, 150, 250, 350, 450},
		ReceivedAt: []int64{60, 1150, 250 + 9e6, 0, 460},
		RTT:        []time.Duration{10, 1000, 9e6, 10},
	}}
	rec.countPhases()
	assert.Equal(t, map[string]int{phaseBefore: 1, phaseMeasured: 2, phaseBetween: 1, phaseAfter: 1}, rec.PhaseRequests)
	l := echoLatency(rec)
	assert.Equal(t, 1, l.N)
	assert.Equal(t, 1, l.Lost)
	assert.Equal(t, time.Microsecond, l.Max, "the slow request between the spans is left out")
	rec.Measured = nil
	assert.Equal(t, 9*time.Millisecond, echoLatency(rec).Max, "without spans it counts")
}

// TestCollectorSpan checks that a span sees a collection made inside it.
func TestCollectorSpan(t *testing.T) {
	c := startCollector()
	goruntime.GC()
	got := c.stop()
	assert.GreaterOrEqual(t, got.Cycles, uint32(1))
	assert.Positive(t, got.LongestPause)
}
