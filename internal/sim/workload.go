package sim

import (
	"fmt"
	"math"
)

// Workloads: thread DAGs with the shapes of fairbench's kernels. A node's
// Step says what its thread's code does: work (Pre), forks of all kids but
// the last, a direct call of the last, joins of the forks youngest first,
// more work (Post), then possibly the next node in the same frame (a loop
// or a sequence of phases). Kids depend on the node alone, never on the
// schedule, so a DAG is the same whoever runs it.

// Node is a vertex of a DAG: its Shape and the shape's own coordinates.
type Node struct {
	Shape   Shape
	A, B, C int64
	ID      uint64
}

// Step is a node's code; see above. Yield passes a preemption point before
// Next (thread.Yield in a loop).
type Step struct {
	Pre, Post int64
	Kids      []Node
	Next      *Node
	Yield     bool
}

// Shape expands a node into its Step. Kids of two or fewer are appended
// to buf (room for two, owned by the caller's frame), so that the common
// binary fork allocates nothing.
type Shape interface {
	Expand(n Node, buf []Node) Step
}

// Grain gives the sequential costs of the kernels' leaves, in nanoseconds,
// measured on the real kernels (see Costs and docs/simulation.md).
type Grain struct {
	FibLeaf int64 // sequential fib(FibLeafN): a leaf of fib
	UTSNode int64 // sequential fib(UTSNodeN): a node of UTS
	BFSEdge int64 // one edge scanned by BFS
	SortKey int64 // one key of sample sort through one level of comparisons
}

// Kernel is a DAG at low priority, with its work (node costs only, as a
// sequential run takes them) and span (with the runtime's spawn and join
// costs along the critical path).
type Kernel struct {
	Name string
	Size int64 // the shape's size parameter (n, depth, vertices, keys)
	Root Node
	Work int64
	Span int64
	// Forks and Barriers are the DAG's fork depth and barrier count (see
	// measure): places where its critical path may wait for work to be
	// dealt (see Check).
	Forks, Barriers int64
}

// KernelNames are the simulated kernels, in the order of the tables.
var KernelNames = []string{"fib", "uts", "bfs", "sort"}

// NewKernel builds the named kernel, of the smallest size whose work is at
// least work nanoseconds.
func NewKernel(name string, work int64, g Grain, c Costs) (*Kernel, error) {
	var mk func(size int64) Node
	var size int64
	switch name {
	case "fib":
		mk, size = func(n int64) Node { return Node{Shape: fib{g}, A: n} }, FibLeafN+1
	case "uts":
		mk, size = func(d int64) Node { return Node{Shape: uts{g, d}, ID: utsRoot} }, 1
	case "bfs":
		mk, size = func(n int64) Node { return bfsRoot(g, n) }, 1<<12
	case "sort":
		mk, size = func(n int64) Node { return sortRoot(g, n) }, 1<<16
	default:
		return nil, fmt.Errorf("sim: unknown kernel %q (known: %v)", name, KernelNames)
	}
	for {
		k := &Kernel{Name: name, Size: size, Root: mk(size)}
		m := workSpan(k.Root, c)
		k.Work, k.Span, k.Forks, k.Barriers = m.work, m.span, m.forks, m.barriers
		if k.Work >= work {
			return k, nil
		}
		switch name {
		case "fib", "uts":
			size++
		default:
			size = max(size+1, int64(float64(size)*1.25))
		}
	}
}

// BoundTime is a lower bound on the kernel's time on procs workers under
// any scheduler: max(W/P, S) summed over its phases (the sequential
// composition of its root, as in BFS and sort; the whole DAG for the
// others), since a phase starts only after the one before has ended. It
// is tighter than max(W/P, S) for a kernel whose sequential phases (sort's
// sample sort and prefix sums) fall where the rest of the work cannot
// overlap them: sort at P = 128 has W/S = 337, yet no schedule beats
// 0.90·P (docs/simulation.md, finding 6).
func (k *Kernel) BoundTime(procs int, c Costs) int64 {
	ps, ok := k.Root.Shape.(phases)
	if !ok {
		return max(k.Work/int64(procs), k.Span)
	}
	var t int64
	for _, ph := range ps {
		m := workSpan(ph, c)
		t += max(m.work/int64(procs), m.span)
	}
	return t
}

// workSpan measures the DAG under n; see measure.
func workSpan(n Node, c Costs) measure {
	return walk(n, c, make(map[memoKey]measure))
}

// measure is what walk finds of a subtree: its work and span, its fork
// depth (the most fork levels on one path from the root to a leaf) and its
// barriers (the most joins of parallel work, on one such path, that the
// code goes on from sequentially: a level of BFS, a phase of sort).
type measure struct{ work, span, forks, barriers int64 }

// memoKey names a subtree whose measure depends on its coordinates alone
// (fib's n, a loop's length and cost), so each is walked once.
type memoKey struct {
	kind    uint8 // 1 fib, 2 loop
	a, b, c int64
}

