// Command miniapp-host runs Miniapps on the desktop and serves the reference
// authorization server they sign in with. This package parses flags and wires
// packages together; the logic lives in the packages it calls.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Exit codes shared by the checking commands (ARCHITECTURE.md, "Command line").
const (
	exitOK        = 0 // accepted / valid
	exitRejected  = 1 // rejected / invalid
	exitUsage     = 2 // usage error or unreadable input
	exitUndecided = 3 // could not decide: network, dashboard down
)

// env is what a subcommand may touch of the process: its arguments and
// streams. Tests run subcommands in-process with their own env.
type env struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// command is one subcommand: a short summary for the usage text and the
// function that runs it and returns the process exit code.
type command struct {
	summary string
	run     func(ctx context.Context, e env) int
}

// commands is the table of subcommands; each lives in a file of its own.
var commands = map[string]command{
	"catalog":    {"print the permission catalog, or check an authorization request", runCatalog},
	"resolve":    {"resolve a Miniapp by origin and id, or check a manifest offline", runResolve},
	"open":       {"open a Miniapp in a desktop window", runOpen},
	"serve":      {"run the reference authorization server and dashboard", runServe},
	"project":    {"create a project on the dashboard, or show one (docs/dashboard.md)", dashboardCommand("project")},
	"credential": {"add, list, rotate or remove a project's OAuth credentials", dashboardCommand("credential")},
	"policy":     {"request the scopes and types a project may ask for, for review", dashboardCommand("policy")},
	"rs":         {"declare a Resource Server for review, or list the approved ones", dashboardCommand("rs")},
	"miniapp":    {"submit a published Miniapp's manifest for review, or list the approved ones", dashboardCommand("miniapp")},
	"review":     {"operator: list, approve or reject submissions", dashboardCommand("review")},
	"playground": {"run the servers, the demo Miniapps and the launcher", runPlayground},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, env{args: os.Args[1:], stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand.
func run(ctx context.Context, e env) int {
	if len(e.args) == 0 || e.args[0] == "-h" || e.args[0] == "--help" || e.args[0] == "help" {
		usage(e.stderr)
		if len(e.args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := commands[e.args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "miniapp-host: unknown command %q\n\n", e.args[0])
		usage(e.stderr)
		return exitUsage
	}
	e.args = e.args[1:]
	return c.run(ctx, e)
}

// flagExit is a subcommand's exit after its flags failed to parse: exitOK
// when the user asked for -h (the usage is printed), exitUsage otherwise
// (the flag package has said which flag is wrong).
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: miniapp-host <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'miniapp-host <command> -h' for a command's flags.")
}
