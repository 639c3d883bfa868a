package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/webdriverfront"
)

// runWebDriver is `miniapp-host webdriver`: the W3C WebDriver front of
// WebKitWebDriver (package webdriverfront, docs/webdriver.md), until
// interrupted.
func runWebDriver(ctx context.Context, e env) int {
	fs := newFlagSet("webdriver", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host webdriver [--port 4444] [--driver PATH] [--dashboard URL] [--service URL]")
		fmt.Fprintln(w, "serves W3C WebDriver on 127.0.0.1:PORT; each New Session starts this binary's `open --webdriver` and a WebKitWebDriver of its own.")
		fmt.Fprintln(w, "the hosts' secret is read from MINIAPP_HOST_SECRET and given to each host on a pipe, never in an environment (docs/webdriver.md)")
		fmt.Fprintln(w, "every host gets this front's --dashboard and --service, the only service the secret goes to; a New Session naming another is refused")
		fmt.Fprintln(w, "the service's development controls (.../miniapp-host/service/{control}) need its operator key in MINIAPP_HOST_OPERATOR_KEY, which goes to that dashboard only")
	})
	port := fs.Int("port", 4444, "the loopback port to listen on (0: a free one, printed)")
	driver := fs.String("driver", "WebKitWebDriver", "WebKitWebDriver's path, or its name on PATH (Debian package webkit2gtk-driver)")
	dashboard := fs.String("dashboard", defaultDashboardURL, "the dashboard URL ({dashboard_url}) every host resolves with")
	network := fs.String("session-network", "auto", "where each session's host and driver run: private (a network namespace of their own, through bubblewrap, so that no other local process reaches the host's inspector), shared (the machine's loopback), auto (private where bubblewrap can make one)")
	service := fs.String("service", "", "the authorization server's issuer URL every host signs in with, the only one the hosts' secret goes to (default: the one the dashboard names, GET {dashboard_url}/api/service, asked once at start)")
	secrets, err := host.TakeSecretEnv()
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: webdriver:", err)
		return exitUndecided
	}
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if msg := webdriverUsage(args, *port); msg != "" {
		return usageError(e, "webdriver", msg)
	}
	drv, err := exec.LookPath(*driver)
	if err != nil {
		return usageError(e, "webdriver", fmt.Sprintf("--driver %s: %v (install Debian's webkit2gtk-driver, or name its path)", *driver, err))
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: webdriver: this binary's path:", err)
		return exitUndecided
	}
	secret := secrets[host.HostSecretEnv]
	if secret == "" {
		fmt.Fprintln(e.stderr, "miniapp-host: webdriver: MINIAPP_HOST_SECRET is not set: the hosts it starts cannot complete a consent")
	}
	if msg := webdriverURLs(*dashboard, *service); msg != "" {
		return usageError(e, "webdriver", msg)
	}
	if *service == "" {
		// Asked once: a dashboard that later names another service
		// does not move the hosts' secret (docs/webdriver.md, "One service").
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		*service, err = host.ServiceIssuer(sctx, nil, *dashboard)
		cancel()
		if err != nil {
			fmt.Fprintln(e.stderr, "miniapp-host: webdriver:", err)
			return exitUndecided
		}
	}
	mode, ok := sessionNetwork(e, *network)
	if !ok {
		return exitUsage
	}
	f, err := webdriverfront.New(webdriverfront.Config{Addr: "127.0.0.1:" + strconv.Itoa(*port), Driver: drv, Host: self,
		Secret: secret, OperatorKey: secrets[operatorKeyEnv], Dashboard: *dashboard, Service: *service, Env: os.Environ(), Log: e.stderr,
		Network: mode, Supervisor: []string{self, "webdriver-session"}})
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUsage
	}
	if err := f.Listen(); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUndecided
	}
	fmt.Fprintf(e.stdout, "webdriver %s\n", f.URL())
	fmt.Fprintf(e.stderr, "miniapp-host webdriver: every host resolves with the dashboard %s and signs in with %s\n", *dashboard, *service)
	return serveFront(ctx, e, f)
}

// webdriverUsage checks webdriver's arguments (none) and --port: a usage
// error, or "".
func webdriverUsage(args []string, port int) string {
	if len(args) > 0 {
		return fmt.Sprintf("unexpected argument %q: every input is a flag", args[0])
	}
	if port < 0 || port > 65535 {
		return fmt.Sprintf("--port %d: a TCP port is 0 to 65535", port)
	}
	return ""
}

// webdriverURLs checks --dashboard and --service (either may be empty):
// a usage error, or "".
func webdriverURLs(dashboard, service string) string {
	for _, c := range []struct{ flag, value string }{{"dashboard", dashboard}, {"service", service}} {
		if u, err := url.Parse(c.value); c.value != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return fmt.Sprintf("--%s %q: an absolute http(s) URL, e.g. http://127.0.0.1:8601", c.flag, c.value)
		}
	}
	return ""
}

// serveFront serves the front until ctx ends (exit 0) or it fails.
func serveFront(ctx context.Context, e env, f *webdriverfront.Front) int {
	done := make(chan error, 1)
	go func() { done <- f.Serve() }()
	select {
	case <-ctx.Done():
	case err := <-done:
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		f.Close()
		return exitUndecided
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
	}
	<-done
	return exitOK
}

// sessionNetwork resolves --session-network: private needs bubblewrap able
// to make a network namespace (a usage error says what is missing when
// asked for explicitly); auto falls back to shared and says so.
func sessionNetwork(e env, flag string) (string, bool) {
	switch flag {
	case "shared":
		fmt.Fprintln(e.stderr, "miniapp-host webdriver: --session-network shared: any local process can attach to a session's inspector port (docs/webdriver.md)")
		return webdriverfront.NetworkShared, true
	case "private", "auto":
		err := webdriverfront.PrivateNetworkCheck("bwrap")
		if err == nil {
			return webdriverfront.NetworkPrivate, true
		}
		if flag == "private" {
			usageError(e, "webdriver", "--session-network private: "+err.Error())
			return "", false
		}
		fmt.Fprintf(e.stderr, "miniapp-host webdriver: sessions share the machine's loopback (any local process can attach to a session's inspector port): %v\n", err)
		return webdriverfront.NetworkShared, true
	}
	usageError(e, "webdriver", fmt.Sprintf("--session-network %q: private, shared or auto", flag))
	return "", false
}

// runWebDriverSession is `miniapp-host webdriver-session`, which the front
// starts inside bubblewrap for one session (webdriverfront.RunSession).
func runWebDriverSession(ctx context.Context, e env) int {
	fs := newFlagSet("webdriver-session", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host webdriver-session")
		fmt.Fprintln(w, "internal: miniapp-host webdriver starts it inside bubblewrap, one per session, with the session's spec on standard input;")
		fmt.Fprintln(w, "it runs the session's host and WebKitWebDriver in that network namespace (docs/webdriver.md, \"A private network per session\")")
	})
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if len(args) > 0 {
		return usageError(e, "webdriver-session", "no arguments: the front gives the session's spec on standard input")
	}
	return webdriverfront.RunSession(ctx, e.stdin, e.stdout, e.stderr)
}
