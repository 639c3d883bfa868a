package authserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// connected is a browser signed in as a subject, on the Connected
// Miniapps page and its JSON API (docs/authserver.md, "Connected Miniapps").
type connected struct {
	*browser
	e *env
}

// api calls the JSON API: GET without body, POST with one and the CSRF
// header (csrf "" sends none); set may change the request.
func (c connected) api(method, path string, body any, csrf string, set func(*http.Request)) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		js, _ := json.Marshal(body)
		rd = strings.NewReader(string(js))
	}
	req, _ := http.NewRequest(method, c.e.u.Issuer+"/oauth/connected/api"+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	if set != nil {
		set(req)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &m); err != nil {
		c.t.Fatalf("%s %s: %d, not JSON: %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, m
}

// list returns the API's view: the CSRF token and the grants, by client.
func (c connected) list() (csrf string, clients []any) {
	c.t.Helper()
	st, m := c.api(http.MethodGet, "", nil, "", nil)
	if st != http.StatusOK {
		c.t.Fatalf("GET the grants: %d %v", st, m)
	}
	return m["csrf"].(string), m["clients"].([]any)
}

// signInConnected signs a fresh browser in as subject through the JSON
// API.
func signInConnected(t *testing.T, e *env, subject string) connected {
	t.Helper()
	c := connected{browser: newBrowser(t, e.u.Issuer), e: e}
	csrf, _ := c.list()
	if st, m := c.api(http.MethodPost, "/login", map[string]string{"subject": subject}, csrf, nil); st != http.StatusOK || m["subject"] != subject {
		t.Fatalf("sign-in as %s: %d %v", subject, st, m)
	}
	return c
}

// onlyGrant returns the one grant of the one client listed.
func onlyGrant(t *testing.T, clients []any) map[string]any {
	t.Helper()
	if len(clients) != 1 {
		t.Fatalf("want one client, got %v", clients)
	}
	gs := clients[0].(map[string]any)["grants"].([]any)
	if len(gs) != 1 {
		t.Fatalf("want one grant, got %v", gs)
	}
	return gs[0].(map[string]any)
}

// entries lists the entry names of a listed grant.
func entries(g map[string]any) string {
	var out []string
	for _, e := range g["entries"].([]any) {
		out = append(out, e.(map[string]any)["entry"].(string))
	}
	return strings.Join(out, ",")
}

// grantedAll runs the per-entry request in a browser signed in as Ana,
// approving everything, and redeems the code: the browser, the access
// token.
func grantedAll(t *testing.T, e *env) (*browser, string) {
	t.Helper()
	b := newBrowser(t, e.u.Issuer)
	v, c := pkce(t)
	q := b.browserCode(e.u.Authorization+"?"+perEntryRequest(e, c).Encode(), subAna, map[string]string{"action": "approve"})
	st, tr := e.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {confRedir}, "code_verifier": {v}}, confID, e.confSecret)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, tr)
	}
	return b, tr["access_token"].(string)
}

