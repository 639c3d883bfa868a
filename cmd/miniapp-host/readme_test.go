package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCommandBlock keeps the README's command block true: every
// command of the binary is in it, and every flag a line of it shows is a
// flag of that command's -h.
func TestReadmeCommandBlock(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## Command line\n\n```\n")
	if start < 0 {
		t.Fatal("README.md has no \"## Command line\" section opening with a code block")
	}
	block := text[start+len("## Command line\n\n```\n"):]
	block = block[:strings.Index(block, "```")]
	flagsOf := map[string]string{} // command -> its -h output
	// help is the -h of a command, or of its subcommand (credential
	// update) when the line names one the command has.
	help := func(name string, rest []string) string {
		args := []string{name, "-h"}
		if len(rest) > 0 && regexp.MustCompile(`^[a-z]+$`).MatchString(rest[0]) {
			var out, errs syncBuffer
			if run(context.Background(), env{args: []string{name, rest[0], "-h"}, stdout: &out, stderr: &errs}) == exitOK {
				args = []string{name, rest[0], "-h"}
			}
		}
		key := strings.Join(args, " ")
		if h, ok := flagsOf[key]; ok {
			return h
		}
		var out, errs syncBuffer
		if code := run(context.Background(), env{args: args, stdout: &out, stderr: &errs}); code != exitOK {
			t.Fatalf("%s: exit %d: %s", key, code, errs.String())
		}
		flagsOf[key] = out.String()
		return out.String()
	}
	shown := map[string]bool{}
	envAssignRE := regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)
	flagRE := regexp.MustCompile(`(?:^|[\s\[|])--?([a-z][a-z0-9-]*)`)
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmdline, _, _ := strings.Cut(line, "#")
		fields := strings.Fields(cmdline)
		// Variables set for the one command, as a shell takes them.
		for len(fields) > 0 && envAssignRE.MatchString(fields[0]) {
			fields = fields[1:]
		}
		if len(fields) < 2 || fields[0] != "miniapp-host" {
			t.Errorf("README command line %q does not start with miniapp-host COMMAND", line)
			continue
		}
		if fields[1] == "--version" {
			shown["version"] = true
			continue
		}
		for _, name := range strings.Split(fields[1], "|") {
			if _, ok := commands()[name]; !ok {
				t.Errorf("README names a command %q the binary does not have: %q", name, line)
				continue
			}
			shown[name] = true
			if name == "help" {
				continue
			}
			h := help(name, fields[2:])
			for _, m := range flagRE.FindAllStringSubmatch(strings.Join(fields[2:], " "), -1) {
				if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(m[1]) + `(\s|$)`).MatchString(h) {
					t.Errorf("README shows --%s for %s, which %s -h does not list: %q", m[1], name, name, line)
				}
			}
		}
	}
	for name := range commands() {
		if !shown[name] && !internalCommands[name] {
			t.Errorf("the README's command block lacks %s", name)
		}
	}
}
