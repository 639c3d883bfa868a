package main

import (
	"context"
	"fmt"
	"io"

	"github.com/miniapp-host/miniapp-host/devapp"
)

// runNew is `miniapp-host new DIR`: a small, complete Miniapp to start
// from (docs/your-miniapp.md).
func runNew(_ context.Context, e env) int {
	fs := newFlagSet("new", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host new [--id ID] [--name NAME] [--issuer URL] DIR")
		fmt.Fprintln(w, "writes a Miniapp into DIR (new or empty) that signs in as a public client and shows a bank account;")
		fmt.Fprintln(w, "then `miniapp-host dev DIR` runs it")
	})
	id := fs.String("id", "", "the manifest's id and OAuth client id (default: from DIR's name)")
	name := fs.String("name", "", "the manifest's name (default: from the id)")
	issuer := fs.String("issuer", devapp.DefaultIssuer, "the authorization service a browser tab signs in at (config.json)")
	args, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if len(args) != 1 {
		return usageError(e, "new", "give the folder to write the Miniapp into")
	}
	files, err := devapp.New(args[0], devapp.NewConfig{ID: *id, Name: *name, Issuer: *issuer})
	if err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host: new:", err)
		return exitUsage
	}
	for _, f := range files {
		fmt.Fprintln(e.stdout, "wrote", f)
	}
	fmt.Fprintf(e.stdout, "\nnext: miniapp-host dev %s\n", args[0])
	return exitOK
}
