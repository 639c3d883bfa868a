package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeviceFlagRefusals: open, playground and dev refuse a device that
// does not exist, a malformed size, a theme, a locale that is no BCP 47
// tag, a zoom out of range and a profile that is missing or cannot be used,
// each with exit 2 and the flag (or the profile's field) named with how to
// fix it, before any window or server starts.
func TestDeviceFlagRefusals(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	os.MkdirAll(filepath.Join(cfg, "miniapp-host"), 0o700)
	os.WriteFile(filepath.Join(cfg, "miniapp-host", "profiles.json"), []byte(`{"profiles": [
  {"name": "nokia", "origin": "http://127.0.0.1:8701", "id": "demo-public", "device": "nokia-3310"},
  {"name": "ok", "origin": "http://127.0.0.1:8701", "id": "demo-public", "device": "pixel-8"}]}`), 0o600)
	app := []string{"--origin", "http://127.0.0.1:1", "--id", "x"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"open", "--device", "nokia-3310"}, app...), `--device: unknown device "nokia-3310": use one of iphone-se`},
		{append([]string{"open", "--device", "390x"}, app...), `--device: "390x" is not WIDTHxHEIGHT@DPR: write it as e.g. 390x844@3`},
		{append([]string{"open", "--device", "90x844@3"}, app...), "width and height must be 200 to 4096 CSS pixels"},
		{append([]string{"open", "--theme", "sepia"}, app...), `--theme: theme "sepia": use light or dark`},
		{append([]string{"open", "--locale", "de_CH.UTF-8"}, app...), `--locale: locale "de_CH.UTF-8" is a POSIX locale name, not a BCP 47 tag: write it as de-CH`},
		{append([]string{"open", "--zoom", "7"}, app...), "--zoom 7: use 0.25 to 2"},
		{append([]string{"open", "--start", "https://evil.example/"}, app...), `--start: "https://evil.example/" is not a path on the Miniapp's origin`},
		{[]string{"open", "--profile", "missing"}, `launch profile "missing": no such profile`},
		{[]string{"open", "--profile", "nokia"}, `launch profile nokia: device: unknown device "nokia-3310"`},
		{[]string{"playground", "--device", "nokia-3310"}, `--device: unknown device "nokia-3310"`},
		{[]string{"playground", "--layout", "grid"}, "--layout: layout \"grid\": use side"},
		{[]string{"dev", "--locale", "xx_!!", "some-dir"}, "--locale: locale"},
		{[]string{"dev", "--profile", "ok"}, "--profile ok opens a published Miniapp"},
	} {
		var out, errs syncBuffer
		code := run(context.Background(), env{args: tc.args, stdout: &out, stderr: &errs, getenv: os.Getenv})
		if code != exitUsage || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errs.String(), tc.want)
		}
	}
}
