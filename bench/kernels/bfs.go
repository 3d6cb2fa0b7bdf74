package kernels

import (
	"fmt"
	"sync/atomic"

	"github.com/fairlyprompt/fairly/thread"
)

const (
	// bfsEdgesPerVertex is how many random undirected edges the generator
	// draws per vertex; each is stored in both directions.
	bfsEdgesPerVertex = 8
	// bfsChunk is the number of frontier vertices a leaf of the parallel
	// BFS scans: about 16 edges each.
	bfsChunk = 256
	// bfsFill is the number of vertices a leaf resets or copies.
	bfsFill = 1 << 14
)

// graph is an undirected graph in compressed sparse rows: the neighbours of
// v are adj[off[v]:off[v+1]].
type graph struct {
	off []int
	adj []int32
}

func (g *graph) vertices() int { return len(g.off) - 1 }

func (g *graph) neighbours(v int32) []int32 { return g.adj[g.off[v]:g.off[v+1]] }

// randomGraph draws m = bfsEdgesPerVertex·n edges with uniformly random
// ends (self-loops and repeats included, as in an Erdős–Rényi multigraph).
func randomGraph(n int) *graph {
	m := bfsEdgesPerVertex * n
	ends := func(e int) (int32, int32) {
		h := mix(seed + uint64(e))
		return int32((h >> 32) % uint64(n)), int32(uint32(h) % uint32(n))
	}
	g := &graph{off: make([]int, n+1), adj: make([]int32, 2*m)}
	for e := range m {
		u, v := ends(e)
		g.off[u+1]++
		g.off[v+1]++
	}
	for v := range n {
		g.off[v+1] += g.off[v]
	}
	next := append([]int(nil), g.off[:n]...)
	for e := range m {
		u, v := ends(e)
		g.adj[next[u]] = v
		next[u]++
		g.adj[next[v]] = u
		next[v]++
	}
	return g
}

// bfs is an instance of the breadth-first search kernel, from vertex 0 of a
// random graph. A run leaves a BFS tree in parent (−1 for unreached
// vertices); the levels are explored one after the other, each frontier in
// parallel chunks whose discoveries are claimed by compare-and-swap.
type bfs struct {
	g      *graph
	parent []atomic.Int32
	// front and next are the current and the next frontier; found[k] holds
	// what chunk k of the frontier discovered, and at[k] where it goes in next.
	front, next []int32
	found       [][]int32
	at          []int
	// tail is how much of next the fine-grained versions have filled.
	tail atomic.Int64
	dist []int32 // reference distances, computed by the first Check
}

func newBFS(n int) *bfs { return bfsOn(randomGraph(max(n, 1))) }

// bfsOn prepares a search of g from vertex 0.
func bfsOn(g *graph) *bfs {
	n := g.vertices()
	return &bfs{
		g:      g,
		parent: make([]atomic.Int32, n),
		front:  make([]int32, 0, n),
		next:   make([]int32, 0, n),
	}
}

func (b *bfs) Seq()                 { b.run(seq) }
func (b *bfs) Goroutines()          { b.run(gor) }
func (b *bfs) Fairly(c *thread.Ctx) { b.run(fairly(c)) }

// Fine loops with thread.For over every vertex of each frontier, and of the
// graph to reset the tree; the discoveries go straight into the next
// frontier, each at a place claimed with an atomic counter, as there are no
// chunks whose findings could be gathered.
func (b *bfs) Fine(c *thread.Ctx) { b.run(fineFairly(c)) }
func (b *bfs) FineGoroutines()    { b.run(fineGor) }

func (b *bfs) run(p par) {
	parFor(p, 0, len(b.parent), bfsFill, func(_ par, lo, hi int) {
		for v := lo; v < hi; v++ {
			b.parent[v].Store(-1)
		}
	})
	const root = 0
	b.parent[root].Store(root)
	b.front = append(b.front[:0], root)
	for len(b.front) > 0 {
		if p.fine {
			b.fineLevel(p)
		} else {
			b.level(p)
		}
		b.front, b.next = b.next, b.front
	}
}

