package kernels

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/thread"
)

const (
	// sortCutoff is the length at or below which a slice is sorted by
	// slices.Sort rather than split into buckets.
	sortCutoff = 1 << 14
	// sortOversample is how many sampled keys stand for each bucket.
	sortOversample = 8
	// sortBlock is the smallest block of keys that one leaf distributes.
	sortBlock = 1 << 15
	// sortMaxBlocks bounds the number of blocks, and with it the size of
	// the block × bucket count table.
	sortMaxBlocks = 256
	// sortMaxBuckets keeps bucket numbers within a uint16.
	sortMaxBuckets = 1 << 16
)

// sampleSort sorts a, using buf and ids (as long as a) as scratch space.
//
// It draws a sample of sortOversample keys per bucket, keeps every
// sortOversample-th of the sorted sample as splitters, and then, in parallel
// over blocks of a, numbers each key's bucket and counts the bucket sizes per
// block; a prefix sum gives every (bucket, block) pair its place, the blocks
// scatter their keys into buf, and the buckets are copied back and sorted in
// parallel, recursively when a bucket is still large.
func sampleSort(p par, a, buf []uint64, ids []uint16) {
	n := len(a)
	if n <= sortCutoff {
		slices.Sort(a)
		return
	}
	buckets := min(sortMaxBuckets, (2*n+sortCutoff-1)/sortCutoff)
	splitters := splittersOf(a, buckets)

	blocks := min(sortMaxBlocks, (n+sortBlock-1)/sortBlock)
	span := (n + blocks - 1) / blocks
	block := func(b int) (int, int) { return b * span, min((b+1)*span, n) }
	count := make([]int, blocks*buckets) // count[b*buckets+k]: keys of block b in bucket k
	parFor(p, 0, blocks, 1, func(p par, lo, hi int) {
		for b := lo; b < hi; b++ {
			from, to := block(b)
			row := count[b*buckets : (b+1)*buckets]
			p.stride(from, to, func(from, to int) {
				for i := from; i < to; i++ {
					k, _ := slices.BinarySearch(splitters, a[i])
					ids[i] = uint16(k)
					row[k]++
				}
			})
		}
	})

	// Turn counts into offsets, bucket-major, so each bucket is contiguous
	// and each block fills its own part of it; start[k] is where bucket k begins.
	start := make([]int, buckets+1)
	sum := 0
	for k := range buckets {
		start[k] = sum
		for b := range blocks {
			c := count[b*buckets+k]
			count[b*buckets+k] = sum
			sum += c
		}
	}
	start[buckets] = n

	parFor(p, 0, blocks, 1, func(p par, lo, hi int) {
		for b := lo; b < hi; b++ {
			from, to := block(b)
			next := count[b*buckets : (b+1)*buckets]
			p.stride(from, to, func(from, to int) {
				for i := from; i < to; i++ {
					k := ids[i]
					buf[next[k]] = a[i]
					next[k]++
				}
			})
		}
	})

	sortBuckets(p, a, buf, ids, start, sampleSort)
}

// splittersOf draws sortOversample keys of a per bucket and keeps every
// sortOversample-th of the sorted sample: the buckets−1 splitters.
func splittersOf(a []uint64, buckets int) []uint64 {
	n := len(a)
	sample := make([]uint64, buckets*sortOversample)
	for i := range sample {
		sample[i] = a[mix(uint64(n)+uint64(i))%uint64(n)]
	}
	slices.Sort(sample)
	splitters := make([]uint64, buckets-1)
	for i := range splitters {
		splitters[i] = sample[(i+1)*sortOversample]
	}
	return splitters
}

// sortBuckets copies the buckets of buf (bucket k is buf[start[k]:start[k+1]])
// back into a and sorts them in parallel with sort, the recursion.
func sortBuckets(p par, a, buf []uint64, ids []uint16, start []int, sort func(p par, a, buf []uint64, ids []uint16)) {
	parFor(p, 0, len(start)-1, 1, func(p par, lo, hi int) {
		for k := lo; k < hi; k++ {
			from, to := start[k], start[k+1]
			copy(a[from:to], buf[from:to])
			if to-from == len(a) { // one bucket holds everything: splitting cannot help
				slices.Sort(a[from:to])
				continue
			}
			sort(p, a[from:to], buf[from:to], ids[from:to])
		}
	})
}

