package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/assets"
)

// TestScriptUnderNode runs the real bridge script (assets/bridge) under
// Node with a fake window, against a real Dispatcher: the page's promises,
// ids, errors and events go through the same JSON the webview would carry.
// Node is required: without it the script would go untested, so the test
// fails rather than skips.
func TestScriptUnderNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found on PATH (%v): this test runs assets/bridge/miniapp.js under Node.js 18 or later; install it (Debian: apt-get install nodejs)", err)
	}
	t.Run("in the host", func(t *testing.T) {
		fx := newFixture(t, 0)
		got := runHarness(t, node, fx.d.Script(), "host", fx)
		want := map[string]string{
			"shape":                                 `{"inHost":true,"version":"1.0.0","frozen":true,"transportVisible":"undefined","receiveWritable":false}`,
			"replaced":                              `true`,
			"getContext":                            `{"ok":{"id":"com.example.app","origin":"https://app.example","theme":"dark","host_version":"0.1.0","bridge_version":"1.0.0","subject":"sub-1"}}`,
			"ready":                                 `{"ok":null}`,
			"parallel":                              `{"authorize":{"ok":{"access_token":"at-openid+profile","token_type":"Bearer","expires_in":300,"scope":"openid profile"}},"getContext":"com.example.app"}`,
			"authorize invalid":                     `{"code":"invalid_params","name":"MiniappError"}`,
			"authorize refused by the server":       `{"code":"host_error","server_error":"invalid_scope","server_error_description":"scope 'server-refuses' is not in the catalog"}`,
			"authorize too large":                   `{"code":"too_large","name":"MiniappError"}`,
			"openExternal without gesture":          `{"code":"no_user_gesture","name":"MiniappError"}`,
			"openExternal after Eval only":          `{"code":"no_user_gesture","name":"MiniappError"}`,
			"openExternal after synthetic click":    `{"code":"no_user_gesture","name":"MiniappError"}`,
			"openExternal after activation expired": `{"code":"no_user_gesture","name":"MiniappError"}`,
			"openExternal 6 s after the click":      `{"code":"no_user_gesture","name":"MiniappError"}`,
			"input listeners":                       `"keydown:capture mousedown:capture pointerdown:capture pointerup:capture touchend:capture click:capture"`,
			"openExternal":                          `{"ok":null}`,
			"openExternal javascript":               `{"code":"invalid_url","name":"MiniappError"}`,
			"events":                                `["light"]`,
			"unknown event":                         `"TypeError"`,
		}
		compareReports(t, got, want)
		fx.host.mu.Lock()
		defer fx.host.mu.Unlock()
		if len(fx.host.opened) != 1 || fx.host.opened[0] != "https://docs.example/" {
			t.Errorf("host opened %q", fx.host.opened)
		}
	})
	t.Run("a hostile page", func(t *testing.T) {
		// The review's repro: prototype pollution and replaced globals
		// must neither reveal the key to page code nor turn a call
		// without input into one with "gesture": true.
		fx := newFixture(t, 0)
		got := runHarness(t, node, fx.d.Script(), "hostile", fx)
		compareReports(t, got, map[string]string{
			"toJSON: openExternal without input":                 `{"code":"no_user_gesture","name":"MiniappError"}`,
			"toJSON: openExternal of a URL object after a click": `{"ok":null}`,
			"params setter: authorize":                           `{"ok":{"access_token":"at-openid","token_type":"Bearer","expires_in":300,"scope":"openid"}}`,
			"globals replaced: authorize":                        `{"ok":{"access_token":"at-openid+profile","token_type":"Bearer","expires_in":300,"scope":"openid profile","authorization_details":[{"type":"bank_account","actions":["read"]}]}}`,
			"cyclic params":                                      `{"code":"invalid_params","name":"MiniappError"}`,
			"BigInt in params":                                   `{"code":"invalid_params","name":"MiniappError"}`,
			"openExternal of a number":                           `{"code":"invalid_params","name":"MiniappError"}`,
			"JSON rules":                                         `{"ok":{"access_token":"at-openid","token_type":"Bearer","expires_in":300,"scope":"openid","authorization_details":[{"type":"t","b":null,"c":[null,null,0,null,"x"],"d":{}}]}}`,
			"leaks":                                              `[]`,
		})
		fx.host.mu.Lock()
		defer fx.host.mu.Unlock()
		if len(fx.host.opened) != 1 || fx.host.opened[0] != "https://docs.example/u" {
			t.Errorf("host opened %q, want only the URL clicked for", fx.host.opened)
		}
	})
	t.Run("in a plain tab", func(t *testing.T) {
		raw, err := assets.FS.ReadFile("bridge/miniapp.js")
		if err != nil {
			t.Fatal(err)
		}
		got := runHarness(t, node, string(raw), "tab", nil)
		compareReports(t, got, map[string]string{
			"shape":      `{"inHost":false,"version":"1.0.0","receive":"undefined","transportVisible":"undefined"}`,
			"getContext": `{"code":"not_in_host","name":"MiniappError"}`,
			"authorize":  `{"code":"not_in_host","name":"MiniappError"}`,
		})
	})
	t.Run("injected into another site", func(t *testing.T) {
		// The view shows evil.example: the script installs no transport,
		// keeps no key, and removes the binding.
		fx := newFixture(t, 0)
		got := runHarness(t, node, fx.d.Script(), "foreign", fx)
		compareReports(t, got, map[string]string{
			"shape":      `{"inHost":false,"version":"1.0.0","receive":"undefined","transportVisible":"undefined"}`,
			"getContext": `{"code":"not_in_host","name":"MiniappError"}`,
			"authorize":  `{"code":"not_in_host","name":"MiniappError"}`,
		})
	})
}