// TestConnectedMiniappsRevoke: Ana's grant is listed with its six entries,
// their meanings and its last use; revoking the scope email (the page's
// form) and the signing-key detail (the JSON API) holds at once at the
// grant endpoint, introspection and the signing provider, and the next
// sign-in asks again for exactly those, while the rest stays remembered;
// revoking the whole grant refuses the token everywhere and lists it no
// more, while what another active grant of the client holds stays
// remembered until that grant is revoked too.
func TestConnectedMiniappsRevoke(t *testing.T) {
	e := start(t)
	b, at := grantedAll(t, e)
	c := connected{browser: b, e: e} // the sign-in's session is the page's
	csrf, clients := c.list()
	g := onlyGrant(t, clients)
	if got := entries(g); got != "scope openid,scope profile,scope email,detail 0,detail 1,detail 2" {
		t.Fatalf("entries: %s", got)
	}
	if g["client_id"] != confID || g["granted_at"] == "" || g["last_used_at"] == "" {
		t.Fatalf("grant: want client %s, granted_at and last_used_at (the code was redeemed), got %v", confID, g)
	}
	if m := g["entries"].([]any)[2].(map[string]any); m["meaning"] == "" || m["revocable"] != true {
		t.Fatalf("the email entry: %v", m)
	}
	if m := g["entries"].([]any)[0].(map[string]any); m["revocable"] != false {
		t.Fatalf("openid is revocable alone: %v", m)
	}
	id := g["id"].(string)

	// The page shows the same, with the catalog's meanings.
	p := b.get(e.u.Issuer + "/oauth/connected")
	if p.status != http.StatusOK || !strings.Contains(p.body, `data-grant="`+id+`"`) || !strings.Contains(p.body, "Revoke everything of this grant") {
		t.Fatalf("page: %d %s", p.status, p.body)
	}
	for _, want := range []string{g["entries"].([]any)[2].(map[string]any)["meaning"].(string), "last used"} {
		if !strings.Contains(p.body, template(want)) {
			t.Errorf("the page does not show %q", want)
		}
	}

	// Revoke the scope email with the page's form.
	p = b.post(e.u.Issuer+"/oauth/connected", url.Values{"csrf": {csrf}, "grant_id": {id}, "entry": {"scope email"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, template("The entry was revoked")) {
		t.Fatalf("revoking email: %d %s", p.status, p.body)
	}
	if st, gr := e.grant(at, confID, e.confSecret); st != http.StatusOK || jsonOf(t, gr["scopes"]) != `["openid","profile"]` {
		t.Fatalf("grant endpoint after revoking email: %d %v", st, gr)
	}
	// The signing provider reads the signing-key detail until it is revoked.
	signingKey := func() (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, e.u.SigningBaseURL+"/signing-key", nil)
		req.Header.Set("Authorization", "Bearer "+at)
		st, m, _ := e.do(req)
		return st, m
	}
	if st, m := signingKey(); st != http.StatusOK {
		t.Fatalf("signing provider before: %d %v", st, m)
	}
	st, m := c.api(http.MethodPost, "/revoke", map[string]string{"grant_id": id, "entry": "detail 1"}, csrf, nil)
	if st != http.StatusOK || jsonOf(t, m["revoked"]) != `["detail 1"]` || m["whole_grant"] != false {
		t.Fatalf("revoking the signing-key detail: %d %v", st, m)
	}
	if st, m := signingKey(); st != http.StatusForbidden || m["error"] != "insufficient_authorization" {
		t.Fatalf("signing provider after the revocation: %d %v, want 403 insufficient_authorization", st, m)
	}
	st, in := e.introspect(at, confID, e.confSecret)
	if st != http.StatusOK || in["active"] != true || in["scope"] != "openid profile" || detailTypes(t, in["authorization_details"]) != "bank_account documents" {
		t.Fatalf("introspection after both revocations: %d %v", st, in)
	}
	if _, clients = c.list(); entries(onlyGrant(t, clients)) != "scope openid,scope profile,detail 0,detail 1" {
		t.Fatalf("entries after both revocations: %s", entries(onlyGrant(t, clients)))
	}

	// The remembered consent lost exactly the revoked entries: the same
	// request shows the consent page again; the rest alone is answered at once.
	_, ch := pkce(t)
	if p := b.get(e.u.Authorization + "?" + perEntryRequest(e, ch).Encode()); p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/consent") {
		t.Fatalf("the same request after revoking: want the consent page, got %d %s", p.status, p.url)
	}
	q := perEntryRequest(e, ch)
	q.Set("scope", "openid profile")
	q["resource"] = []string{e.u.BaseURL, e.u.InvoicingBaseURL}
	q.Set("authorization_details", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["`+anaAccount1+`"]},`+
		`{"type":"`+strings.TrimSuffix(e.u.InvoicingBaseURL, "/api")+`/authorization-details/documents","actions":["read"],"locations":["`+e.u.InvoicingBaseURL+`"]}]`)
	if p := b.get(e.u.Authorization + "?" + q.Encode()); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), confRedir) {
		t.Fatalf("what is still consented to: want the code at once, got %d %s %s", p.status, p.url, p.header.Get("Location"))
	}

	// Revoke the whole grant (the page's form without an entry).
	_, clients = c.list()
	p = b.post(e.u.Issuer+"/oauth/connected", url.Values{"csrf": {csrf}, "grant_id": {id}})
	if p.status != http.StatusOK || !strings.Contains(p.body, template("The grant was revoked")) {
		t.Fatalf("revoking the grant: %d %s", p.status, p.body)
	}
	if st, gr := e.grant(at, confID, e.confSecret); st != http.StatusUnauthorized || gr["code"] != "revoked_token" {
		t.Fatalf("grant endpoint after revoking the grant: %d %v", st, gr)
	}
	if st, in := e.introspect(at, confID, e.confSecret); st != http.StatusOK || in["active"] != false {
		t.Fatalf("introspection after revoking the grant: %d %v", st, in)
	}
	if st, m := signingKey(); st != http.StatusUnauthorized || m["error"] != "invalid_token" {
		t.Fatalf("signing provider after revoking the grant: %d %v", st, m)
	}
	// The other grant (the remembered sign-in just above) is still listed.
	_, after := c.list()
	for _, cl := range after {
		for _, gg := range cl.(map[string]any)["grants"].([]any) {
			if gg.(map[string]any)["id"] == id {
				t.Fatalf("the revoked grant is still listed: %v", after)
			}
		}
	}
	if len(clients) != 1 || len(clients[0].(map[string]any)["grants"].([]any)) != 2 {
		t.Fatalf("before revoking the grant: want the first grant and the remembered sign-in's, got %v", clients)
	}

	// The remembered consent keeps what the remembered sign-in's grant,
	// still active, holds: its request is answered at once again.
	if p := b.get(e.u.Authorization + "?" + q.Encode()); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), confRedir) {
		t.Fatalf("what another active grant holds, after revoking the first grant: want the code at once, got %d %s %s", p.status, p.url, p.header.Get("Location"))
	}
	// Once no grant of the client holds it, it is forgotten: the same
	// request asks again.
	_, clients = c.list()
	for _, gg := range clients[0].(map[string]any)["grants"].([]any) {
		gid := gg.(map[string]any)["id"].(string)
		if st, m := c.api(http.MethodPost, "/revoke", map[string]string{"grant_id": gid}, csrf, nil); st != http.StatusOK || m["whole_grant"] != true {
			t.Fatalf("revoking grant %s: %d %v", gid, st, m)
		}
	}
	if p := b.get(e.u.Authorization + "?" + q.Encode()); p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/consent") {
		t.Fatalf("after revoking every grant of the client: want the consent page, got %d %s", p.status, p.url)
	}
}

// template is s as html/template writes it in text.
func template(s string) string {
	r := strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;")
	return r.Replace(s)
}

// TestConnectedMiniappsRefusals: a post without the session's CSRF token,
// one from another origin, one not signed in and one naming another
// subject's grant are refused and change nothing.
func TestConnectedMiniappsRefusals(t *testing.T) {
	e := start(t)
	b, at := grantedAll(t, e)
	ana := connected{browser: b, e: e}
	csrf, clients := ana.list()
	id := onlyGrant(t, clients)["id"].(string)
	revoke := map[string]string{"grant_id": id, "entry": "scope email"}

	if p := b.post(e.u.Issuer+"/oauth/connected", url.Values{"csrf": {"forged"}, "grant_id": {id}, "entry": {"scope email"}}); p.status != http.StatusForbidden {
		t.Errorf("form with a forged CSRF token: %d, want 403", p.status)
	}
	if st, m := ana.api(http.MethodPost, "/revoke", revoke, "", nil); st != http.StatusForbidden || m["error"] != "invalid_csrf_token" {
		t.Errorf("JSON without X-CSRF-Token: %d %v", st, m)
	}
	fromElsewhere := func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }
	if st, m := ana.api(http.MethodPost, "/revoke", revoke, csrf, fromElsewhere); st != http.StatusForbidden || m["error"] != "cross_origin" {
		t.Errorf("JSON from another origin: %d %v", st, m)
	}
	req, _ := http.NewRequest(http.MethodPost, e.u.Issuer+"/oauth/connected", strings.NewReader(url.Values{"csrf": {csrf}, "grant_id": {id}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := b.hc.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("form from another origin: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	crossSite := func(r *http.Request) { r.Header.Set("Origin", "null"); r.Header.Set("Sec-Fetch-Site", "cross-site") }
	if st, m := ana.api(http.MethodPost, "/revoke", revoke, csrf, crossSite); st != http.StatusForbidden || m["error"] != "cross_origin" {
		t.Errorf("JSON from another site with Origin null: %d %v", st, m)
	}

	anon := connected{browser: newBrowser(t, e.u.Issuer), e: e}
	anonCSRF, none := anon.list()
	if st, m := anon.api(http.MethodPost, "/revoke", revoke, anonCSRF, nil); st != http.StatusUnauthorized || m["error"] != "not_signed_in" || len(none) != 0 {
		t.Errorf("not signed in: %d %v (listed %v)", st, m, none)
	}

	ben := signInConnected(t, e, "sub_benjamin")
	benCSRF, benClients := ben.list()
	if len(benClients) != 0 {
		t.Errorf("Benjamín lists Ana's grants: %v", benClients)
	}
	if st, m := ben.api(http.MethodPost, "/revoke", revoke, benCSRF, nil); st != http.StatusNotFound || m["error"] != "unknown_grant" {
		t.Errorf("another subject's grant: %d %v", st, m)
	}
	if st, m := ben.api(http.MethodPost, "/revoke", map[string]string{"grant_id": id}, benCSRF, nil); st != http.StatusNotFound || m["error"] != "unknown_grant" {
		t.Errorf("another subject's whole grant: %d %v", st, m)
	}
	if st, m := ana.api(http.MethodPost, "/revoke", map[string]string{"grant_id": id, "entry": "scope openid"}, csrf, nil); st != http.StatusBadRequest || m["error"] != "fixed_entry" {
		t.Errorf("openid alone: %d %v", st, m)
	}
	if st, m := ana.api(http.MethodPost, "/revoke", map[string]string{"grant_id": id, "entry": "scope phone"}, csrf, nil); st != http.StatusNotFound || m["error"] != "unknown_entry" {
		t.Errorf("an entry the grant does not hold: %d %v", st, m)
	}

	if st, gr := e.grant(at, confID, e.confSecret); st != http.StatusOK || jsonOf(t, gr["scopes"]) != `["openid","profile","email"]` {
		t.Fatalf("after the refused requests the grant changed: %d %v", st, gr)
	}
}

// TestConnectedRevocationReachesOtherInstance: two instances on one
// PostgreSQL database. The grant of a token read through the second (and
// so in its cache) loses the scope profile through the first instance's
// Connected Miniapps API; the second answers the grant without it as soon
// as the first's notification arrives; then the whole grant is revoked
// through the first, and the second refuses the token. The last use
// recorded by the second shows in the first's list once the second
// flushed it (its list, which flushes).
func TestConnectedRevocationReachesOtherInstance(t *testing.T) {
	db := storetest.Postgres(t)
	shared := sharedConfig(db, "http://service.example.test")
	a := startWith(t, db, &clock{t: time.Now()}, shared.apply)
	b := startWith(t, db, &clock{t: time.Now()}, shared.apply)
	at := func(e *env, u string) string {
		p, _ := url.Parse(u)
		p.Scheme, p.Host = "http", e.srv.ListenAddrs().Service
		return p.String()
	}
	for _, e := range []*env{a, b} {
		e.u.Native, e.u.Token, e.u.Grant = at(e, e.u.Native), at(e, e.u.Token), at(e, e.u.Grant)
	}
	a.confSecret = b.confSecret

	v, c := pkce(t)
	q := a.nativeCode(a.confAuthParams(c), subAna, map[string]string{"action": "approve"})
	st, tok := a.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {confRedir},
		"code_verifier": {v}}, confID, a.confSecret)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, tok)
	}
	access := tok["access_token"].(string)
	for range 2 { // the second answer comes from b's cache
		if st, g := b.grant(access, confID, b.confSecret); st != http.StatusOK || jsonOf(t, g["scopes"]) != `["openid","profile","offline_access"]` {
			t.Fatalf("the other instance, before: %d %v", st, g)
		}
	}

	// Ana, on a's Connected Miniapps API (a's own listener, as a proxy reaches it).
	ana := connected{browser: newBrowser(t, a.u.Issuer), e: a}
	ana.e = &env{t: t, u: a.u}
	ana.e.u.Issuer = at(a, a.u.Issuer)
	csrf, _ := ana.list()
	st, m := ana.api(http.MethodPost, "/login", map[string]string{"subject": subAna}, csrf, nil)
	if st != http.StatusOK {
		t.Fatalf("sign-in: %d %v", st, m)
	}
	csrf, clients := ana.list()
	id := onlyGrant(t, clients)["id"].(string)
	if st, m := ana.api(http.MethodPost, "/revoke", map[string]string{"grant_id": id, "entry": "scope profile"}, csrf, nil); st != http.StatusOK {
		t.Fatalf("revoking profile through a: %d %v", st, m)
	}
	waitGrant := func(what string, done func(int, map[string]any) bool) {
		t.Helper()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); <-tick.C {
			if done(b.grant(access, confID, b.confSecret)) {
				return
			}
		}
		t.Fatalf("the other instance never saw %s", what)
	}
	waitGrant("the narrowed grant", func(st int, g map[string]any) bool {
		return st == http.StatusOK && jsonOf(t, g["scopes"]) == `["openid","offline_access"]`
	})

	// b's lookups are recorded by b: its own list flushes them.
	bAPI := connected{browser: newBrowser(t, b.u.Issuer), e: &env{t: t, u: b.u}}
	bAPI.e.u.Issuer = at(b, b.u.Issuer)
	bcsrf, _ := bAPI.list()
	if st, m := bAPI.api(http.MethodPost, "/login", map[string]string{"subject": subAna}, bcsrf, nil); st != http.StatusOK {
		t.Fatalf("sign-in at b: %d %v", st, m)
	}
	if _, cl := bAPI.list(); onlyGrant(t, cl)["last_used_at"] == "" {
		t.Fatalf("no last use after b's lookups: %v", cl)
	}

	if st, m := ana.api(http.MethodPost, "/revoke", map[string]string{"grant_id": id}, csrf, nil); st != http.StatusOK || m["whole_grant"] != true {
		t.Fatalf("revoking the grant through a: %d %v", st, m)
	}
	waitGrant("the revoked grant", func(st int, g map[string]any) bool {
		return st == http.StatusUnauthorized && g["code"] == "revoked_token"
	})
}

// TestConcurrentRevocationsAskAgain: Ana signs in to one client twice
// (two grants, the second from the remembered consent) and revokes both
// grants at once. Each revocation either goes through or, when the other
// grant it would keep entries for was revoked meanwhile, is refused with
// 409 grants_changed and goes through when sent again. Either way no
// entry stays remembered for the client: the same request asks again.
func TestConcurrentRevocationsAskAgain(t *testing.T) {
	e := start(t)
	b, _ := grantedAll(t, e)
	c := connected{browser: b, e: e}
	_, ch := pkce(t)
	if p := b.get(e.u.Authorization + "?" + perEntryRequest(e, ch).Encode()); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), confRedir) {
		t.Fatalf("the second sign-in: want the code at once from the remembered consent, got %d %s", p.status, p.url)
	}
	csrf, clients := c.list()
	if len(clients) != 1 || len(clients[0].(map[string]any)["grants"].([]any)) != 2 {
		t.Fatalf("want one client with two grants, got %v", clients)
	}
	var ids []string
	for _, g := range clients[0].(map[string]any)["grants"].([]any) {
		ids = append(ids, g.(map[string]any)["id"].(string))
	}
	revoke := func(id string) (int, string, error) {
		body, _ := json.Marshal(map[string]string{"grant_id": id})
		req, _ := http.NewRequest(http.MethodPost, e.u.Issuer+"/oauth/connected/api/revoke", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-CSRF-Token", csrf)
		req.Header.Set("Origin", e.u.Issuer)
		resp, err := b.hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var m map[string]any
		raw, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(raw, &m)
		code, _ := m["error"].(string)
		return resp.StatusCode, code, nil
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]string, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			<-start
			st, code, err := revoke(id)
			if st == http.StatusConflict && code == "grants_changed" {
				st, code, err = revoke(id)
			}
			if err != nil || st != http.StatusOK {
				errs[i] = fmt.Sprintf("revoking %s: %d %s %v", id, st, code, err)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, msg := range errs {
		if msg != "" {
			t.Error(msg)
		}
	}
	if _, clients := c.list(); len(clients) != 0 {
		t.Fatalf("after revoking both: %v", clients)
	}
	if p := b.get(e.u.Authorization + "?" + perEntryRequest(e, ch).Encode()); p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/consent") {
		t.Fatalf("after revoking every grant of the client at once: want the consent page, got %d %s → %s %s", p.status, p.url, p.header.Get("Location"), p.body)
	}
}

// TestConnectedNoticeIsFixed: the page's status notice after a revocation
// is one of its own texts, chosen by done; a link with a done of the
// attacker's words (a phishing line in the server's own page) shows no
// notice at all.
func TestConnectedNoticeIsFixed(t *testing.T) {
	e := start(t)
	c := signInConnected(t, e, subAna)
	const bait = "Your account is locked: call +1 555 0100 to unlock it"
	for _, done := range []string{bait, "revoked everything; now sign in at https://evil.example", "ENTRY", "entry "} {
		p := c.get(e.u.Issuer + "/oauth/connected?done=" + url.QueryEscape(done))
		if p.status != http.StatusOK || strings.Contains(p.body, "555 0100") || strings.Contains(p.body, "evil.example") || strings.Contains(p.body, `class="notice"`) {
			t.Fatalf("done=%q: want the page without a notice, got %d %s", done, p.status, p.body)
		}
	}
	for done, want := range map[string]string{"entry": "The entry was revoked", "grant": "The grant was revoked"} {
		if p := c.get(e.u.Issuer + "/oauth/connected?done=" + done); p.status != http.StatusOK || !strings.Contains(p.body, `class="notice" role="status">`+template(want)) {
			t.Fatalf("done=%s: want the notice %q, got %d %s", done, want, p.status, p.body)
		}
	}
}