// level explores the frontier and leaves the next one in b.next.
func (b *bfs) level(p par) {
	chunks := (len(b.front) + bfsChunk - 1) / bfsChunk
	for len(b.found) < chunks {
		b.found = append(b.found, nil)
	}
	parFor(p, 0, chunks, 1, func(_ par, lo, hi int) {
		for k := lo; k < hi; k++ {
			out := b.found[k][:0]
			for _, u := range b.front[k*bfsChunk : min((k+1)*bfsChunk, len(b.front))] {
				for _, v := range b.g.neighbours(u) {
					if b.parent[v].Load() == -1 && b.parent[v].CompareAndSwap(-1, u) {
						out = append(out, v)
					}
				}
			}
			b.found[k] = out
		}
	})
	b.at = append(b.at[:0], 0)
	for _, f := range b.found[:chunks] {
		b.at = append(b.at, b.at[len(b.at)-1]+len(f))
	}
	b.next = b.next[:b.at[chunks]]
	parFor(p, 0, chunks, max(1, bfsFill/bfsChunk), func(_ par, lo, hi int) {
		for k := lo; k < hi; k++ {
			copy(b.next[b.at[k]:], b.found[k])
		}
	})
}

// fineLevel is level without chunks: every frontier vertex is a leaf of
// parFor, and its discoveries claim their places in b.next one by one.
func (b *bfs) fineLevel(p par) {
	b.tail.Store(0)
	b.next = b.next[:cap(b.next)] // a vertex is discovered once, so n places suffice
	parFor(p, 0, len(b.front), 1, func(_ par, lo, hi int) {
		for _, u := range b.front[lo:hi] {
			for _, v := range b.g.neighbours(u) {
				if b.parent[v].Load() == -1 && b.parent[v].CompareAndSwap(-1, u) {
					b.next[b.tail.Add(1)-1] = v
				}
			}
		}
	})
	b.next = b.next[:b.tail.Load()]
}

// distances is a plain queue-based BFS from vertex 0: the reference of Check.
func (g *graph) distances() []int32 {
	dist := make([]int32, g.vertices())
	for v := range dist {
		dist[v] = -1
	}
	dist[0] = 0
	queue := []int32{0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, v := range g.neighbours(u) {
			if dist[v] == -1 {
				dist[v] = dist[u] + 1
				queue = append(queue, v)
			}
		}
	}
	return dist
}

// Check verifies that parent is a BFS tree: exactly the reachable vertices
// have a parent, each parent is a neighbour, and it lies one level closer to
// the root.
func (b *bfs) Check() error {
	if b.dist == nil {
		b.dist = b.g.distances()
	}
	wrong := func(v int, format string, args ...any) error {
		return fmt.Errorf("%w: bfs of %d vertices: vertex %d: %s", ErrWrongResult, len(b.dist), v,
			fmt.Sprintf(format, args...))
	}
	for v, d := range b.dist {
		u := b.parent[v].Load()
		switch {
		case d == -1 && u != -1:
			return wrong(v, "unreachable, yet has parent %d", u)
		case d == -1:
		case u < 0 || int(u) >= len(b.dist):
			return wrong(v, "reachable at distance %d, yet has parent %d", d, u)
		case v == 0 && u != 0:
			return wrong(v, "the root has parent %d", u)
		case v != 0 && b.dist[u] != d-1:
			return wrong(v, "at distance %d has parent %d at distance %d", d, u, b.dist[u])
		case v != 0 && !b.g.adjacent(u, int32(v)):
			return wrong(v, "parent %d is not a neighbour", u)
		}
	}
	return nil
}

func (g *graph) adjacent(u, v int32) bool {
	for _, w := range g.neighbours(u) {
		if w == v {
			return true
		}
	}
	return false
}
