//go:build linux && cgo

package webkitgtk

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/host"
)

// TestSignalHandlers checks, in the live process after pages and script
// results have gone through the UI process's JavaScriptCore, the rule
// docs/webkitgtk.md ("Signals") gives: every handler C code installed has
// SA_ONSTACK, which Go needs, except JavaScriptCore's thread-suspend
// signal's, which must run on the thread's own stack.
func TestSignalHandlers(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>signals</title><p>signals")
	}))
	defer page.Close()
	e := testEnv(t)
	mount(t, host.Miniapp{Name: "signals", LoadURL: mustURL(t, page.URL+"/"), Consent: e.Consent,
		Policy: host.Policy{Authorize: mustURL(t, e.Authorize), Allowed: []string{page.URL}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A script result deserialised in the UI process: JSC is in use.
	if _, err := testWin.EvalResult(ctx, `Array.from({length: 4000}, (_, i) => ({i}))`); err != nil {
		t.Fatal(err)
	}
	got := signalsWithoutOnStack()
	if want := []int{suspendSignal()}; !slices.Equal(got, want) {
		t.Errorf("signals whose handler lacks SA_ONSTACK: %v, want only the thread-suspend signal %v", got, want)
	}
}

// TestOneWebKitAPI reads the test binary's libraries: the WebKitGTK API
// its build tags chose (4.1 without a tag, what a plain `go build` links;
// 4.0 with webkit2_40) and the libsoup that goes with it, and neither of
// the other API's (the process would abort with both libsoups); the
// headers it was compiled with say the same API.
func TestOneWebKitAPI(t *testing.T) {
	out, err := exec.Command("ldd", os.Args[0]).Output()
	if err != nil {
		t.Fatalf("ldd: %v", err)
	}
	libs := string(out)
	has := func(re string) bool { return regexp.MustCompile(re).MatchString(libs) }
	w40, w41 := has(`libwebkit2gtk-4\.0\.so`), has(`libwebkit2gtk-4\.1\.so`)
	s2, s3 := has(`libsoup-2\.4\.so`), has(`libsoup-3\.0\.so`)
	want := map[string]bool{"4.0": w40 && s2 && !w41 && !s3, "4.1": w41 && s3 && !w40 && !s2}
	if !want[BuildAPI()] {
		t.Fatalf("built for WebKitGTK %s, the binary links webkit2gtk-4.0: %v, webkit2gtk-4.1: %v, libsoup-2.4: %v, libsoup-3.0: %v; "+
			"want webkit2gtk-%s and its libsoup only", BuildAPI(), w40, w41, s2, s3, BuildAPI())
	}
	if API() != BuildAPI() {
		t.Errorf("the headers are WebKitGTK %s's, the build tags chose %s", API(), BuildAPI())
	}
	if api := os.Getenv("WEBKIT_API"); api != "" && api != BuildAPI() {
		t.Errorf("WEBKIT_API=%s but the binary was built for %s", api, BuildAPI())
	}
	t.Logf("WebKitGTK %s: webkit2gtk-4.1: %v, libsoup-3.0: %v", BuildAPI(), w41, s3)
}
