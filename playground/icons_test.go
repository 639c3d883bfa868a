package playground

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestIconProxy launches the public demo and fetches its icons through the
// launcher's API, as the manifest panel does: the images come back with
// their type and a CSP that runs nothing, and a launch or an index the
// playground does not keep is refused with a code that says which.
func TestIconProxy(t *testing.T) {
	p := start(t, Config{})
	pub := entry(t, p, DemoPublicID)
	var res LaunchResult
	if st := call(t, p, http.MethodPost, "/api/launch", map[string]string{"origin": pub.Origin, "id": DemoPublicID}, &res); st != http.StatusOK {
		t.Fatalf("launch: %d", st)
	}
	if res.Manifest == nil || res.Client == nil || res.Client.ClientType != "public" || len(res.Icons) != 2 || res.Launch == "" {
		t.Fatalf("launch result %+v", res)
	}
	for _, ic := range res.Icons {
		req, _ := http.NewRequest(http.MethodGet, p.LauncherOrigin()+ic.Path, nil)
		req.Header.Set("Authorization", "Bearer "+p.AutomationToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ic.Type || len(body) == 0 ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("%s: %d %q %q (%d bytes)", ic.Src, resp.StatusCode, resp.Header.Get("Content-Type"),
				resp.Header.Get("Content-Security-Policy"), len(body))
		}
	}
	for _, c := range []struct {
		path, code string
		status     int
	}{
		{"/api/icon?launch=launch-999&index=0", "unknown_launch", http.StatusNotFound},
		{"/api/icon?launch=" + res.Launch + "&index=7", "invalid_request", http.StatusBadRequest},
		{"/api/icon?launch=" + res.Launch + "&index=x", "invalid_request", http.StatusBadRequest},
	} {
		var e struct {
			Error struct{ Code, Message string }
		}
		if st := call(t, p, http.MethodGet, c.path, nil, &e); st != c.status || e.Error.Code != c.code || e.Error.Message == "" {
			t.Errorf("%s: %d %+v, want %d %s", c.path, st, e, c.status, c.code)
		}
	}
}
