package thread_test

import (
	"fmt"
	"strings"

	"github.com/fairlyprompt/fairly/thread"
)

func ExampleMap() {
	rt, _, batch := setup()
	defer rt.Close()

	words := strings.Fields("the quick brown fox jumps over the lazy dog")
	var upper []string
	mapErr, err := thread.Run(rt, batch, func(c *thread.Ctx) (err error) {
		// f runs on this thread, element after element; halves of the rest
		// go to other workers only when they ask for work.
		upper, err = thread.Map(c, words, func(_ *thread.Ctx, w string) string { return strings.ToUpper(w) })
		return err
	})
	fmt.Println(upper, mapErr, err)
	// Output: [THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG] <nil> <nil>
}

func ExampleReduce() {
	rt, _, batch := setup()
	defer rt.Close()

	digits := strings.Split("01234567890123456789", "")
	var s string
	reduceErr, err := thread.Run(rt, batch, func(c *thread.Ctx) (err error) {
		// Concatenation is associative but not commutative: partial
		// results are combined in the slice's order, so the answer is the
		// sequential one however the slice was split.
		s, err = thread.Reduce(c, digits, "", func(a, b string) string { return a + b })
		return err
	})
	fmt.Println(s, reduceErr, err)
	// Output: 01234567890123456789 <nil> <nil>
}

func ExampleMapReduce() {
	rt, _, batch := setup()
	defer rt.Close()

	xs := make([]int, 1000)
	for i := range xs {
		xs[i] = i + 1
	}
	// The sum of the squares of 1..1000, without a slice of squares.
	square := func(_ *thread.Ctx, x int) int { return x * x }
	add := func(a, b int) int { return a + b }
	sum, err := thread.Run(rt, batch, func(c *thread.Ctx) int {
		sum, err := thread.MapReduce(c, xs, square, 0, add)
		if err != nil { // a panic in square or add, or c's context done
			return -1
		}
		return sum
	})
	fmt.Println(sum, err)
	// Output: 333833500 <nil>
}
