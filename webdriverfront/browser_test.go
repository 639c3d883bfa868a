package webdriverfront

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium (scripts/deps.sh installs it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: run scripts/deps.sh (Debian package chromium)")
	return ""
}

// TestWebPageCannotStartASession: a page on another loopback origin, in
// headless Chromium, sends the red team's New Session the ways any page
// can without a preflight (text/plain, and a body with no type at all):
// the browser adds its Origin, the front refuses both, and nothing runs.
func TestWebPageCannotStartASession(t *testing.T) {
	w := newTripwires(t)
	f, log := startFront(t, w)

	body, _ := json.Marshal(w.redTeamBody())
	front, _ := json.Marshal(f.URL())
	page := `<!doctype html><title>evil</title><script>
const body = ` + string(body) + `, front = ` + string(front) + `;
Promise.allSettled([
  fetch(front + '/session', {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body}),
  fetch(front + '/session', {method: 'POST', mode: 'no-cors', body: new Blob([body])}),
]).then((r) => { document.title = 'sent ' + r.map((x) => x.status).join(' ') })
</script>`
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(rw, page)
	}))
	t.Cleanup(evil.Close)

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL+"/")); err != nil {
		t.Fatalf("load the page: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Poll[string](`document.title.startsWith('sent') ? document.title : ''`,
		chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		t.Fatalf("the page's requests did not settle: %v", err)
	}
	// Opaque answers (no-cors): the page learns nothing, and the front
	// says what it refused.
	if title != "sent fulfilled fulfilled" {
		t.Errorf("the page's fetches ended %q, want both sent (opaque answers)", title)
	}
	refusal := fmt.Sprintf("refused POST /session: the request has an Origin header (%q)", evil.URL)
	log.wait(t, refusal, time.Minute)
	log.mu.Lock()
	n := strings.Count(log.text.String(), refusal)
	log.mu.Unlock()
	if n != 2 {
		t.Errorf("the front logged the refusal %d times, want 2 (one per request)", n)
	}
	if got := f.Sessions(); len(got) != 0 {
		t.Errorf("sessions %q after a page's requests", got)
	}
	w.assertNothingRan(t)
}