// TestScriptVersion keeps the versions in the script and in Go together.
func TestScriptVersion(t *testing.T) {
	raw, err := assets.FS.ReadFile("bridge/miniapp.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"var VERSION = '" + APIVersion + "';",
		"var PROTOCOL = 1;",
		"API version " + APIVersion + ", protocol version 1.",
	} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("miniapp.js lacks %q", want)
		}
	}
	if ProtocolVersion != 1 {
		t.Error("ProtocolVersion changed: update miniapp.js and this test")
	}
	// Every error code the Go side can send is documented for pages.
	doc, err := os.ReadFile(filepath.Join("..", "docs", "bridge.md"))
	if err != nil {
		t.Fatal(err)
	}
	codes := regexp.MustCompile(`(?m)^\s+Code\w+\s+Code = "(\w+)"`).FindAllStringSubmatch(mustRead(t, "errors.go"), -1)
	if len(codes) < 20 {
		t.Fatalf("found %d codes in errors.go", len(codes))
	}
	for _, c := range codes {
		target := doc
		if c[1] == "unknown_command" || c[1] == "command_failed" || c[1] == "bad_token" ||
			c[1] == "bad_origin" || c[1] == "bad_host" || c[1] == "bad_protocol" || c[1] == "service_refused" {
			target, err = os.ReadFile(filepath.Join("..", "docs", "automation.md"))
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Contains(target, []byte("`"+c[1]+"`")) {
			t.Errorf("code %s is not documented", c[1])
		}
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runHarness runs testdata/harness.js on script and plays the host for it
// with fx (nil for a plain tab). It returns the reports by name.
func runHarness(t *testing.T, node, script, scenario string, fx *fixture) map[string]json.RawMessage {
	t.Helper()
	file := filepath.Join(t.TempDir(), "miniapp.js")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join("testdata", "harness.js"), file, scenario)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	var delivered <-chan string
	var started <-chan AuthorizeRequest
	if fx != nil {
		delivered, started = fx.view.delivered, fx.host.started
	}
	reports := map[string]json.RawMessage{}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("node ended without done; stderr:\n%s", stderr.String())
			}
			var m struct {
				Post   *string  `json:"post"`
				Emit   []string `json:"emit"`
				Report *struct {
					Name  string          `json:"name"`
					Value json.RawMessage `json:"value"`
				} `json:"report"`
				Done  bool   `json:"done"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("node wrote %q: %v", line, err)
			}
			switch {
			case m.Post != nil:
				fx.d.Receive(fx.view.frame(), *m.Post)
			case m.Emit != nil:
				for _, e := range m.Emit {
					map[string]func(){
						EventShown: fx.d.EmitShown, EventHidden: fx.d.EmitHidden,
						EventThemeChanged: func() { fx.d.EmitThemeChanged(ThemeLight) },
					}[e]()
				}
			case m.Report != nil:
				reports[m.Report.Name] = m.Report.Value
			case m.Error != "":
				t.Fatalf("scenario failed: %s\nstderr:\n%s", m.Error, stderr.String())
			case m.Done:
				return reports
			}
		case s := <-delivered:
			if s != "" {
				if _, err := stdin.Write([]byte(s + "\n")); err != nil {
					t.Fatal(err)
				}
			}
		case <-started:
			fx.host.consent <- true
		case <-timeout:
			t.Fatalf("scenario did not finish in 20s; reports %d; stderr:\n%s", len(reports), stderr.String())
		}
	}
}

func compareReports(t *testing.T, got map[string]json.RawMessage, want map[string]string) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("no report %q", name)
			continue
		}
		if string(g) != w {
			t.Errorf("%s\n got %s\nwant %s", name, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d reports, want %d", len(got), len(want))
	}
}

// lockedBuffer is a bytes.Buffer that the process writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
