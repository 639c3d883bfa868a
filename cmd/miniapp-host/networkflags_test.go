package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNetworkFlagRefusals: open, playground and dev refuse a --network
// that is no preset nor LATENCY/DOWN/UP, and a --mock file that is
// missing, no rules file, or holds a rule with an unknown member or a bad
// pattern, each with exit 2 naming the flag and the rule's field (its JSON
// pointer), before any window or server starts.
func TestNetworkFlagRefusals(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	typo := write("typo.json", `{"rules": [{"url": "http://127.0.0.1:*/api/*", "stauts": 503}]}`)
	https := write("https.json", `{"rules": [{"method": "GET", "url": "http://127.0.0.1:*/a"}, {"url": "https://127.0.0.1/*"}]}`)
	array := write("array.json", `[{"url": "http://127.0.0.1/"}]`)
	os.MkdirAll(filepath.Join(dir, "miniapp-host"), 0o700)
	write(filepath.Join("miniapp-host", "profiles.json"), `{"profiles": [
  {"name": "slow", "origin": "http://127.0.0.1:8701", "id": "demo-public", "network": "slow-9g"}]}`)
	app := []string{"--origin", "http://127.0.0.1:1", "--id", "x"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"open", "--network", "slow-4g"}, app...), `--network "slow-4g": use offline, slow-3g, fast-3g, none, or LATENCY/DOWN/UP`},
		{append([]string{"open", "--network", "300/400/400"}, app...), `--network "300/400/400": the latency "300" is not a duration`},
		{append([]string{"open", "--mock", filepath.Join(dir, "missing.json")}, app...), "--mock: open "},
		{append([]string{"open", "--mock", typo}, app...), "mock rules: /rules/0/stauts: unknown member: a rule's members are method, url, status, headers, body, delay"},
		{append([]string{"open", "--mock", https}, app...), "mock rules: /rules/1/url: \"https://127.0.0.1/*\": an https request reaches the host's proxy as a tunnel"},
		{append([]string{"open", "--mock", array}, app...), "mock rules: /: "},
		{[]string{"open", "--profile", "slow"}, `launch profile slow: network: network "slow-9g"`},
		{[]string{"playground", "--network", "1s/x/0"}, `--network "1s/x/0": the download bandwidth "x"`},
		{[]string{"dev", "--mock", typo, "some-dir"}, "/rules/0/stauts"},
	} {
		var out, errs syncBuffer
		code := run(context.Background(), env{args: tc.args, stdout: &out, stderr: &errs, getenv: os.Getenv})
		if code != exitUsage || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errs.String(), tc.want)
		}
	}
}
