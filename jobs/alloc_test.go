package jobs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAllocateDocumentExample(t *testing.T) {
	// 16 slots; A weight 3 cap 12; B weight 1 min 2 cap 6.
	var a allocator
	alloc, _, _ := a.allocate(16, []share{{weight: 3, limit: 12}, {weight: 1, min: 2, limit: 6}})
	assert.Equal(t, []int{10, 6}, alloc)
	// B has only 3 pending: A is held at its cap, one slot stays idle.
	alloc, _, _ = a.allocate(16, []share{{weight: 3, limit: 12}, {weight: 1, min: 2, limit: 3}})
	assert.Equal(t, []int{12, 3}, alloc)
	// Nothing to do, nothing allocated.
	alloc, _, _ = a.allocate(4, []share{{weight: 1, min: 2, limit: 0}})
	assert.Equal(t, []int{0}, alloc)
}
