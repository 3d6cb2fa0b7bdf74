package latency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestQuantileNearestRank(t *testing.T) {
	s := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	assert.Equal(t, 1, Quantile(s, 0))
	assert.Equal(t, 5, Quantile(s, 0.5))   // rank ⌈5⌉
	assert.Equal(t, 6, Quantile(s, 0.51))  // rank ⌈5.1⌉
	assert.Equal(t, 10, Quantile(s, 0.99)) // rank ⌈9.9⌉
	assert.Equal(t, 10, Quantile(s, 1))
	assert.Equal(t, 1, Quantile(s, -1), "q below 0 is 0")
	assert.Equal(t, 10, Quantile(s, 2), "q above 1 is 1")
	assert.Equal(t, 7.5, Quantile([]float64{7.5}, 0.99))
}

func TestOf(t *testing.T) {
	d := make([]time.Duration, 2000)
	for i := range d {
		d[len(d)-1-i] = time.Duration(i+1) * time.Microsecond // descending: Of sorts a copy
	}
	s := Of(d, 3)
	assert.Equal(t, Summary{
		N: 2000, Lost: 3, Mean: 1000500 * time.Nanosecond,
		P50: 1000 * time.Microsecond, P90: 1800 * time.Microsecond, P99: 1980 * time.Microsecond,
		P999: 1998 * time.Microsecond, Max: 2000 * time.Microsecond,
	}, s)
	assert.Equal(t, 2000*time.Microsecond, d[0], "the input is left as it was")
	assert.Equal(t, Summary{Lost: 2}, Of(nil, 2))
}
