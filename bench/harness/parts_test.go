package harness

import (
	"fmt"
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

	p := partsOf(res, log)
	require.NotNil(t, p)
	assert.Equal(t, n, p.Matched)
	assert.Equal(t, 100*time.Microsecond, p.DeliveryP50)
	assert.Equal(t, 10*time.Microsecond, p.FairlyP99)
	assert.Equal(t, 50*time.Microsecond, p.ReplyP99)
	// The slowest 1 % (two requests): the slow one and an ordinary one.
	assert.Equal(t, (5*time.Millisecond+100*time.Microsecond)/2, p.TailDelivery)
	assert.Equal(t, 10*time.Microsecond, p.TailFairly)

	assert.Nil(t, partsOf(nil, log))
	assert.Nil(t, partsOf(res, nil))
}
