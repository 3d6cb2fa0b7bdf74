package jobs

import "time"

// Fairness keys and virtual time: weighted fair queuing between keys.
//
// A key's virtual time vt is its accumulated charge over its weight: the
// finish tag of its latest admitted job. The system virtual time V is the
// smallest start tag among the running jobs, never decreasing (start-time
// fair queuing, with several servers). A key that is new or comes back
// after having nothing pending or running starts at max(vt, V): it keeps
// what it consumed and banks no credit for the time it was away. When a
// key is charged, its vt is first raised to at least V − MaxLag/weight, so
// no key, however long its jobs were blocked, carries more than MaxLag of
// credit.

// fkey is a fairness key.
type fkey struct {
	name     string
	seq      uint64
	weight   float64
	charge   float64 // seconds
	vt       float64 // charge / weight, the key's virtual time
	pending  int
	running  int
	nodes    []*keyNode
	lastSeen time.Time
}

func (k *fkey) idle() bool { return k.pending == 0 && k.running == 0 }

// key gives the named key, starting it at the system virtual time if it
// is new or returns from idleness.
func (c *core) key(name string, now time.Time) *fkey {
	k, ok := c.keys[name]
	if !ok {
		w, ok := c.s.KeyWeights[name]
		if !ok {
			w = 1
		}
		c.seq++
		k = &fkey{name: name, seq: c.seq, weight: w}
		c.keys[name] = k
	}
	if k.idle() && k.vt < c.vnow {
		c.setVT(k, c.vnow)
	}
	k.lastSeen = now
	return k
}

// setVT moves a key's virtual time and restores the heaps that order by it.
func (c *core) setVT(k *fkey, vt float64) {
	k.vt = vt
	k.charge = vt * k.weight
	for _, n := range k.nodes {
		n.bg.keys.fix(n.idx)
	}
}

// recharge adds d seconds to a key's charge.
func (c *core) recharge(k *fkey, d float64) { c.setVT(k, (k.charge+d)/k.weight) }

// charge charges k for e at admission and returns e's start tag: the
// key's virtual time, raised to the lag bound if it fell further behind.
func (c *core) charge(k *fkey, e *entry) float64 {
	if floor := c.vnow - c.maxLag/k.weight; k.vt < floor {
		k.vt = floor
		k.charge = floor * k.weight
	}
	start := k.vt
	c.recharge(k, e.charged)
	return start
}

// advance moves the system virtual time to the smallest start tag of the
// running jobs, if that is later.
func (c *core) advance() {
	if c.starts.len() > 0 {
		c.vnow = max(c.vnow, c.starts.top().startTag)
	}
}