// fineSampleSort is sampleSort with no hand-tuned size, for the fine pars:
// √n buckets of about √n keys (so two levels take 8M keys to buckets of
// about 50), parallel loops over every key, and bucket counts and places
// claimed with atomic adds, as there are no blocks to count per. Its base
// case is the algorithm's: at or below sortOversample² keys the sample would
// be as large as the input, so slices.Sort (there, an insertion sort) takes
// over.
func fineSampleSort(p par, a, buf []uint64, ids []uint16) {
	n := len(a)
	if n <= sortOversample*sortOversample {
		slices.Sort(a)
		return
	}
	buckets := min(sortMaxBuckets, int(math.Sqrt(float64(n))))
	splitters := splittersOf(a, buckets)
	count := make([]atomic.Int64, buckets)
	parFor(p, 0, n, 1, func(_ par, lo, hi int) {
		for i := lo; i < hi; i++ {
			k, _ := slices.BinarySearch(splitters, a[i])
			ids[i] = uint16(k)
			count[k].Add(1)
		}
	})
	start := make([]int, buckets+1)
	for k := range buckets {
		c := int(count[k].Load())
		count[k].Store(int64(start[k]))
		start[k+1] = start[k] + c
	}
	parFor(p, 0, n, 1, func(_ par, lo, hi int) {
		for i := lo; i < hi; i++ {
			buf[count[ids[i]].Add(1)-1] = a[i]
		}
	})
	sortBuckets(p, a, buf, ids, start, fineSampleSort)
}

// checksum is a multiset fingerprint of keys: a sum of hashes, which no
// order of the keys changes.
func checksum(keys []uint64) uint64 {
	var s uint64
	for _, k := range keys {
		s += mix(k)
	}
	return s
}

// sorter is an instance of the sample sort kernel on random 64-bit keys.
// A run copies the input into keys and sorts that.
type sorter struct {
	input, keys, buf []uint64
	ids              []uint16
	sum              uint64 // checksum of input
}

func newSort(n int) *sorter {
	n = max(n, 1)
	s := &sorter{
		input: make([]uint64, n),
		keys:  make([]uint64, n),
		buf:   make([]uint64, n),
		ids:   make([]uint16, n),
	}
	for i := range s.input {
		s.input[i] = mix(seed*3 + uint64(i))
	}
	s.sum = checksum(s.input)
	return s
}

func (s *sorter) Seq()                 { s.run(seq) }
func (s *sorter) Goroutines()          { s.run(gor) }
func (s *sorter) Fairly(c *thread.Ctx) { s.run(fairly(c)) }

// Fine and FineGoroutines sort with fineSampleSort, looping over every key.
func (s *sorter) Fine(c *thread.Ctx) { s.run(fineFairly(c)) }
func (s *sorter) FineGoroutines()    { s.run(fineGor) }

func (s *sorter) run(p par) {
	parFor(p, 0, len(s.keys), sortBlock, func(_ par, lo, hi int) { copy(s.keys[lo:hi], s.input[lo:hi]) })
	if p.fine {
		fineSampleSort(p, s.keys, s.buf, s.ids)
		return
	}
	sampleSort(p, s.keys, s.buf, s.ids)
}

// Check verifies that the keys are in order and are the input's keys.
func (s *sorter) Check() error {
	for i := 1; i < len(s.keys); i++ {
		if s.keys[i-1] > s.keys[i] {
			return fmt.Errorf("%w: sort of %d keys: keys %d and %d are out of order", ErrWrongResult, len(s.keys), i-1, i)
		}
	}
	if checksum(s.keys) != s.sum {
		return fmt.Errorf("%w: sort of %d keys: the sorted keys are not the input's", ErrWrongResult, len(s.keys))
	}
	return nil
}
