package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolveInput is a file of testdata/resolve/in.
func resolveInput(name string) string {
	return filepath.Join("..", "..", "testdata", "resolve", "in", name)
}

// TestResolveOffline checks manifests before deployment, in text and JSON,
// against golden files.
func TestResolveOffline(t *testing.T) {
	tests := []struct {
		name, manifest, client, manifestURL, id string
		wantCode                                int
	}{
		{"offline-confidential", "notes.webmanifest", "client-confidential.json", "https://notes.example/miniapp.webmanifest", "com.example.notes", exitOK},
		{"offline-public", "public.webmanifest", "client-public.json", "https://ToDo.EXAMPLE:443/v1/miniapp.webmanifest", "com.example.todo", exitOK},
		{"offline-schema", "bad.webmanifest", "client-confidential.json", "https://notes.example/miniapp.webmanifest", "com.example.notes", exitRejected},
		{"offline-evil-urls", "evil-start.webmanifest", "client-confidential.json", "https://notes.example/miniapp.webmanifest", "com.example.notes", exitRejected},
		{"offline-confidential-as-public", "public.webmanifest", "client-confidential.json", "https://todo.example/miniapp.webmanifest", "com.example.todo", exitRejected},
		{"offline-id-mismatch", "notes.webmanifest", "client-confidential.json", "https://notes.example/miniapp.webmanifest", "com.example.other", exitRejected},
		// Every stage that still has input reports: schema, identity and origins at once.
		{"offline-many-stages", "many-stages.webmanifest", "client-public.json", "https://todo.example/miniapp.webmanifest", "com.example.todo", exitRejected},
		// Without --client: the manifest alone, and the output names what was not checked.
		{"offline-manifest-only", "notes.webmanifest", "", "https://notes.example/miniapp.webmanifest", "com.example.notes", exitOK},
		{"offline-manifest-only-no-url", "notes.webmanifest", "", "", "com.example.notes", exitOK},
		{"offline-manifest-only-rejected", "evil-start.webmanifest", "", "https://notes.example/miniapp.webmanifest", "com.example.notes", exitRejected},
		{"offline-manifest-only-schema", "bad.webmanifest", "", "", "com.example.notes", exitRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"resolve", "--manifest", resolveInput(tt.manifest), "--id", tt.id}
			if tt.client != "" {
				args = append(args, "--client", resolveInput(tt.client))
			}
			if tt.manifestURL != "" {
				args = append(args, "--manifest-url", tt.manifestURL)
			}
			code, out, stderr := runCLI(t, "", args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			golden(t, "resolve/out/"+tt.name+".txt", out)
			code, out, _ = runCLI(t, "", append(args, "--json")...)
			if code != tt.wantCode {
				t.Fatalf("--json: exit %d, want %d", code, tt.wantCode)
			}
			golden(t, "resolve/out/"+tt.name+".json", out)
		})
	}
}

// TestResolveOnline resolves against loopback servers: a Miniapp and a
// dashboard. Their addresses change per run, so outputs name them {origin}
// and {dashboard}.
func TestResolveOnline(t *testing.T) {
	manifest, err := os.ReadFile(resolveInput("notes.webmanifest"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		dashStatus   int  // 0: 200
		dashDown     bool // nothing listens at the dashboard address
		origin       string
		extra        []string
		wantCode     int
		wantInStdout string
	}{
		{name: "online-accepted", wantCode: exitOK, wantInStdout: "accepted: Notes"},
		{name: "online-not-registered", dashStatus: http.StatusNotFound, wantCode: exitRejected, wantInStdout: "client-not-registered"},
		{name: "online-dashboard-error", dashStatus: http.StatusServiceUnavailable, wantCode: exitUndecided, wantInStdout: "could not decide"},
		{name: "online-dashboard-down", dashDown: true, wantCode: exitUndecided, wantInStdout: "could not decide"},
		{name: "online-origin-with-path", origin: "{origin}/app", wantCode: exitRejected, wantInStdout: "origin-invalid"},
		{name: "online-insecure-origin", origin: "http://notes.example", wantCode: exitRejected, wantInStdout: "origin-insecure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var appURL string
			app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/miniapp.webmanifest" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/manifest+json")
				_, _ = w.Write(manifest)
			}))
			defer app.Close()
			appURL = app.URL
			dash := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.dashStatus != 0 {
					w.WriteHeader(tt.dashStatus)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"redirect_uris":["` + appURL + `/auth/callback"],"allowed_origins":["` + appURL + `"],"client_type":"confidential"}`))
			}))
			defer dash.Close()
			if tt.dashDown {
				dash.Close()
			}
			o := appURL
			if tt.origin != "" {
				o = strings.ReplaceAll(tt.origin, "{origin}", appURL)
			}
			placeholders := strings.NewReplacer(appURL, "{origin}", dash.URL, "{dashboard}", strings.TrimPrefix(dash.URL, "http://"), "{dashboard-host}")
			args := []string{"resolve", "--origin", o, "--id", "com.example.notes", "--dashboard", dash.URL, "--timeout", "2s"}
			code, out, stderr := runCLI(t, "", args...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantInStdout) {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q", code, tt.wantCode, out, stderr)
			}
			golden(t, "resolve/out/"+tt.name+".txt", placeholders.Replace(out))
			code, out, _ = runCLI(t, "", append(args, "--json")...)
			if code != tt.wantCode {
				t.Fatalf("--json: exit %d, want %d", code, tt.wantCode)
			}
			golden(t, "resolve/out/"+tt.name+".json", placeholders.Replace(out))
		})
	}
}

func TestResolveUsage(t *testing.T) {
	m, c := resolveInput("notes.webmanifest"), resolveInput("client-confidential.json")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{

		{"no id", []string{"--origin", "https://a.example"}, exitUsage, "--id is required"},
		{"no origin", []string{"--id", "x"}, exitUsage, "--origin is required"},
		{"unknown flag", []string{"--id", "x", "--frob"}, exitUsage, "flag provided but not defined"},
		{"argument", []string{"--id", "x", "--origin", "https://a.example", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"online and offline", []string{"--id", "x", "--origin", "https://a.example", "--manifest", m}, exitUsage, "use one or the other"},
		{"client without manifest", []string{"--id", "x", "--client", c, "--manifest-url", "https://a.example/m"}, exitUsage, "an offline check needs --manifest FILE"},
		{"offline, missing file", []string{"--id", "x", "--manifest", m + ".missing", "--client", c, "--manifest-url", "https://a.example/m"}, exitUsage, "no such file"},
		{"zero timeout", []string{"--id", "x", "--origin", "https://a.example", "--timeout", "0s"}, exitUsage, "--timeout must be positive"},
		{"bad dashboard", []string{"--id", "x", "--origin", "https://a.example", "--dashboard", "http://dash.example"}, exitUsage, "plain http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, "", append([]string{"resolve"}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) || out != "" {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q (want %q)", code, tt.wantCode, out, stderr, tt.wantStderr)
			}
		})
	}
}
