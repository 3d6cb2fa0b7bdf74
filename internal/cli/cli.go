// Package cli is the command-line plumbing of fairbench and its driver,
// so that they behave alike (the examples do the same in a few lines of
// their own, so that each can be copied alone): -h and -help print the usage
// and exit 0; a mistake on the command line prints one line that starts
// with the command's name, once, and exits 2; a run that fails prints one
// such line and exits 1.
package cli

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args into fs, which must be flag.ContinueOnError, without
// letting the flag package print. For -h and -help it prints fs's usage on
// stderr and returns flag.ErrHelp. Its other errors are the flag package's
// ("flag provided but not defined: -x") and arguments left after the
// flags.
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		return err
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// Main runs a command: parse reads its command line (with Parse, then
// checks the values), run does its work. It returns the exit code: 0 when
// run succeeds or parse returns flag.ErrHelp, 2 after printing parse's
// error, 1 after printing run's. Errors are printed on stderr after name.
func Main(name string, stderr io.Writer, parse, run func() error) int {
	if err := parse(); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\nRun '%s -h' for the flags.\n", name, err, name)
		return 2
	}
	if err := run(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// Between checks that the value v of the flag name is in [lo, hi] (NaN is
// not).
func Between[T cmp.Ordered](name string, v, lo, hi T) error {
	if v >= lo && v <= hi {
		return nil
	}
	return fmt.Errorf("-%s %v is not between %v and %v", name, v, lo, hi)
}

// First returns the first error that is not nil, or nil.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