func walk(n Node, c Costs, memo map[memoKey]measure) (m measure) {
	var key memoKey
	switch n.Shape.(type) {
	case fib:
		key = memoKey{kind: 1, a: n.A}
	case loop:
		key = memoKey{kind: 2, a: n.B - n.A, b: n.C, c: int64(n.ID)}
	}
	if key != (memoKey{}) {
		if got, ok := memo[key]; ok {
			return got
		}
		defer func() { memo[key] = m }()
	}
	for {
		var buf [2]Node
		st := n.Shape.Expand(n, buf[:0])
		m.work += st.Pre + st.Post
		m.span += st.Pre + st.Post
		if k := int64(len(st.Kids)); k > 0 {
			var longest, deepest, barriers int64
			for _, kid := range st.Kids {
				km := walk(kid, c, memo)
				m.work += km.work
				longest = max(longest, km.span)
				deepest = max(deepest, km.forks)
				barriers = max(barriers, km.barriers)
			}
			m.span += longest + (k-1)*(c.Spawn+c.Join)
			m.forks += deepest
			m.barriers += barriers
			if k > 1 {
				m.forks++
			}
			if st.Next != nil && deepest > 0 {
				m.barriers++
			}
		}
		if st.Next == nil {
			return m
		}
		n = *st.Next
	}
}

// FibLeafN is the n at or below which the simulated fib runs
// sequentially: leaves of fib(16), a few microseconds, fine enough that a
// fork costs about a percent of a leaf and coarse enough to simulate 128
// workers in seconds. (The real kernel forks at every call.)
const FibLeafN = 16

// fib is Fibonacci: binary, node n forks n-1 and calls n-2. A leaf fib(m)
// costs its share of a fib(FibLeafN) by call count.
type fib struct{ g Grain }

// Expand is a call of fib.
func (f fib) Expand(n Node, buf []Node) Step {
	if n.A <= FibLeafN {
		return Step{Pre: max(1, f.g.FibLeaf*FibCalls(n.A)/FibCalls(FibLeafN))}
	}
	return Step{Pre: max(1, f.g.FibLeaf/FibCalls(FibLeafN)), Kids: append(buf, Node{Shape: f, A: n.A - 1}, Node{Shape: f, A: n.A - 2})}
}

// FibCalls is how many calls sequential fib(n) makes: it sizes the
// simulated leaves, and bench/harness's calibration counts forks with it.
func FibCalls(n int64) int64 {
	a, b := int64(1), int64(1) // calls of fib(0), fib(1)
	for range n {
		a, b = b, a+b+1
	}
	return a
}

// utsRoot names the root of the simulated tree (any fixed identifier).
const utsRoot = 0x5eedfa1e2019

// uts is Unbalanced Tree Search: a geometric tree of mean branching 4 to
// depth limit A, each node a fixed piece of work, its children forked
// through a binary spawn tree (utsRange), as the real kernel does. A node
// computes fib(UTSNodeN) where the real one computes fib(12): four times
// the work, so that 128 workers' worth of tree simulates in seconds.
const UTSNodeN = 15

type uts struct {
	g     Grain
	limit int64
}

// Expand is a node of the tree.
func (u uts) Expand(n Node, buf []Node) Step {
	k := utsChildren(n.ID, n.A, u.limit)
	st := Step{Pre: u.g.UTSNode}
	if k > 0 {
		st.Kids = append(buf, Node{Shape: utsRange{u}, A: n.A, B: 0, C: int64(k), ID: n.ID})
	}
	return st
}

// utsRange forks the children [B, C) of node ID at depth A.
type utsRange struct{ u uts }

// Expand halves the range of children, down to one.
func (r utsRange) Expand(n Node, buf []Node) Step {
	if n.C-n.B == 1 {
		return Step{Kids: append(buf, Node{Shape: r.u, A: n.A + 1, ID: mix(n.ID ^ uint64(n.B+1)*0xd1b54a32d192ed03)})}
	}
	mid := (n.B + n.C) / 2
	return Step{Kids: append(buf, Node{Shape: r, A: n.A, B: n.B, C: mid, ID: n.ID}, Node{Shape: r, A: n.A, B: mid, C: n.C, ID: n.ID})}
}

// utsChildren draws the geometric number of children (mean 4) of node id.
func utsChildren(id uint64, depth, limit int64) int {
	if depth >= limit {
		return 0
	}
	u := float64(mix(id)>>11) / (1 << 53)
	return int(math.Log(1-u) / math.Log(4.0/5))
}

// mix is splitmix64's finaliser, as the real kernels hash identifiers.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// loop is a parallel for over [A, B) split in halves down to single
// iterations (the real kernels' parFor), each of C elements costing ID
// nanoseconds apiece; an iteration passes a preemption point every
// strideLen elements (the kernels' stride), and a zero ID marks an
// iteration without (a library call).
type loop struct{}

// strideLen is the kernels' strideLen: elements between two preemption
// points of a long leaf.
const strideLen = 1 << 13

