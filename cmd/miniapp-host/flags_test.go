package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestPermute: flags before, between and after arguments are parsed; "--"
// ends the flags and "-" is an argument (standard input).
func TestPermute(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantPos  []string
		wantJSON bool
		wantName string
	}{
		{[]string{"a.json", "--json"}, []string{"a.json"}, true, ""},
		{[]string{"--json", "a.json"}, []string{"a.json"}, true, ""},
		{[]string{"x", "--name", "n", "y", "--json"}, []string{"x", "y"}, true, "n"},
		{[]string{"-", "--json"}, []string{"-"}, true, ""},
		{[]string{"--json", "--", "--name", "-x"}, []string{"--name", "-x"}, true, ""},
		{[]string{"a", "--", "b", "--json"}, []string{"a", "b", "--json"}, false, ""},
		{nil, nil, false, ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		asJSON := fs.Bool("json", false, "")
		name := fs.String("name", "", "")
		pos, err := permute(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.wantPos) || *asJSON != tc.wantJSON || *name != tc.wantName {
			t.Errorf("%q: positional %q, json %v, name %q, err %v; want %q, %v, %q", tc.args, pos, *asJSON, *name, err, tc.wantPos, tc.wantJSON, tc.wantName)
		}
	}
}

// FuzzPermute: any command line parses or fails with an error, never
// panics, and keeps every positional argument in order.
func FuzzPermute(f *testing.F) {
	f.Add("a.json\x00--json")
	f.Add("--name\x00v\x00--\x00-x")
	f.Add("-\x00--json=false\x00b")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Bool("json", false, "")
		fs.String("name", "", "")
		pos, err := permute(fs, args)
		if err != nil {
			return
		}
		// Positional arguments are a subsequence of args.
		i := 0
		for _, a := range args {
			if i < len(pos) && a == pos[i] {
				i++
			}
		}
		if i != len(pos) {
			t.Fatalf("positional %q are not in the order of %q", pos, args)
		}
	})
}
