// Command miniapp-host runs Miniapps on the desktop and serves the reference
// authorization server they sign in with. This package parses flags and wires
// packages together; the logic lives in the packages it calls.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Exit codes shared by the checking commands (docs/architecture.md, "Command line").
const (
	exitOK        = 0 // accepted / valid
	exitRejected  = 1 // rejected / invalid
	exitUsage     = 2 // usage error or unreadable input
	exitUndecided = 3 // could not decide: network, dashboard down
)

// env is what a subcommand may touch of the process: its arguments,
// streams and environment variables. Tests run subcommands in-process with
// their own env.
type env struct {
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// getenv reads an environment variable; nil reads an empty
	// environment.
	getenv func(string) string
	// hurry receives one value at each interrupt after the first: a
	// command that is stopping gracefully (the run's context is done)
	// skips what it is waiting for. Nil never receives.
	hurry <-chan struct{}
}

// envVar returns the environment variable name, "" when unset.
func (e env) envVar(name string) string {
	if e.getenv == nil {
		return ""
	}
	return e.getenv(name)
}

// command is one subcommand: a short summary for the usage text and the
// function that runs it and returns the process exit code.
type command struct {
	summary string
	run     func(ctx context.Context, e env) int
}

// internalCommands are started by other commands, not by a user: the
// command list leaves them out.
var internalCommands = map[string]bool{"webdriver-session": true}

// commands is the table of subcommands; each lives in a file of its own.
// It is a function because `help` and the usage text read the table.
func commands() map[string]command {
	return map[string]command{
		"catalog":           {"print the permission catalog, or check an authorization request", runCatalog},
		"explain":           {"development server: dry-run an authorization request through the three checks (docs/dashboard.md)", runExplain},
		"resolve":           {"resolve a Miniapp by origin and id, or check a manifest offline", runResolve},
		"open":              {"open a Miniapp in a desktop window", runOpen},
		"serve":             {"run the reference authorization server and dashboard", runServe},
		"project":           {"create a project on the dashboard, or show one (docs/dashboard.md)", dashboardCommand("project")},
		"credential":        {"add, list, update, rotate or remove a project's OAuth credentials", dashboardCommand("credential")},
		"policy":            {"request the scopes and types a project may ask for, for review", dashboardCommand("policy")},
		"rs":                {"declare a Resource Server for review, or list the approved ones", dashboardCommand("rs")},
		"miniapp":           {"submit a published Miniapp's manifest for review, or list the approved ones", dashboardCommand("miniapp")},
		"review":            {"operator: list, approve or reject submissions", dashboardCommand("review")},
		"events":            {"operator: list or follow the server's audit events (docs/dashboard.md, Events)", runEvents},
		"fault":             {"development server: inject faults at its endpoints (docs/dashboard.md, Faults)", devCommand("fault")},
		"clock":             {"development server: advance, set, reset or show its clock (docs/dashboard.md)", devCommand("clock")},
		"fixture":           {"development server: apply a fixture file of test identities and decisions, or forget a subject's or client's", runFixture},
		"playground":        {"run the servers, the demo Miniapps and the launcher", runPlayground},
		"new":               {"write a small Miniapp to start from into a folder", runNew},
		"devices":           {"list the devices a Miniapp can be shown as (--device NAME, or WIDTHxHEIGHT@DPR)", runDevices},
		"dev":               {"run your own Miniapp (a folder or a dev server) in the playground, reloading on save", runDev},
		"webdriver":         {"serve W3C WebDriver in front of WebKitWebDriver: sessions start open --webdriver (docs/webdriver.md)", runWebDriver},
		"webdriver-session": {"internal: one WebDriver session's host and driver in a network of their own (started by webdriver)", runWebDriverSession},
		"version":           {"print the version the binary was built from", runVersion},
		"help":              {"print this help, or a command's: help COMMAND", runHelp},
	}
}

// main runs a command until it ends. The first SIGINT or SIGTERM cancels
// the command's context (a server starts its graceful shutdown); each
// further one is sent on env.hurry (it skips what it waits for).
func main() {
	ctx, cancel := context.WithCancel(context.Background())
	hurry := make(chan struct{}, 1)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		for range sigs {
			select {
			case hurry <- struct{}{}:
			default: // one is already waiting to be taken
			}
		}
	}()
	code := run(ctx, env{args: os.Args[1:], stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, hurry: hurry})
	signal.Stop(sigs)
	cancel()
	os.Exit(code)
}

// run dispatches to a subcommand. Help asked for (-h, --help, help) goes
// to standard output with exit 0; a usage error (no command, an unknown
// one) goes to standard error with exit 2.
func run(ctx context.Context, e env) int {
	if len(e.args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch e.args[0] {
	case "-h", "-help", "--help":
		usage(e.stdout)
		return exitOK
	case "-version", "--version":
		e.args = nil
		return runVersion(ctx, e)
	}
	c, ok := commands()[e.args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "miniapp-host: unknown command %q\n\n", e.args[0])
		usage(e.stderr)
		return exitUsage
	}
	e.args = e.args[1:]
	return c.run(ctx, e)
}

// runHelp is `miniapp-host help [COMMAND]`.
func runHelp(ctx context.Context, e env) int {
	switch len(e.args) {
	case 0:
		usage(e.stdout)
		return exitOK
	case 1:
		c, ok := commands()[e.args[0]]
		if !ok || e.args[0] == "help" {
			fmt.Fprintf(e.stderr, "miniapp-host: help: unknown command %q\n\n", e.args[0])
			usage(e.stderr)
			return exitUsage
		}
		e.args = []string{"-h"}
		return c.run(ctx, e)
	}
	fmt.Fprintln(e.stderr, "miniapp-host: help takes at most one command")
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: miniapp-host <command> [flags] [arguments]")
	fmt.Fprintln(w, "       miniapp-host --version")
	fmt.Fprintln(w, "\ncommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		if !internalCommands[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'miniapp-host <command> -h' for a command's flags; flags may come before or after arguments.")
	fmt.Fprintln(w, "Exit codes: 0 done or accepted, 1 rejected or refused, 2 usage error, 3 could not decide (a server down).")
}