// Expand halves the loop, down to one iteration.
func (loop) Expand(n Node, buf []Node) Step {
	if n.B-n.A > 1 {
		mid := (n.A + n.B) / 2
		return Step{Kids: append(buf, Node{Shape: loop{}, A: n.A, B: mid, C: n.C, ID: n.ID}, Node{Shape: loop{}, A: mid, B: n.B, C: n.C, ID: n.ID})}
	}
	return stride(n.C, int64(n.ID))
}

// stride is a leaf of elems elements of cost each: a piece of at most
// strideLen, a preemption point, and the rest.
func stride(elems, cost int64) Step {
	if elems <= strideLen {
		return Step{Pre: elems * cost}
	}
	return Step{Pre: strideLen * cost, Yield: true, Next: &Node{Shape: loop{}, B: 1, C: elems - strideLen, ID: uint64(cost)}}
}

// phases runs its list of nodes one after the other (a sequential
// composition: level-synchronous BFS, the phases of sample sort); A is the
// index of the phase to run.
type phases []Node

// Expand runs phase A, then goes on with the next.
func (p phases) Expand(n Node, buf []Node) Step {
	st := Step{Kids: append(buf, p[n.A])}
	if int(n.A)+1 < len(p) {
		st.Next = &Node{Shape: p, A: n.A + 1}
	}
	return st
}

// work is a node of sequential work of A nanoseconds.
type work struct{}

// Expand is the work.
func (work) Expand(n Node, _ []Node) Step { return Step{Pre: n.A} }

// parallel gives a loop of iterations of elems elements costing cost each,
// with preemption points every strideLen elements.
func parallel(iterations, elems, cost int64) Node {
	return Node{Shape: loop{}, A: 0, B: max(1, iterations), C: max(1, elems), ID: uint64(max(1, cost))}
}

// BFS constants, as the real kernel's: 8 random edges per vertex stored
// both ways, frontier chunks of 256 vertices, fills of 16Ki vertices.
const (
	bfsDegree = 16
	bfsChunk  = 256
	bfsFill   = 1 << 14
)

// bfsRoot is level-synchronous BFS of a random graph of n vertices: a
// parallel fill, then per level a parallel scan of the frontier's chunks;
// a level ends when all its chunks do. Frontier sizes follow the expected
// growth of a random graph: f' = U·(1 − exp(−deg·f/n)) of the U unvisited.
func bfsRoot(g Grain, n int64) Node {
	ps := phases{parallel((n+bfsFill-1)/bfsFill, bfsFill, max(1, g.BFSEdge/8))}
	front, unvisited := 1.0, float64(n-1)
	for front >= 1 {
		chunks := int64(math.Ceil(front / bfsChunk))
		ps = append(ps, parallel(chunks, 1, int64(math.Min(front, bfsChunk))*bfsDegree*g.BFSEdge))
		next := unvisited * (1 - math.Exp(-bfsDegree*front/float64(n)))
		front, unvisited = math.Floor(next), unvisited-math.Floor(next)
	}
	return Node{Shape: ps}
}

// Sample sort constants, as the real kernel's.
const (
	sortCutoff     = 1 << 14
	sortOversample = 8
	sortBlock      = 1 << 15
	sortMaxBlocks  = 256
)

// sortRoot is the sample sort of n keys: narrow (sort the sample), wide
// (count each block's keys per bucket), narrow (prefix sums), wide (scatter),
// wide (sort the buckets).
func sortRoot(g Grain, n int64) Node {
	buckets := (2*n + sortCutoff - 1) / sortCutoff
	blocks := min(sortMaxBlocks, (n+sortBlock-1)/sortBlock)
	perBlock := (n + blocks - 1) / blocks
	lg := func(x int64) int64 { return int64(math.Ceil(math.Log2(float64(max(x, 2))))) }
	sample := buckets * sortOversample
	bucket := n / buckets
	return Node{Shape: phases{
		{Shape: work{}, A: sample * lg(sample) * g.SortKey},
		parallel(blocks, perBlock, lg(buckets)*g.SortKey),
		{Shape: work{}, A: blocks * buckets * g.SortKey / 4},
		parallel(blocks, perBlock, g.SortKey),
		parallel(buckets, 1, bucket*lg(bucket)*g.SortKey), // slices.Sort of a bucket: no point inside
	}}
}

// sinkRoot is fairbench's time sink: 2P threads that compute sinkChunk and
// yield, forever.
func sinkRoot(procs int, c Costs) Node {
	spin := Node{Shape: spinner{c.SinkChunk}}
	kids := make([]Node, 2*procs)
	for i := range kids {
		kids[i] = spin
	}
	return Node{Shape: fanout(kids)}
}

// fanout forks all its kids.
type fanout []Node

// Expand forks the kids.
func (f fanout) Expand(Node, []Node) Step { return Step{Kids: f} }

// spinner computes chunk nanoseconds and yields, for ever.
type spinner struct{ chunk int64 }

// Expand computes a chunk, yields and starts again.
func (s spinner) Expand(n Node, _ []Node) Step { return Step{Pre: s.chunk, Next: &n, Yield: true} }

// echoNode is an interactive thread: work nanoseconds, no forks.
func echoNode(d int64) Node { return Node{Shape: work{}, A: d} }
