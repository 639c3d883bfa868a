package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlayground starts `playground` on free ports, waits for the printed
// addresses, reads the launcher's list of Miniapps with the printed token,
// and stops it with the context. The host's credential is the one
// MINIAPP_HOST_SECRET names, which `open` reads too; the output says it
// was given and never shows it.
func TestPlayground(t *testing.T) {
	t.Setenv("MINIAPP_HOST_SECRET", "shared-with-the-open-command")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, env{args: []string{"playground", "--no-window", "--addr", "127.0.0.1:0", "--launcher-addr", "127.0.0.1:0",
			"--operator-key", fixedOperatorKey}, stdout: &out, stderr: &errs,
			getenv: func(k string) string { return map[string]string{operatorKeyEnv: "an-operator-key-from-the-env"}[k] }})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "Ctrl-C stops everything") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("playground printed no addresses: %s %s", out.String(), errs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	text := out.String()
	launcher := regexp.MustCompile(`(?m)^launcher\s+(http://127\.0\.0\.1:[1-9]\d*)/#token=(\S+)$`).FindStringSubmatch(text)
	if launcher == nil {
		t.Fatalf("no launcher URL with its token:\n%s", text)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^automation channel\s+ws://127\.0\.0\.1:[1-9]\d*/automation$`),
		regexp.MustCompile(`(?m)^automation token\s+` + regexp.QuoteMeta(launcher[2]) + `$`),
		regexp.MustCompile(`(?m)^issuer\s+http://127\.0\.0\.1:[1-9]\d*$`),
		regexp.MustCompile(`(?m)^dashboard_url\s+http://127\.0\.0\.1:[1-9]\d*$`),
		regexp.MustCompile(`(?m)^screenshots\s+\S`),
		regexp.MustCompile(`(?m)^host credential\s+miniapp-host, secret as given \(MINIAPP_HOST_SECRET\)$`),
		regexp.MustCompile(`(?m)^\s+\(miniapp-host open --dashboard http://127\.0\.0\.1:[1-9]\d* \.\.\. with the same MINIAPP_HOST_SECRET completes`),
		regexp.MustCompile(`(?m)^demo Miniapp\s+http://127\.0\.0\.1:[1-9]\d*  --id demo-confidential`),
		regexp.MustCompile(`(?m)^broken Miniapp\s+http://127\.0\.0\.1:[1-9]\d*  --id broken-no-auth-url  \(broken, rejected at client with auth-url-required\)$`),
	} {
		if !want.MatchString(text) {
			t.Errorf("output lacks %s:\n%s", want, text)
		}
	}
	// The host's secret, given, is never printed (as serve prints no
	// given secret): the output says where it came from.
	if strings.Contains(text, "shared-with-the-open-command") || strings.Contains(errs.String(), "shared-with-the-open-command") {
		t.Errorf("the playground printed the MINIAPP_HOST_SECRET it was given:\n%s\n%s", text, errs.String())
	}
	// The operator key (the flag wins over MINIAPP_HOST_OPERATOR_KEY) is
	// not printed, only said to be given, and `review` decides the playground's submissions with it,
	// taken from the environment variable.
	dash := regexp.MustCompile(`(?m)^dashboard_url\s+(\S+)$`).FindStringSubmatch(text)
	if !regexp.MustCompile(`(?m)^operator key\s+as given \(--operator-key\)$`).MatchString(text) || strings.Contains(text, fixedOperatorKey) {
		t.Errorf("output does not say the operator key was given, or prints it:\n%s", text)
	}
	var prj struct{ ID, Key string }
	if code, o, e := cli(t, "", "project", "create", "Reviewed", "--dashboard", dash[1], "--json"); code != exitOK || json.Unmarshal([]byte(o), &prj) != nil {
		t.Fatalf("project create: %d %s %s", code, o, e)
	}
	var sub struct{ ID string }
	if code, o, e := cli(t, "", "policy", "request", "--project", prj.ID, "--scope", "openid", "--dashboard", dash[1], "--key", prj.Key, "--json"); code != exitOK ||
		json.Unmarshal([]byte(o), &sub) != nil {
		t.Fatalf("policy request: %d %s %s", code, o, e)
	}
	t.Setenv(keyEnv, "")
	t.Setenv(operatorKeyEnv, fixedOperatorKey)
	if code, o, e := cli(t, "", "review", "approve", sub.ID, "--dashboard", dash[1]); code != exitOK || !strings.Contains(o, "approved policy submission "+sub.ID) {
		t.Errorf("review approve with %s: %d %s %s", operatorKeyEnv, code, o, e)
	}
	// --addr and --launcher-addr 127.0.0.1:0: every printed address is the
	// port actually bound.
	if bad := regexp.MustCompile(`127\.0\.0\.1:0\b`).FindString(text); bad != "" {
		t.Errorf("playground printed an unbound address %s:\n%s", bad, text)
	}
	req, _ := http.NewRequest(http.MethodGet, launcher[1]+"/api/miniapps", nil)
	req.Header.Set("Authorization", "Bearer "+launcher[2])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Miniapps []struct{ ID string } `json:"miniapps"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	// The three demos (public, confidential, FAPI 2.0) and the four broken
	// Miniapps, in the launcher's order.
	var ids []string
	for _, m := range list.Miniapps {
		ids = append(ids, m.ID)
	}
	want := []string{"demo-public", "demo-confidential", "demo-fapi", "broken-cross-origin", "broken-unknown-member", "broken-unregistered", "broken-no-auth-url"}
	if err != nil || !slices.Equal(ids, want) {
		t.Errorf("launcher lists %v (%v), want %v", ids, err, want)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}
