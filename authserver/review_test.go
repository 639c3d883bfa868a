package authserver_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestOperatorActionsNeedOperatorCredential: no review route opens without
// the operator credential; a project's own key is refused (no self-service
// approval, docs/service.md §5.8), and nothing is decided by the refused calls.
func TestOperatorActionsNeedOperatorCredential(t *testing.T) {
	e := start(t)
	prj, key := e.project("Self approver")
	sub := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/policy", key, map[string]any{"scopes": []string{"openid"}})
	sid := sub["id"].(string)
	for _, route := range []struct{ method, path string }{
		{"GET", "/api/review"},
		{"POST", "/api/review/" + sid + "/approve"},
		{"POST", "/api/review/" + sid + "/reject"},
	} {
		for _, tc := range []struct {
			name, key string
			status    int
			code      string
		}{
			{"no credential", "", http.StatusUnauthorized, "missing_key"},
			{"the project's own key", key, http.StatusForbidden, "operator_only"},
			{"a wrong key", "not-the-operator", http.StatusForbidden, "operator_only"},
		} {
			t.Run(route.method+" "+route.path+"/"+tc.name, func(t *testing.T) {
				st, m := e.dash(route.method, route.path, tc.key, map[string]any{"reason": "mine"})
				if st != tc.status || m["code"] != tc.code || m["message"] == "" {
					t.Fatalf("want %d %s with a message, got %d %v", tc.status, tc.code, st, m)
				}
			})
		}
	}
	p := e.mustDash(http.StatusOK, "GET", "/api/projects/"+prj, key, nil)
	if subs := p["submissions"].([]any); subs[0].(map[string]any)["status"] != "pending" {
		t.Fatalf("a refused call decided the submission: %v", subs)
	}
	// The operator decides once; a rejection needs a reason.
	op := e.srv.OperatorKey()
	if st, m := e.dash("POST", "/api/review/"+sid+"/reject", op, nil); st != http.StatusBadRequest || m["field"] != "/reason" {
		t.Fatalf("reject without reason: %d %v", st, m)
	}
	e.mustDash(http.StatusOK, "POST", "/api/review/"+sid+"/reject", op, map[string]any{"reason": "openid alone is not a use case"})
	if st, m := e.dash("POST", "/api/review/"+sid+"/approve", op, nil); st != http.StatusConflict || m["code"] != "already_decided" {
		t.Fatalf("second decision: %d %v", st, m)
	}
}

// TestUnapprovedTypeNeitherAdvertisedNorAccepted: a declared Resource
// Server's type is refused at /authorize and missing from discovery while
// pending and after a rejection; once approved it is both, also after a
// restart, because the catalog is rebuilt from the database.
func TestUnapprovedTypeNeitherAdvertisedNorAccepted(t *testing.T) {
	e := start(t)
	rs := newPayslips(t)
	prj, key := e.project("Payslips Inc.")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	authorizeError := func(e *env) string {
		t.Helper()
		_, c := pkce(t)
		q := e.authParams(c)
		q.Del("scope")
		q.Del("resource") // the detail's locations name it
		q.Set("org_id", orgAndes)
		q.Set("authorization_details", rs.detail())
		resp, err := noRedirect.Get(e.u.Authorization + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		return loc.Query().Get("error")
	}
	advertised := func(e *env) bool {
		_, types := e.discovery()
		return slices.Contains(types, rs.typ)
	}
	rejected := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/resource-servers", key, rs.declaration())
	pending := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/resource-servers", key, rs.declaration())
	if a, err := advertised(e), authorizeError(e); a || err != "invalid_authorization_details" {
		t.Fatalf("a pending type: advertised %v, authorize error %q; want invalid_authorization_details", a, err)
	}
	e.mustDash(http.StatusOK, "POST", "/api/review/"+rejected["id"].(string)+"/reject", e.srv.OperatorKey(), map[string]any{"reason": "schema too loose"})
	if advertised(e) || authorizeError(e) != "invalid_authorization_details" {
		t.Fatal("a rejected type is advertised or accepted")
	}
	e.mustDash(http.StatusOK, "POST", "/api/review/"+pending["id"].(string)+"/approve", e.srv.OperatorKey(), nil)
	// Accepted by the catalog now; prj_demo's test client has no approval
	// for it, which the consent model reports (the project check).
	if !advertised(e) || authorizeError(e) != "" {
		t.Fatal("an approved type is not advertised or not accepted")
	}
	u := e.u
	e.srv.Close()
	e2 := startAt(t, e.db, e.clock, u)
	if !advertised(e2) || authorizeError(e2) != "" {
		t.Fatal("after a restart the approved type is gone")
	}
}

// TestDeclarationCheckedBeforeReview: a declaration the catalog refuses
// never reaches the operator, and the error names the field.
func TestDeclarationCheckedBeforeReview(t *testing.T) {
	e := start(t)
	rs := newPayslips(t)
	prj, key := e.project("Payslips Inc.")
	first := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/resource-servers", key, rs.declaration())
	e.mustDash(http.StatusOK, "POST", "/api/review/"+first["id"].(string)+"/approve", e.srv.OperatorKey(), nil)
	for _, tc := range []struct {
		name  string
		edit  func(d map[string]any)
		code  string
		field string
	}{
		{"the resource of an approved Resource Server", func(d map[string]any) {
			d["scopes"], d["types"] = []any{map[string]any{"name": "payslips:write", "meaning": "x"}}, []any{}
		}, "invalid_declaration", "/resource"},
		{"a name an approved Resource Server took", func(d map[string]any) { d["resource"] = "https://elsewhere.example/api" }, "invalid_declaration", "/scopes/0/name"},
		{"id chosen by the project", func(d map[string]any) { d["id"] = "rs_mine" }, "invalid_field", "/id"},
		{"a catalog provider's resource", func(d map[string]any) { d["resource"] = e.u.BaseURL }, "invalid_declaration", "/resource"},
		{"a catalog scope", func(d map[string]any) {
			d["scopes"] = []any{map[string]any{"name": "openid", "meaning": "x"}}
		}, "invalid_declaration", "/scopes/0/name"},
		{"unknown member", func(d map[string]any) { d["website"] = "x" }, "invalid_body", "/website"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := rs.declaration()
			tc.edit(d)
			st, m := e.dash("POST", "/api/projects/"+prj+"/resource-servers", key, d)
			if st != http.StatusBadRequest || m["code"] != tc.code || m["field"] != tc.field {
				t.Fatalf("want 400 %s at %s, got %d %v", tc.code, tc.field, st, m)
			}
		})
	}
	if m := e.mustDash(http.StatusOK, "GET", "/api/review?status=pending&kind=resource_server", e.srv.OperatorKey(), nil); len(m["submissions"].([]any)) != 0 {
		t.Fatalf("refused declarations reached review: %v", m)
	}
}

