package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPlayground starts `playground` on free ports, waits for the printed
// addresses, reads the launcher's list of Miniapps with the printed token,
// and stops it with the context. The host's credential is the one
// MINIAPP_HOST_SECRET names, which `open` reads too.
func TestPlayground(t *testing.T) {
	t.Setenv("MINIAPP_HOST_SECRET", "shared-with-the-open-command")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errs syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, env{args: []string{"playground", "--no-window", "--addr", "127.0.0.1:0", "--launcher-addr", "127.0.0.1:0"},
			stdout: &out, stderr: &errs})
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
		regexp.MustCompile(`(?m)^host credential\s+miniapp-host shared-with-the-open-command$`),
		regexp.MustCompile(`(?m)^\s+\(MINIAPP_HOST_SECRET=shared-with-the-open-command miniapp-host open --dashboard http://127\.0\.0\.1:[1-9]\d* \.\.\. completes`),
		regexp.MustCompile(`(?m)^demo Miniapp\s+http://127\.0\.0\.1:[1-9]\d*  --id demo-confidential`),
		regexp.MustCompile(`(?m)^broken Miniapp\s+http://127\.0\.0\.1:[1-9]\d*  --id broken-no-auth-url  \(broken, rejected at client with auth-url-required\)$`),
	} {
		if !want.MatchString(text) {
			t.Errorf("output lacks %s:\n%s", want, text)
		}
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
	if err != nil || len(list.Miniapps) != 6 {
		t.Errorf("launcher lists %+v (%v)", list, err)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}
