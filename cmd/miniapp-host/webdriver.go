package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	"github.com/miniapp-host/miniapp-host/host"
	"github.com/miniapp-host/miniapp-host/webdriverfront"
)

// runWebDriver is `miniapp-host webdriver`: the W3C WebDriver front of
// WebKitWebDriver (package webdriverfront, docs/webdriver.md), until
// interrupted.
func runWebDriver(ctx context.Context, e env) int {
	fs := newFlagSet("webdriver", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host webdriver [--port 4444] [--driver PATH]")
		fmt.Fprintln(w, "serves W3C WebDriver on 127.0.0.1:PORT; each New Session starts this binary's `open --webdriver` and a WebKitWebDriver of its own.")
		fmt.Fprintln(w, "the hosts' secret is read from MINIAPP_HOST_SECRET and given to each host on a pipe, never in an environment (docs/webdriver.md)")
	})
	port := fs.Int("port", 4444, "the loopback port to listen on (0: a free one, printed)")
	driver := fs.String("driver", "WebKitWebDriver", "WebKitWebDriver's path, or its name on PATH (Debian package webkit2gtk-driver)")
	secrets, err := host.TakeSecretEnv()
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: webdriver:", err)
		return exitUndecided
	}
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if len(args) > 0 {
		return usageError(e, "webdriver", fmt.Sprintf("unexpected argument %q: every input is a flag", args[0]))
	}
	if *port < 0 || *port > 65535 {
		return usageError(e, "webdriver", fmt.Sprintf("--port %d: a TCP port is 0 to 65535", *port))
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
	f, err := webdriverfront.New(webdriverfront.Config{Addr: "127.0.0.1:" + strconv.Itoa(*port), Driver: drv, Host: self,
		Secret: secret, Env: os.Environ(), Log: e.stderr})
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUsage
	}
	if err := f.Listen(); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUndecided
	}
	fmt.Fprintf(e.stdout, "webdriver %s\n", f.URL())
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
