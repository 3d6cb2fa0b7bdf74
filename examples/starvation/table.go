package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// printTable writes the rows as an aligned table, one block per setup.
func printTable(w io.Writer, res *Results) {
	for _, s := range res.Plan.Setups {
		fmt.Fprintf(w, "\n%s, ρ_L = %g, %d seeds of %gs (waits in seconds; * overloaded, ρ ≥ 1)\n\n",
			s, res.Plan.RhoLo, res.Plan.Seeds, res.Plan.Horizon)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "policy\tρ_H\tclass\tjobs\tmean\tp99\tmax\tCobham\terror\twindow CV\tburst CV\t")
		for _, pol := range res.Plan.Policies {
			for _, rho := range res.Plan.RhoHi {
				for _, r := range res.Rows {
					if r.Policy != pol.Name || r.Slots != s.Slots || r.Service != s.Dist || r.RhoHi != rho {
						continue
					}
					mark := ""
					if r.Overloaded {
						mark = "*"
					}
					theory, rel := "-", "-"
					if r.TheoryMeanWait != nil {
						theory = fmt.Sprintf("%.3f", *r.TheoryMeanWait)
						rel = fmt.Sprintf("%+.1f%%", 100*(r.MeanWait-*r.TheoryMeanWait)/(*r.TheoryMeanWait))
					}
					burst := "-"
					if r.BurstCV != nil {
						burst = fmt.Sprintf("%.2f", *r.BurstCV)
					}
					fmt.Fprintf(tw, "%s\t%.2f%s\t%s\t%d\t%.3f\t%.2f\t%.1f\t%s\t%s\t%.2f\t%s\t\n",
						r.Policy, r.RhoHi, mark, r.Class, r.Jobs, r.MeanWait, r.P99Wait, r.MaxWait, theory, rel, r.WindowCV, burst)
				}
			}
		}
		_ = tw.Flush()
	}
}

// printCheck writes the comparison with Cobham's formula and reports
// whether every checked row is within the tolerance.
func printCheck(w io.Writer, rows []CheckRow) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ρ_H\tclass\tjobs\tmeasured (s)\tCobham (s)\trelative error\t\t")
	ok := true
	for _, c := range rows {
		verdict := "ok"
		switch {
		case math.IsNaN(c.RelErr):
			verdict = "not checked: ρ ≥ 1, the class is unstable"
		case !c.OK():
			verdict, ok = "FAIL", false
		}
		theory, rel := "∞", "-"
		if !math.IsInf(c.Theory, 1) {
			theory, rel = fmt.Sprintf("%.3f", c.Theory), fmt.Sprintf("%+.2f%%", 100*c.RelErr)
		}
		fmt.Fprintf(tw, "%.2f\t%s\t%d\t%.3f\t%s\t%s\t%s\t\n", c.RhoHi, c.Class, c.Jobs, c.Measured, theory, rel, verdict)
	}
	_ = tw.Flush()
	return ok
}
