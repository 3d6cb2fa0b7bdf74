package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// figure matches a measured figure in prose: a decimal number (0.27,
// 79.8) or a range (0.43–1.91, 620–1,180). Whole numbers alone are
// counts and sizes (five runs, fib(30)), not figures.
var figure = regexp.MustCompile(`\d[\d,]*\.\d+(?:–\d[\d,]*(?:\.\d+)?)?|\d[\d,]*–\d[\d,]*(?:\.\d+)?`)

// Every figure the README quotes is on the results page, which says how
// it was measured: the README claims nothing the page does not show.
func TestREADMEFiguresAreInResults(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	results, err := os.ReadFile("../../docs/results.md")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i, part := range strings.Split(string(readme), "```") {
		if i%2 == 1 {
			continue // a code block: commands and the example, no figures
		}
		for _, f := range figure.FindAllString(part, -1) {
			found++
			if !strings.Contains(string(results), f) {
				t.Errorf("README.md quotes %s, which docs/results.md does not show", f)
			}
		}
	}
	if found == 0 {
		t.Fatal("found no figure in README.md: the pattern no longer matches its prose")
	}
}
