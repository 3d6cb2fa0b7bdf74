package kernels

import (
	"fmt"

	"github.com/fairlyprompt/fairly/thread"
)

// strassenCutoff is the side at or below which Strassen's recursion gives
// way to the naive product. It is the algorithm's crossover rather than a
// grain of the parallelism: on one core the naive product of side 64 is
// faster than one more level of recursion (seven products of side 32 save
// an eighth of the multiplications but cost eighteen matrix sums and ten
// allocations), so the fine-grained versions keep it as their base case.
const strassenCutoff = 64

// matrix is a square view of side n into row-major storage, so quadrants
// are views too and cost nothing to take.
type matrix struct {
	d         []int64
	n, stride int
}

func newMatrix(n int) matrix { return matrix{make([]int64, n*n), n, n} }

func (m matrix) row(i int) []int64 { return m.d[i*m.stride : i*m.stride+m.n] }

// quad is the quadrant at block row r and block column c (0 or 1).
func (m matrix) quad(r, c int) matrix {
	h := m.n / 2
	return matrix{m.d[r*h*m.stride+c*h:], h, m.stride}
}

// operand is x, x + y or x − y, as sign is 0, 1 or −1: a factor of one of
// Strassen's seven products.
type operand struct {
	x, y matrix
	sign int64
}

// value materialises the operand; a plain quadrant is used in place.
func (o operand) value() matrix {
	if o.sign == 0 {
		return o.x
	}
	r := newMatrix(o.x.n)
	for i := range r.n {
		ri, xi, yi := r.row(i), o.x.row(i), o.y.row(i)
		for j := range ri {
			ri[j] = xi[j] + o.sign*yi[j]
		}
	}
	return r
}

// naiveRows is the side-n row block that makes a leaf of the naive product
// about as much work as a cutoff-sized product.
func naiveRows(n int) int { return max(1, strassenCutoff*strassenCutoff*strassenCutoff/(n*n)) }

// naiveMul sets c = a·b by the schoolbook method, in row blocks.
func naiveMul(p par, a, b, c matrix) {
	parFor(p, 0, a.n, naiveRows(a.n), func(p par, lo, hi int) {
		for i := lo; i < hi; i++ {
			p.point() // a row is a few microseconds of work
			ci, ai := c.row(i), a.row(i)
			clear(ci)
			for k, aik := range ai {
				bk := b.row(k)[:len(ci)]
				for j := range ci {
					ci[j] += aik * bk[j]
				}
			}
		}
	})
}

// strassenMul sets c = a·b by Strassen's recursion, forking the seven
// products of each level, down to sides of strassenCutoff (or an odd side,
// which does not halve).
func strassenMul(p par, a, b, c matrix) {
	n := a.n
	if n <= strassenCutoff || n%2 == 1 {
		naiveMul(p, a, b, c)
		return
	}
	a11, a12, a21, a22 := a.quad(0, 0), a.quad(0, 1), a.quad(1, 0), a.quad(1, 1)
	b11, b12, b21, b22 := b.quad(0, 0), b.quad(0, 1), b.quad(1, 0), b.quad(1, 1)
	factors := [7][2]operand{
		{{a11, a22, 1}, {b11, b22, 1}},
		{{a21, a22, 1}, {x: b11}},
		{{x: a11}, {b12, b22, -1}},
		{{x: a22}, {b21, b11, -1}},
		{{a11, a12, 1}, {x: b22}},
		{{a21, a11, -1}, {b11, b12, 1}},
		{{a12, a22, -1}, {b21, b22, 1}},
	}
	var m [7]matrix
	parFor(p, 0, len(factors), 1, func(p par, lo, hi int) {
		for i := lo; i < hi; i++ {
			m[i] = newMatrix(n / 2)
			strassenMul(p, factors[i][0].value(), factors[i][1].value(), m[i])
		}
	})
	c11, c12, c21, c22 := c.quad(0, 0), c.quad(0, 1), c.quad(1, 0), c.quad(1, 1)
	parFor(p, 0, n/2, naiveRows(n), func(_ par, lo, hi int) {
		for i := lo; i < hi; i++ {
			m1, m2, m3, m4, m5, m6, m7 := m[0].row(i), m[1].row(i), m[2].row(i), m[3].row(i),
				m[4].row(i), m[5].row(i), m[6].row(i)
			r11, r12, r21, r22 := c11.row(i), c12.row(i), c21.row(i), c22.row(i)
			for j := range r11 {
				r11[j] = m1[j] + m4[j] - m5[j] + m7[j]
				r12[j] = m3[j] + m5[j]
				r21[j] = m2[j] + m4[j]
				r22[j] = m1[j] - m2[j] + m3[j] + m6[j]
			}
		}
	})
}

// mulVec returns m·x.
func mulVec(m matrix, x []int64) []int64 {
	y := make([]int64, m.n)
	for i := range y {
		for j, v := range m.row(i) {
			y[i] += v * x[j]
		}
	}
	return y
}

// strassen is an instance of the Strassen kernel: c = a·b for two random
// matrices of small entries. Arithmetic wraps modulo 2^64 in every version
// alike, so results are exact whatever the size.
type strassen struct{ a, b, c matrix }

func newStrassen(n int) *strassen {
	n = max(n, 1)
	s := &strassen{a: newMatrix(n), b: newMatrix(n), c: newMatrix(n)}
	for i := range s.a.d {
		s.a.d[i] = int64(mix(seed+uint64(i))%17) - 8
		s.b.d[i] = int64(mix(^seed-uint64(i))%17) - 8
	}
	return s
}

func (s *strassen) Seq()                 { strassenMul(seq, s.a, s.b, s.c) }
func (s *strassen) Goroutines()          { strassenMul(gor, s.a, s.b, s.c) }
func (s *strassen) Fairly(c *thread.Ctx) { strassenMul(fairly(c), s.a, s.b, s.c) }

// Fine loops with thread.For over the seven products of every level and
// over every row of the naive products and of the sums, where the other
// versions divide rows into blocks of about a side-64 product's work.
func (s *strassen) Fine(c *thread.Ctx) { strassenMul(fineFairly(c), s.a, s.b, s.c) }
func (s *strassen) FineGoroutines()    { strassenMul(fineGor, s.a, s.b, s.c) }

// Check uses Freivalds' test: c·x = a·(b·x) for two vectors of odd
// entries. An odd factor is invertible modulo 2^64, so any single wrong
// entry of c shows, and the test costs O(n²) instead of a product.
func (s *strassen) Check() error {
	for v := range uint64(2) {
		x := make([]int64, s.a.n)
		for j := range x {
			x[j] = int64(mix(seed^(v<<32)+uint64(j)) | 1)
		}
		want, got := mulVec(s.a, mulVec(s.b, x)), mulVec(s.c, x)
		for i := range want {
			if got[i] != want[i] {
				return fmt.Errorf("%w: strassen side %d: row %d of the product is wrong", ErrWrongResult, s.a.n, i)
			}
		}
	}
	return nil
}