// TestProjectCredentials: credentials are added to a project created with
// a name only, listed without secrets, rotated and removed (docs/service.md §2.7), and
// the hosts' client configuration API follows each change.
func TestProjectCredentials(t *testing.T) {
	e := start(t)
	prj, key := e.project("Shop")
	other, otherKey := e.project("Other")
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no type", map[string]any{"redirect_uris": []string{"https://shop.example/cb"}}, "/type"},
		{"unknown type", map[string]any{"type": "native"}, "/type"},
		{"http redirect off loopback", map[string]any{"type": "public", "redirect_uris": []string{"http://shop.example/cb"}}, "/redirect_uris/0"},
		{"redirect with fragment", map[string]any{"type": "public", "redirect_uris": []string{"https://shop.example/cb#x"}}, "/redirect_uris/0"},
		{"relative redirect", map[string]any{"type": "public", "redirect_uris": []string{"/cb"}}, "/redirect_uris/0"},
		{"origin with path", map[string]any{"type": "public", "allowed_origins": []string{"https://shop.example/app"}}, "/allowed_origins/0"},
		{"origin wildcard", map[string]any{"type": "public", "allowed_origins": []string{"https://*.shop.example"}}, "/allowed_origins/0"},
		{"symmetric ID token algorithm", map[string]any{"type": "public", "id_token_signed_response_alg": "HS256"}, "/id_token_signed_response_alg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, m := e.dash("POST", "/api/projects/"+prj+"/credentials", key, tc.body)
			if st != http.StatusBadRequest || m["field"] != tc.field || m["message"] == "" {
				t.Fatalf("want 400 at %s, got %d %v", tc.field, st, m)
			}
		})
	}
	pub := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key,
		map[string]any{"type": "public", "redirect_uris": []string{"http://127.0.0.1:9/cb"}, "allowed_origins": []string{"http://127.0.0.1:9"},
			"id_token_signed_response_alg": "ES256"})
	if _, has := pub["client_secret"]; has {
		t.Fatalf("a public credential got a secret: %v", pub)
	}
	if pub["id_token_signed_response_alg"] != "ES256" {
		t.Fatalf("the credential's ID token algorithm: %v, want ES256 as registered", pub["id_token_signed_response_alg"])
	}
	conf := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key,
		map[string]any{"type": "confidential", "redirect_uris": []string{"https://shop.example/cb"}, "allowed_origins": []string{"https://shop.example"}})
	cid, secret := conf["client_id"].(string), conf["client_secret"].(string)
	if cfg := get(t, e.u.Dashboard+"/api/oauth/clients/"+cid); !strings.Contains(cfg, `"client_type":"confidential"`) {
		t.Fatalf("client configuration: %s", cfg)
	}
	list := e.mustDash(http.StatusOK, "GET", "/api/projects/"+prj+"/credentials", key, nil)
	if js := jsonOf(t, list); strings.Contains(js, secret) || strings.Count(js, `"client_id"`) != 2 {
		t.Fatalf("list: %s", js)
	}
	// The secret authenticates at the token endpoint until rotated.
	introspect := func(secret string) int {
		st, _ := e.introspect("x", cid, secret)
		return st
	}
	if st := introspect(secret); st != http.StatusOK {
		t.Fatalf("introspect with the new secret: %d", st)
	}
	rot := e.mustDash(http.StatusOK, "POST", "/api/projects/"+prj+"/credentials/"+cid+"/rotate", key, nil)
	if st := introspect(secret); st != http.StatusUnauthorized {
		t.Fatalf("the old secret still works: %d", st)
	}
	if st := introspect(rot["client_secret"].(string)); st != http.StatusOK {
		t.Fatalf("the rotated secret does not work: %d", st)
	}
	if st, m := e.dash("POST", "/api/projects/"+prj+"/credentials/"+pub["client_id"].(string)+"/rotate", key, nil); st != http.StatusBadRequest || m["code"] != "not_confidential" {
		t.Fatalf("rotate a public client: %d %v", st, m)
	}
	// Another project's key reaches neither the project nor its credentials.
	if st, m := e.dash("DELETE", "/api/projects/"+other+"/credentials/"+cid, otherKey, nil); st != http.StatusNotFound || m["code"] != "credential_not_found" {
		t.Fatalf("remove another project's credential: %d %v", st, m)
	}
	if st, m := e.dash("GET", "/api/projects/"+prj, otherKey, nil); st != http.StatusUnauthorized || m["code"] != "invalid_key" {
		t.Fatalf("another project's key: %d %v", st, m)
	}
	e.mustDash(http.StatusNoContent, "DELETE", "/api/projects/"+prj+"/credentials/"+cid, key, nil)
	if st := introspect(rot["client_secret"].(string)); st != http.StatusUnauthorized {
		t.Fatalf("a removed credential still authenticates: %d", st)
	}
	resp, err := http.Get(e.u.Dashboard + "/api/oauth/clients/" + cid)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a removed credential's configuration: %d", resp.StatusCode)
	}
}

