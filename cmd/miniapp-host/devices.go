package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/miniapp-host/miniapp-host/device"
)

// runDevices is `miniapp-host devices [--json]`: the devices a launch can
// show a Miniapp as (docs/playground.md, "Devices").
func runDevices(_ context.Context, e env) int {
	fs := newFlagSet("devices", func(w io.Writer) {
		fmt.Fprintln(w, "usage: miniapp-host devices [--json]")
		fmt.Fprintln(w, "lists the device presets that open, dev and the playground take as --device NAME (or a size WIDTHxHEIGHT@DPR):")
		fmt.Fprintln(w, "each one's CSS viewport in portrait, device pixel ratio, safe-area insets per orientation, touch and user agent")
	})
	asJSON := fs.Bool("json", false, "print the presets as a JSON array")
	pos, code, ok := parseFlags(e, fs, e.args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(e, "devices", fmt.Sprintf("takes no arguments, got %q", pos[0]))
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(device.Presets()); err != nil {
			fmt.Fprintln(e.stderr, "miniapp-host: devices:", err)
			return exitUndecided
		}
		return exitOK
	}
	fmt.Fprintf(e.stdout, "%-19s %-9s %-8s %-6s %-22s %-22s %s\n", "NAME", "VIEWPORT", "KIND", "DPR", "INSETS PORTRAIT", "INSETS LANDSCAPE", "TOUCH")
	for _, d := range device.Presets() {
		size, dpr := "fills", "-"
		if d.Width > 0 {
			size, dpr = fmt.Sprintf("%dx%d", d.Width, d.Height), fmt.Sprint(d.DPR)
		}
		fmt.Fprintf(e.stdout, "%-19s %-9s %-8s %-6s %-22s %-22s %v\n", d.Name, size, d.Kind, dpr,
			insetsText(d.SafeArea.Portrait), insetsText(d.SafeArea.Landscape), d.Touch)
	}
	fmt.Fprintln(e.stdout, "\ninsets are top right bottom left, in CSS pixels; a custom device is WIDTHxHEIGHT@DPR (390x844@3);")
	fmt.Fprintln(e.stdout, "--json adds each one's title and user agent. What the page sees of each: docs/playground.md, \"Devices\".")
	return exitOK
}

func insetsText(in device.Insets) string {
	return strings.Join([]string{fmt.Sprint(in.Top), fmt.Sprint(in.Right), fmt.Sprint(in.Bottom), fmt.Sprint(in.Left)}, " ")
}
