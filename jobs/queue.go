package jobs

// The pending jobs that may be admitted are kept in bands, one per
// (effective tier, base tier). In a band, each group with work has a heap
// of its fairness keys by virtual time, and each key a heap of its jobs in
// in-key order. Choosing a job therefore looks at one key per group.

// band holds the pending, not urgent jobs of one effective tier and one
// base tier: a job counts against its base tier's cap, so a whole band
// can wait for that cap without its jobs being examined one by one.
type band struct {
	byGroup []*bandGroup // by group index
	active  []*bandGroup // groups with jobs in this band
	pending int
}

type bandGroup struct {
	g    *group
	keys indexed[*keyNode]
	pos  int // in band.active, -1 when absent
}

type keyNode struct {
	k    *fkey
	bg   *bandGroup
	jobs indexed[*entry]
	idx  int
	// The first job's submission time and sequence, copied here so that
	// comparing keys of equal virtual time reads no job.
	headAt  int64
	headSeq uint64
}

// setHead copies the first job's tie-break into the node.
func (n *keyNode) setHead() {
	e := n.jobs.top()
	n.headAt, n.headSeq = e.submitted.UnixNano(), e.seq
}

// entryLess is the order inside a key: Smith's rule with aging when
// SmithFactor is set, first submitted first otherwise; then submission
// order.
func (c *core) entryLess(a, b *entry) bool {
	if c.s.SmithFactor > 0 {
		if a.smith != b.smith {
			return a.smith > b.smith
		}
	} else if !a.submitted.Equal(b.submitted) {
		return a.submitted.Before(b.submitted)
	}
	return a.seq < b.seq
}

// nodeLess orders candidates: by key virtual time, ties by the arrival of
// the keys' first jobs, as the fair-queuing design sorts by (cost,
// arrival); for one key present under several base tiers, by the in-key
// order.
func (c *core) nodeLess(a, b *keyNode) bool {
	switch {
	case a.k == b.k:
		return c.entryLess(a.jobs.top(), b.jobs.top())
	case a.k.vt != b.k.vt:
		return a.k.vt < b.k.vt
	case a.headAt != b.headAt:
		return a.headAt < b.headAt
	}
	return a.headSeq < b.headSeq
}

// place puts a pending job where dispatch looks for it.
func (c *core) place(e *entry) {
	if e.urgent {
		e.st = urgentQ
		c.urgent.push(e)
		return
	}
	e.st = queued
	b := c.bands[e.eff][e.base]
	for len(b.byGroup) <= e.grp.idx {
		b.byGroup = append(b.byGroup, nil)
	}
	bg := b.byGroup[e.grp.idx]
	if bg == nil {
		bg = &bandGroup{g: e.grp, pos: -1, keys: newIndexed(c.nodeLess,
			func(n *keyNode, i int) { n.idx = i })}
		b.byGroup[e.grp.idx] = bg
	}
	var node *keyNode
	for _, n := range e.key.nodes {
		if n.bg == bg {
			node = n
			break
		}
	}
	if node == nil {
		node = &keyNode{k: e.key, bg: bg, jobs: newIndexed(c.entryLess, func(e *entry, i int) { e.idx = int32(i) })}
		e.key.nodes = append(e.key.nodes, node)
		e.node = node
		node.jobs.push(e)
		node.setHead()
		bg.keys.push(node)
	} else {
		e.node = node
		node.jobs.push(e)
		if e.idx == 0 { // a new first job: the tie-break may change
			node.setHead()
			bg.keys.fix(node.idx)
		}
	}
	if bg.pos < 0 {
		bg.pos = len(b.active)
		b.active = append(b.active, bg)
	}
	b.pending++
}

// unplace takes a pending job out of its band or the urgent queue.
func (c *core) unplace(e *entry) {
	if e.urgIdx >= 0 {
		c.urgent.remove(int(e.urgIdx))
		return
	}
	if e.idx < 0 {
		return
	}
	node := e.node
	first := e.idx == 0
	node.jobs.remove(int(e.idx))
	e.node = nil
	b := c.bands[e.eff][e.base]
	b.pending--
	if node.jobs.len() > 0 {
		if first {
			node.setHead()
			node.bg.keys.fix(node.idx)
		}
		return
	}
	bg := node.bg
	bg.keys.remove(node.idx)
	ns := node.k.nodes
	for i, n := range ns {
		if n == node {
			ns[i] = ns[len(ns)-1]
			ns[len(ns)-1] = nil
			node.k.nodes = ns[:len(ns)-1]
			break
		}
	}
	if bg.keys.len() == 0 {
		last := b.active[len(b.active)-1]
		b.active[bg.pos] = last
		last.pos = bg.pos
		b.active = b.active[:len(b.active)-1]
		bg.pos = -1
	}
}
