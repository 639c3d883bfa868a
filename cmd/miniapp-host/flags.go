package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlagSet returns a flag set for a subcommand whose usage text is
// written by usage to the set's output: standard output for -h, standard
// error after a usage error (parseFlags chooses).
func newFlagSet(name string, usage func(w io.Writer)) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		usage(fs.Output())
		if hasFlags(fs) {
			fmt.Fprintln(fs.Output(), "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args with flags before, between or after the positional
// arguments ("catalog check FILE --json"), which the flag package alone
// stops at; "--" ends the flags, and "-" is an argument (standard input).
// It returns the positional arguments and ok; when !ok the command returns
// code: exitOK after -h or --help (the usage went to standard output),
// exitUsage after a bad flag (the flag package's error and the usage went
// to standard error).
func parseFlags(e env, fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	usage := fs.Usage
	fs.Usage = func() {} // printed below, on the stream that fits
	fs.SetOutput(e.stderr)
	pos, err := permute(fs, args)
	fs.Usage = usage
	switch {
	case err == nil:
		return pos, exitOK, true
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(e.stdout)
		fs.Usage()
		return nil, exitOK, false
	default:
		fs.Usage()
		return nil, exitUsage, false
	}
}

// permute parses args into fs, collecting the positional arguments found
// between flags.
func permute(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError prints a usage error of a command (what is wrong and how to
// fix it) to standard error and returns exitUsage.
func usageError(e env, cmd, msg string) int {
	fmt.Fprintf(e.stderr, "miniapp-host: %s: %s\n", cmd, msg)
	fmt.Fprintf(e.stderr, "run 'miniapp-host %s -h' for its usage\n", cmd)
	return exitUsage
}
