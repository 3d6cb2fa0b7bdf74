package jobsmetrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fairlyprompt/fairly/jobs/jobsmetrics"
)

func TestWaitBuckets(t *testing.T) {
	assert.Len(t, jobsmetrics.WaitBuckets, 12)
	assert.InDelta(t, 0.001, jobsmetrics.WaitBuckets[0], 1e-15)
	assert.InDelta(t, 0.001*(1<<22), jobsmetrics.WaitBuckets[11], 1e-9, "4^11 ms, about 70 minutes")
}

func TestHistogram(t *testing.T) {
	var h jobsmetrics.Histogram
	h.Observe(0.0005)
	h.Observe(0.001) // on a bound: counted in that bucket
	h.Observe(2)
	h.Observe(1e9) // above the last bound
	assert.Equal(t, uint64(4), h.Count)
	assert.InDelta(t, 1e9+2.0015, h.Sum, 1e-6)
	assert.Len(t, h.Counts, len(jobsmetrics.WaitBuckets)+1)
	assert.Equal(t, uint64(2), h.Counts[0], "up to 1 ms")
	assert.Equal(t, uint64(1), h.Counts[6], "2 s is in (1.024 s, 4.096 s]")
	assert.Equal(t, uint64(1), h.Counts[len(jobsmetrics.WaitBuckets)], "above the last bound")
	c := h.Clone()
	c.Counts[0]++
	assert.Equal(t, uint64(2), h.Counts[0], "a clone does not share its counts")
}
