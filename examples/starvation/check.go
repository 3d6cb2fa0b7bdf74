package main

import "math"

// checkTolerance is the largest relative error between the measured and
// Cobham's mean waits that the check accepts.
const checkTolerance = 0.10

// checkMaxRho is the highest ρ_H the check covers.
const checkMaxRho = 0.8

// CheckRow compares one class's measured mean wait under static priority
// with Cobham's formula.
type CheckRow struct {
	RhoHi    float64
	Class    string
	Jobs     int
	Measured float64
	Theory   float64 // +Inf where the class is unstable
	RelErr   float64 // (measured − theory) / theory; NaN when not checked
}

// OK reports whether the row passes; a row without a finite theory is
// not checked.
func (c CheckRow) OK() bool { return math.IsNaN(c.RelErr) || math.Abs(c.RelErr) <= checkTolerance }

// checkRows turns the static-priority rows of a one-slot sweep into the
// comparison with theory.
func checkRows(rows []Row) []CheckRow {
	var out []CheckRow
	for _, r := range rows {
		if r.Policy != "static" || r.Slots != 1 {
			continue
		}
		c := CheckRow{RhoHi: r.RhoHi, Class: r.Class, Jobs: r.Jobs, Measured: r.MeanWait,
			Theory: math.Inf(1), RelErr: math.NaN()}
		if r.TheoryMeanWait != nil {
			c.Theory = *r.TheoryMeanWait
			c.RelErr = (r.MeanWait - c.Theory) / c.Theory
		}
		out = append(out, c)
	}
	return out
}
