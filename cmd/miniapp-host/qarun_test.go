package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestQARunKeepsNoSecretInItsArtifacts runs examples/qa/run.sh as make
// test does, with this binary as the host (BIN) and a suite that fails at
// once (an invalid go test flag): the run fails, the playground's and the
// front's output are left in QA_LOGS, and none of it holds the random
// MINIAPP_HOST_SECRET the script made (64 hex digits; the playground says
// its secret was given instead of printing it).
func TestQARunKeepsNoSecretInItsArtifacts(t *testing.T) {
	if os.Getenv("DISPLAY") == "" {
		t.Fatal("no DISPLAY: run under xvfb-run -a (make test does)")
	}
	if _, err := exec.LookPath("WebKitWebDriver"); err != nil {
		t.Fatalf("WebKitWebDriver is not installed (Debian package webkit2gtk-driver; scripts/deps.sh installs it): %v", err)
	}
	bin, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	cmd := exec.CommandContext(t.Context(), filepath.Join("..", "..", "examples", "qa", "run.sh"), "go", "-timeout=not-a-duration")
	cmd.Env = childEnv("BIN="+bin, "QA_LOGS="+logs, "QA_START_TIMEOUT=120", "XDG_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("run.sh: %v\n%s", err, out)
	if err == nil {
		t.Fatalf("run.sh with a failing suite succeeded:\n%s", out)
	}
	entries, err := os.ReadDir(logs)
	if err != nil || len(entries) == 0 {
		t.Fatalf("run.sh left no artifacts in %s (%v):\n%s", logs, err, out)
	}
	hex64 := regexp.MustCompile(`[0-9a-f]{64}`)
	kept := map[string]string{}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(logs, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		kept[e.Name()] = string(raw)
		if s := hex64.FindString(string(raw)); s != "" {
			t.Errorf("the artifact %s holds a 64-hex-digit value, the run's secret: %s", e.Name(), s)
		}
	}
	if s := hex64.FindString(string(out)); s != "" {
		t.Errorf("run.sh's output holds a 64-hex-digit value, the run's secret: %s", s)
	}
	if !strings.Contains(kept["playground.log"], "secret as given (MINIAPP_HOST_SECRET)") || kept["driver.log"] == "" {
		t.Errorf("artifacts %v: want playground.log saying the secret was given, and driver.log:\n%s", keys(kept), kept["playground.log"])
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
