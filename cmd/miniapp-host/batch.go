package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/miniapp-host/miniapp-host/privatefile"
	"github.com/miniapp-host/miniapp-host/resolver"
)

// resolveBatch is `resolve --from FILE` and `resolve --manifests DIR`
// (docs/resolve.md, "Many Miniapps at once"): every Miniapp of the list or
// the folder, reported as text or --json and as a --junit report; the
// exit code is the worst outcome.
func resolveBatch(ctx context.Context, e env, f *resolveFlags, args []string) int {
	if msg := f.batchUsage(args); msg != "" {
		return usageError(e, "resolve", msg)
	}
	cfg := f.cfg
	if *f.manifests != "" {
		cfg.Dashboard = "" // an offline batch asks no dashboard
	}
	r, err := resolver.New(cfg)
	if err != nil {
		return usageError(e, "resolve", err.Error())
	}
	b, err := runBatch(ctx, r, *f.from, *f.manifests)
	if err != nil {
		return usageError(e, "resolve", err.Error())
	}
	if *f.junit != "" {
		if err := writeJUnit(*f.junit, b); err != nil {
			fmt.Fprintln(e.stderr, "miniapp-host: resolve:", err)
			return exitUsage
		}
	}
	if !*f.asJSON {
		b.WriteText(e.stdout)
	} else if err := b.WriteJSON(e.stdout); err != nil {
		fmt.Fprintln(e.stderr, "miniapp-host:", err)
		return exitUsage
	}
	return outcomeExit(b.Outcome())
}

// runBatch resolves the Miniapps of the list in the file from, or checks
// the manifests of the folder dir.
func runBatch(ctx context.Context, r *resolver.Resolver, from, dir string) (*resolver.Batch, error) {
	if from != "" {
		list, err := resolver.ReadList(from)
		if err != nil {
			return nil, err
		}
		return r.ResolveList(ctx, list), nil
	}
	names, err := resolver.ManifestFiles(dir)
	if err != nil {
		return nil, err
	}
	return r.CheckDir(ctx, dir, names), nil
}

// writeJUnit writes the batch's JUnit report to path (package
// privatefile: mode 0600, whole or not at all, never through a link).
func writeJUnit(path string, b *resolver.Batch) error {
	var buf bytes.Buffer
	if err := b.WriteJUnit(&buf, time.Now()); err != nil {
		return err
	}
	return privatefile.Write(path, buf.Bytes())
}
