//go:build webkitmem

package playground

// A measurement, not part of make test (it takes minutes and reads a
// process's RSS): the launcher page in WebKit (WebKitGTK's MiniBrowser,
// driven by WebKitWebDriver), fed the soak's mix of events, and the RSS
// of its web process as they pass the timeline's bound. Run it with
//
//	xvfb-run -a go test -tags webkitmem -run TestLauncherMemoryInWebKit -v ./playground/
//
// BENCHMARKS.md, "Where the WebKit memory goes", has its figures.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// webDriver sends one WebDriver command and returns its value.
func webDriver(t *testing.T, base, method, path string, body any) any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct{ Value any }
	_ = json.Unmarshal(b, &out)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return out.Value
}

// webProcessesRSS is the RSS in MB of every WebKitWebProcess whose
// environment carries tag.
func webProcessesRSS(tag string) map[int]float64 {
	out := map[int]float64{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if !bytes.Contains(env, []byte(tag)) || !strings.HasPrefix(string(comm), "WebKitWebProces") {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for _, l := range strings.Split(string(status), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "VmRSS:" {
				kb, _ := strconv.Atoi(f[1])
				out[pid] = float64(kb) / 1024
			}
		}
	}
	return out
}

// TestLauncherMemoryInWebKit: past the timeline's bound (2,000 events,
// about 20 rounds of 99), 60 more rounds (5,940 events) grow the
// launcher's web process by less than 15%.
func TestLauncherMemoryInWebKit(t *testing.T) {
	binary := "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("WebKitGTK's MiniBrowser: %v (Debian package libwebkit2gtk-4.1-0)", err)
	}
	p := start(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	tag := fmt.Sprintf("MINIAPP_WEBKITMEM=%d", os.Getpid())
	cmd := exec.Command("WebKitWebDriver", "--port="+port)
	cmd.Env = append(os.Environ(), tag)
	if err := cmd.Start(); err != nil {
		t.Fatalf("WebKitWebDriver (Debian package webkit2gtk-driver): %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://127.0.0.1:" + port
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			break
		}
		if i > 300 {
			t.Fatal("WebKitWebDriver did not listen")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := webDriver(t, base, "POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"webkitgtk:browserOptions": map[string]any{"binary": binary, "args": []string{"--automation"}}}}})
	sid := s.(map[string]any)["sessionId"].(string)
	t.Cleanup(func() { webDriver(t, base, "DELETE", "/session/"+sid, nil) })
	webDriver(t, base, "POST", "/session/"+sid+"/url", map[string]any{"url": p.LauncherURL()})
	js := func(script string) any {
		return webDriver(t, base, "POST", "/session/"+sid+"/execute/sync", map[string]any{"script": script, "args": []any{}})
	}
	waitFor := func(what, script string) {
		for i := 0; ; i++ {
			if ok, _ := js("return !!(" + script + ")").(bool); ok {
				return
			}
			if i > 3000 {
				t.Fatalf("waiting for %s: timed out", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the automation channel", `document.body.dataset.ready === "true" && document.getElementById("channel").dataset.state === "open"`)
	sub := p.Bus().Subscribe(4096)
	defer sub.Close()
	total := func() float64 {
		var mb float64
		for _, v := range webProcessesRSS(tag) {
			mb += v
		}
		return mb
	}
	t.Logf("round 0: web processes %.1f MB", total())
	var full float64
	t0 := time.Now()
	for n := 0; n < 80; n++ {
		last := publishRound(t, p.Bus(), sub, n)
		waitFor(fmt.Sprintf("event #%d", last), fmt.Sprintf(`document.querySelector('#timeline li[data-seq="%d"]') !== null`, last))
		if (n+1)%20 == 0 {
			mb := total()
			if n+1 == 20 {
				full = mb
			}
			t.Logf("round %d (%d events, %.0f s): web processes %.1f MB", n+1, (n+1)*99, time.Since(t0).Seconds(), mb)
		}
	}
	if end := total(); end > full*1.15 {
		t.Errorf("the launcher's web process grew from %.1f MB at the bound to %.1f MB after 5,940 more events", full, end)
	}
}
