package thread_test

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/fairlyprompt/fairly/thread"
)

func ExampleGroup() {
	rt, _, batch := setup()
	defer rt.Close()

	// Parse three numbers in parallel; the first bad one fails the group
	// and cancels the context of the others.
	parse := func(texts []string) ([]int, error) {
		out := make([]int, len(texts))
		err, runErr := thread.Run(rt, batch, func(c *thread.Ctx) error {
			var g thread.Group
			for i, s := range texts {
				g.Go(c, func(c *thread.Ctx) error {
					n, err := strconv.Atoi(s)
					out[i] = n
					return err
				})
			}
			return g.Wait(c)
		})
		return out, errors.Join(runErr, err)
	}
	fmt.Println(parse([]string{"1", "22", "333"}))
	_, err := parse([]string{"1", "x", "333"})
	fmt.Println(errors.Is(err, strconv.ErrSyntax))
	// Output:
	// [1 22 333] <nil>
	// true
}

func ExampleFork() {
	rt, _, batch := setup()
	defer rt.Close()

	v, err := thread.Run(rt, batch, func(c *thread.Ctx) int {
		h := thread.Fork(c, func(c *thread.Ctx) int { return fibonacci(c, 20) }) // at batch, c's priority
		b := fibonacci(c, 19)
		a, _ := thread.Join(c, h)
		return a + b
	})
	fmt.Println(v, err)
	// Output: 10946 <nil>
}
