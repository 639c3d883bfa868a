package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion is `miniapp-host version` (and --version).
func runVersion(_ context.Context, e env) int {
	fs := newFlagSet("version", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host version")
		fmt.Fprintln(w, "prints the module version, or the revision the binary was built from, and the Go version")
	})
	pos, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(e, "version", fmt.Sprintf("takes no arguments, got %q", pos[0]))
	}
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprint(e.stdout, versionText(bi, ok))
	return exitOK
}

// versionText describes a build from its build information
// (runtime/debug.ReadBuildInfo): the module version when the binary was
// built from a released module (go install ...@v1.2.3), else the VCS
// revision it was built from, "+dirty" when the work tree had changes, and
// the commit's time; and the Go version.
func versionText(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "miniapp-host: no build information (a binary built without module support)\n"
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	version := bi.Main.Version
	switch {
	case version != "" && version != "(devel)":
		// A module version; a pseudo-version carries the revision itself.
	case rev != "":
		version = "revision " + rev
		if dirty {
			version += "+dirty"
		}
		if at != "" {
			version += " (committed " + at + ")"
		}
	default:
		version = "devel (no module version or VCS revision recorded, e.g. built by go test or outside a repository)"
	}
	return fmt.Sprintf("miniapp-host %s\nbuilt with %s\n", version, bi.GoVersion)
}