// TestMiniappReview: a manifest is checked as a host resolves it before
// review, and only approved Miniapps are listed for launchers.
func TestMiniappReview(t *testing.T) {
	e := start(t)
	prj, key := e.project("Todo")
	c := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/credentials", key,
		map[string]any{"type": "public", "redirect_uris": []string{"https://todo.example/cb"}, "allowed_origins": []string{"https://todo.example"}})
	manifest := func(start string) json.RawMessage {
		return json.RawMessage(`{"id":"com.example.todo","name":"Todo","start_url":"` + start + `","oauth":{"client_id":"` + c["client_id"].(string) + `"}}`)
	}
	if st, m := e.dash("POST", "/api/projects/"+prj+"/miniapps", key, map[string]any{"origin": "https://todo.example", "manifest": manifest("https://evil.example/")}); st != http.StatusBadRequest || m["code"] != "manifest_rejected" {
		t.Fatalf("a manifest a host would reject: %d %v", st, m)
	}
	if st, m := e.dash("POST", "/api/projects/"+prj+"/miniapps", key, map[string]any{"origin": "https://todo.example",
		"manifest": json.RawMessage(`{"id":"x","name":"X","start_url":"./","oauth":{"client_id":"demo-public"}}`)}); st != http.StatusNotFound || m["field"] != "/manifest/oauth/client_id" {
		t.Fatalf("another project's client: %d %v", st, m)
	}
	sub := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+prj+"/miniapps", key, map[string]any{"origin": "https://todo.example", "manifest": manifest("./")})
	listed := func() string { return jsonOf(t, e.mustDash(http.StatusOK, "GET", "/api/miniapps", "", nil)) }
	if strings.Contains(listed(), "com.example.todo") {
		t.Fatal("a pending Miniapp is listed")
	}
	e.mustDash(http.StatusOK, "POST", "/api/review/"+sub["id"].(string)+"/approve", e.srv.OperatorKey(), nil)
	if l := listed(); !strings.Contains(l, `"id":"com.example.todo"`) || !strings.Contains(l, `"origin":"https://todo.example"`) {
		t.Fatalf("the approved Miniapp is not listed: %s", l)
	}
}
