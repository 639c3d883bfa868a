package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCatalogListing(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"catalog/list.txt", []string{"catalog"}},
		{"catalog/list.json", []string{"catalog", "--json"}},
		{"catalog/list-other-endpoints.txt", []string{"catalog", "--base-url", "https://bank.example", "--signing-base-url", "https://sign.example/v2", "--invoicing-base-url", "https://invoices.example"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, stderr := runCLI(t, "", tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if n := strings.Count(out, "authorization_details"); n != 8 {
				t.Errorf("listing names %d authorization_details types, want 8", n)
			}
			golden(t, tc.golden, out)
		})
	}
}

// TestCatalogCheck runs every request document under testdata/catalog/requests
// and compares the text and JSON outputs with their golden files.
func TestCatalogCheck(t *testing.T) {
	files, err := filepath.Glob("../../testdata/catalog/requests/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no request documents found: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			wantCode := exitRejected
			if strings.HasPrefix(name, "valid") {
				wantCode = exitOK
			}
			code, out, stderr := runCLI(t, "", "catalog", "check", f)
			if code != wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", code, wantCode, stderr)
			}
			golden(t, "catalog/out/"+name+".txt", out)
			// Flags may follow the file, as users type them.
			code, out, _ = runCLI(t, "", "catalog", "check", f, "--json")
			if code != wantCode {
				t.Fatalf("--json: exit %d, want %d", code, wantCode)
			}
			golden(t, "catalog/out/"+name+".out.json", out)
		})
	}
}

func TestCatalogCheckUnreadable(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`{"scope":"`+strings.Repeat("a", 2<<20)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"not an object", `["openid"]`, []string{"-"}, "must be a JSON object, got an array"},
		{"not JSON", `{"scope":`, nil, "not valid JSON"},
		{"absurdly deep", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), nil, "nesting deeper than 32"},
		{"over 1 MiB", "", []string{big}, "larger than 1048576 bytes"},
		{"missing file", "", []string{"/nonexistent/request.json"}, "no such file"},
		{"two files", "", []string{"a.json", "b.json"}, "reads one FILE"},
		{"bad endpoint", "{}", []string{"--base-url", "ftp://bank"}, "endpoint base_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, tc.stdin, append([]string{"catalog", "check"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || out != "" {
				t.Errorf("exit %d stdout %q stderr %q; want exit 2 and %q", code, out, stderr, tc.want)
			}
		})
	}
}
