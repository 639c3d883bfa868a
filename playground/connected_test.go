package playground

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// signInConfidentialDemo signs a browser-like client in to the confidential
// demo as the playground's current subject, through the server's web pages:
// the subject then holds a grant of openid profile.
func signInConfidentialDemo(t *testing.T, p *Playground) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	login, err := c.Get(entry(t, p, DemoConfidentialID).Origin + "/login")
	if err != nil {
		t.Fatal(err)
	}
	consent := form(t, c, login, url.Values{"subject": {p.Subject()}, "action": {"login"}})
	home := form(t, c, consent, url.Values{"action": {"approve"}})
	home.Body.Close()
	if home.StatusCode != http.StatusOK {
		t.Fatalf("the demo's start page after the sign-in: %d", home.StatusCode)
	}
}

// connectedGrant is a grant as GET /api/connected lists it.
type connectedGrant struct {
	ID         string `json:"id"`
	ClientID   string `json:"client_id"`
	ClientName string `json:"client_name"`
	LastUsedAt string `json:"last_used_at"`
	Entries    []struct {
		Entry     string `json:"entry"`
		Meaning   string `json:"meaning"`
		Revocable bool   `json:"revocable"`
	} `json:"entries"`
}

// listConnected returns the grants GET /api/connected lists.
func listConnected(t *testing.T, p *Playground) (subject string, grants []connectedGrant) {
	t.Helper()
	var v struct {
		Subject string `json:"subject"`
		PageURL string `json:"page_url"`
		Clients []struct {
			Grants []connectedGrant `json:"grants"`
		} `json:"clients"`
	}
	if st := call(t, p, http.MethodGet, "/api/connected", nil, &v); st != http.StatusOK {
		t.Fatalf("GET /api/connected: %d", st)
	}
	if !strings.HasSuffix(v.PageURL, "/oauth/connected") {
		t.Errorf("page_url %q", v.PageURL)
	}
	for _, c := range v.Clients {
		grants = append(grants, c.Grants...)
	}
	return v.Subject, grants
}

// TestConnectedMiniappsAPI: after a sign-in to the confidential demo the
// launcher's API lists the subject's grant with its meanings and last use;
// revoking the scope profile leaves openid, openid alone is refused, and
// revoking the grant empties the list; a grant no longer there is 404.
func TestConnectedMiniappsAPI(t *testing.T) {
	p := start(t, Config{})
	sub := p.Bus().Subscribe(1024)
	defer sub.Close()
	if _, gs := listConnected(t, p); len(gs) != 0 {
		t.Fatalf("before any sign-in: %+v", gs)
	}
	signInConfidentialDemo(t, p)
	subject, gs := listConnected(t, p)
	if subject != p.Subject() || len(gs) != 1 {
		t.Fatalf("after the sign-in: subject %q, grants %+v", subject, gs)
	}
	g := gs[0]
	if g.ClientID != DemoConfidentialID || g.LastUsedAt == "" || len(g.Entries) != 2 || g.Entries[1].Entry != "scope profile" ||
		g.Entries[1].Meaning == "" || !g.Entries[1].Revocable || g.Entries[0].Revocable {
		t.Fatalf("the grant: %+v", g)
	}

	var out struct {
		Revoked    []string `json:"revoked"`
		WholeGrant bool     `json:"whole_grant"`
	}
	if st := call(t, p, http.MethodPost, "/api/connected/revoke", map[string]string{"grant_id": g.ID, "entry": "scope profile"}, &out); st != http.StatusOK ||
		strings.Join(out.Revoked, ",") != "scope profile" || out.WholeGrant {
		t.Fatalf("revoking profile: %d %+v", st, out)
	}
	if _, gs := listConnected(t, p); len(gs) != 1 || len(gs[0].Entries) != 1 || gs[0].Entries[0].Entry != "scope openid" {
		t.Fatalf("after revoking profile: %+v", gs)
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if st := call(t, p, http.MethodPost, "/api/connected/revoke", map[string]string{"grant_id": g.ID, "entry": "scope openid"}, &e); st != http.StatusBadRequest || e.Error.Code != "fixed_entry" {
		t.Fatalf("revoking openid alone: %d %+v", st, e)
	}
	if st := call(t, p, http.MethodPost, "/api/connected/revoke", map[string]string{"grant_id": g.ID}, &out); st != http.StatusOK || !out.WholeGrant {
		t.Fatalf("revoking the grant: %d %+v", st, out)
	}
	if _, gs := listConnected(t, p); len(gs) != 0 {
		t.Fatalf("after revoking the grant: %+v", gs)
	}
	// The inspector's events: the token names its grant, and each
	// revocation is reported as the server answered it.
	want := []string{`token.issued {"grant_id":"` + g.ID + `"}`, `grant.revoked {"grant_id":"` + g.ID + `","revoked":["scope profile"],"whole_grant":false}`,
		`grant.revoked {"grant_id":"` + g.ID + `","revoked":["scope openid"],"whole_grant":true}`}
	var seen []string
	for len(seen) < len(want) {
		env, ok := <-sub.C()
		if !ok {
			t.Fatalf("the subscription ended; seen %q", seen)
		}
		var ev struct {
			Kind string `json:"kind"`
			Data struct {
				GrantID    string   `json:"grant_id"`
				Revoked    []string `json:"revoked,omitempty"`
				WholeGrant *bool    `json:"whole_grant,omitempty"`
			} `json:"data"`
		}
		if err := json.Unmarshal(env, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind == "token.issued" || ev.Kind == "grant.revoked" {
			d, _ := json.Marshal(ev.Data)
			seen = append(seen, ev.Kind+" "+string(d))
		}
	}
	if !slices.Equal(seen, want) {
		t.Errorf("inspector events:\n got %q\nwant %q", seen, want)
	}
	if st := call(t, p, http.MethodPost, "/api/connected/revoke", map[string]string{"grant_id": g.ID}, &e); st != http.StatusNotFound || e.Error.Code != "unknown_grant" {
		t.Fatalf("a revoked grant again: %d %+v", st, e)
	}
	if st := call(t, p, http.MethodPost, "/api/connected/revoke", map[string]string{"entry": "scope profile"}, &e); st != http.StatusBadRequest {
		t.Fatalf("without grant_id: %d %+v", st, e)
	}
}
