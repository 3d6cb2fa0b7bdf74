package kernels

import (
	"fmt"
	"math"

	"github.com/fairlyprompt/fairly/thread"
)

const (
	// utsBranching is the expected number of children of a node.
	utsBranching = 4.0
	// utsNodeFib is the Fibonacci number every node computes, to give a
	// node some work besides hashing: fib(12), several times the cost of
	// the spawn and join each node makes, so the kernel measures load
	// balancing rather than spawn overhead alone.
	utsNodeFib = 12
	// utsDefaultDepth is the depth of the uts kernel's default tree.
	utsDefaultDepth = 10
	// utsTree picks the tree: a geometric tree's size varies wildly with
	// its root (about a quarter of such trees die out early), and this root
	// gives 1.44 million nodes at depth 10 and 5.77 million at depth 11,
	// close to the expected (4^(d+1) − 1)/3.
	utsTree = 3
)

// utsLogQ is log(1 − 1/(1+b)): a node has k or more children with
// probability (b/(1+b))^k, a geometric distribution of mean b.
var utsLogQ = math.Log(utsBranching / (1 + utsBranching))

// utsChildren gives the number of children of the node with identifier id
// at the given depth: none at the depth limit, else a geometric draw
// decided by the identifier alone, as in the geometric trees of UTS. Since
// identifiers are hashes, the tree is the same whoever explores it and in
// whatever order.
func utsChildren(id uint64, depth, limit int) int {
	if depth >= limit {
		return 0
	}
	return int(math.Log(1-unit(mix(id))) / utsLogQ)
}

// utsChild derives the identifier of the i-th child of node id (the
// splittable hash: a node is named by its parent and its rank).
func utsChild(id uint64, i int) uint64 { return mix(id ^ uint64(i+1)*0xd1b54a32d192ed03) }

// utsResult sums up an explored subtree.
type utsResult struct {
	nodes uint64 // how many nodes
	sum   uint64 // sum over the nodes of their identifier plus their Fibonacci work
}

func (a utsResult) add(b utsResult) utsResult { return utsResult{a.nodes + b.nodes, a.sum + b.sum} }

// utsVisit explores the subtree of node id, forking one thread per child
// through a binary spawn tree over the children.
func utsVisit(p par, id uint64, depth, limit int) utsResult {
	self := utsResult{nodes: 1, sum: id + uint64(FibSeq(utsNodeFib))}
	k := utsChildren(id, depth, limit)
	if k == 0 {
		return self
	}
	kids := reduce(p, 0, k, 1, func(p par, lo, hi int) utsResult {
		var r utsResult
		for i := lo; i < hi; i++ {
			r = r.add(utsVisit(p, utsChild(id, i), depth+1, limit))
		}
		return r
	}, utsResult.add)
	return self.add(kids)
}

// utsExplore explores the whole tree without recursion, with an explicit
// stack: the independent reference of Check.
func utsExplore(root uint64, limit int) utsResult {
	type node struct {
		id    uint64
		depth int
	}
	var r utsResult
	stack := []node{{root, 0}}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		r.nodes++
		r.sum += n.id + uint64(fibIter(utsNodeFib))
		for i := range utsChildren(n.id, n.depth, limit) {
			stack = append(stack, node{utsChild(n.id, i), n.depth + 1})
		}
	}
	return r
}

// uts is an instance of the Unbalanced Tree Search kernel: a tree of
// geometric branching (mean utsBranching) cut at a depth limit.
type uts struct {
	root   uint64
	limit  int
	result utsResult
	want   *utsResult // the reference, computed by the first Check
}

func newUTS(depth int) *uts { return &uts{root: mix(seed + utsTree), limit: max(depth, 0)} }

func (u *uts) Seq()                 { u.result = utsVisit(seq, u.root, 0, u.limit) }
func (u *uts) Goroutines()          { u.result = utsVisit(gor, u.root, 0, u.limit) }
func (u *uts) Fairly(c *thread.Ctx) { u.result = utsVisit(fairly(c), u.root, 0, u.limit) }

// Fine forks with thread.Fork2 over the children of every node; the other
// versions already fork once per child, with no grain to drop.
func (u *uts) Fine(c *thread.Ctx) { u.result = utsVisit(fineFairly(c), u.root, 0, u.limit) }
func (u *uts) FineGoroutines()    { u.result = utsVisit(fineGor, u.root, 0, u.limit) }

func (u *uts) Check() error {
	if u.want == nil {
		want := utsExplore(u.root, u.limit)
		u.want = &want
	}
	if u.result != *u.want {
		return fmt.Errorf("%w: uts depth %d explored %d nodes (sum %#x), want %d (sum %#x)",
			ErrWrongResult, u.limit, u.result.nodes, u.result.sum, u.want.nodes, u.want.sum)
	}
	return nil
}
