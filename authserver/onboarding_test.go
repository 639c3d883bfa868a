package authserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/miniapp-host/miniapp-host/authserver/providers"
)

// dash calls the dashboard API with a Bearer key ("" for none).
func (e *env) dash(method, path, key string, body any) (int, map[string]any) {
	e.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, e.u.Dashboard+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	st, m, _ := e.do(req)
	return st, m
}

// mustDash is dash that fails the test unless the status is want.
func (e *env) mustDash(want int, method, path, key string, body any) map[string]any {
	e.t.Helper()
	st, m := e.dash(method, path, key, body)
	if st != want {
		e.t.Fatalf("%s %s: want %d, got %d %v", method, path, want, st, m)
	}
	return m
}

// project creates a project and returns its id and key.
func (e *env) project(name string) (id, key string) {
	e.t.Helper()
	m := e.mustDash(http.StatusCreated, "POST", "/api/projects", "", map[string]any{"name": name})
	return m["id"].(string), m["key"].(string)
}

// discoveryTypes returns the advertised scopes and authorization_details types.
func (e *env) discovery() (scopes, types []string) {
	e.t.Helper()
	var md struct {
		Scopes []string `json:"scopes_supported"`
		Types  []string `json:"authorization_details_types_supported"`
	}
	if err := json.Unmarshal([]byte(get(e.t, e.u.Discovery)), &md); err != nil {
		e.t.Fatal(err)
	}
	return md.Scopes, md.Types
}

// payslips is a Resource Server of the test: one endpoint that needs the
// payslips type, reading grants with the Resource Server's own credential
// exactly as a third party would (docs/service.md §5.6, §5.7).
type payslips struct {
	srv      *httptest.Server
	resource string // its resource address: srv.URL + "/api"
	typ      string // its authorization_details type
	grants   *providers.GrantClient
}

func newPayslips(t *testing.T) *payslips {
	t.Helper()
	p := &payslips{grants: &providers.GrantClient{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"missing_token"}`))
			return
		}
		g, err := p.grants.Grant(r.Context(), tok)
		var ge *providers.GrantError
		if errors.As(err, &ge) {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"` + ge.Code + `"}`))
			return
		} else if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		for _, raw := range g.AuthorizationDetails {
			var d struct{ Type string }
			if json.Unmarshal(raw, &d) == nil && d.Type == p.typ {
				json.NewEncoder(w).Encode(map[string]any{"payslips": []string{"2026-10"}, "org": g.OrgID})
				return
			}
		}
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":"insufficient_authorization"}`))
	}))
	t.Cleanup(p.srv.Close)
	p.resource = p.srv.URL + "/api"
	p.typ = p.srv.URL + "/authorization-details/payslips"
	return p
}

// declaration is the Resource Server's declaration, without id.
func (p *payslips) declaration() map[string]any {
	schema := `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,
		"required":["type","actions","locations"],
		"properties":{"type":{"const":"` + p.typ + `"},
		"actions":{"type":"array","minItems":1,"uniqueItems":true,"items":{"enum":["read"]}},
		"locations":{"type":"array","minItems":1,"maxItems":1,"items":{"const":"` + p.resource + `"}}}}`
	return map[string]any{
		"resource": p.resource,
		"scopes":   []any{map[string]any{"name": "payslips:read", "meaning": "Read the subject's payslips"}},
		"types": []any{map[string]any{"name": p.typ, "meaning": "Payslips of the Company", "company_scoped": true,
			"actions": []any{map[string]any{"name": "read", "meaning": "Read payslips"}}, "schema": json.RawMessage(schema)}},
	}
}

func (p *payslips) detail() string {
	return `[{"type":"` + p.typ + `","actions":["read"],"locations":["` + p.resource + `"]}]`
}

// TestOnboardingEndToEnd is the whole onboarding (docs/service.md §5) over real HTTP:
// a third party becomes a Resource Server under review, another project is
// approved for its type, a subject consents through the native API, and
// the token (obtained with golang.org/x/oauth2) works at the Resource
// Server; then the same flow refused at each of the three checks of docs/service.md §1.
func TestOnboardingEndToEnd(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	op := e.srv.OperatorKey()
	rs := newPayslips(t)

	// (a) The third party creates a project and a credential (docs/service.md §5.8 a).
	rsProject, rsKey := e.project("Payslips Inc.")
	cred := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+rsProject+"/credentials", rsKey,
		map[string]any{"type": "confidential", "name": "payslips API"})
	rs.grants.Endpoint, rs.grants.ClientID, rs.grants.ClientSecret = e.u.Grant, cred["client_id"].(string), cred["client_secret"].(string)

	// (b) It declares its Resource Server; nothing is advertised or
	// accepted before the operator approves.
	sub := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+rsProject+"/resource-servers", rsKey, rs.declaration())
	if sub["status"] != "pending" {
		t.Fatalf("declaration: %v", sub)
	}
	if _, types := e.discovery(); slices.Contains(types, rs.typ) {
		t.Fatal("an unapproved type is advertised")
	}
	// The project cannot approve its own declaration.
	if st, m := e.dash("POST", "/api/review/"+sub["id"].(string)+"/approve", rsKey, nil); st != http.StatusForbidden || m["code"] != "operator_only" {
		t.Fatalf("self-service approval: want 403 operator_only, got %d %v", st, m)
	}
	// (c) The operator approves and assigns an id.
	approved := e.mustDash(http.StatusOK, "POST", "/api/review/"+sub["id"].(string)+"/approve", op, map[string]any{"reason": "reviewed"})
	rsID, _ := approved["assigned_id"].(string)
	if !strings.HasPrefix(rsID, "rs_") || approved["status"] != "approved" {
		t.Fatalf("approval: %v", approved)
	}
	if scopes, types := e.discovery(); !slices.Contains(types, rs.typ) || !slices.Contains(scopes, "payslips:read") {
		t.Fatalf("approved type and scope not advertised: %v %v", scopes, types)
	}
	// The project's credentials, present and future, read grants for its resource.
	later := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+rsProject+"/credentials", rsKey, map[string]any{"type": "confidential"})
	if roles := jsonOf(t, later["roles"]); roles != `["resource_server"]` {
		t.Fatalf("a credential added after approval has roles %s", roles)
	}
	list := e.mustDash(http.StatusOK, "GET", "/api/resource-servers", "", nil)
	if !strings.Contains(jsonOf(t, list), `"id":"`+rsID+`"`) {
		t.Fatalf("resource server list lacks %s: %v", rsID, list)
	}

	// A second project asks to request the new type; the operator approves.
	appProject, appKey := e.project("Payslip viewer")
	app := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+appProject+"/credentials", appKey,
		map[string]any{"type": "public", "redirect_uris": []string{"https://viewer.example/cb"}, "allowed_origins": []string{"https://viewer.example"}})
	pol := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+appProject+"/policy", appKey, map[string]any{"types": []string{rs.typ}})
	e.mustDash(http.StatusOK, "POST", "/api/review/"+pol["id"].(string)+"/approve", op, nil)

	cfg := &oauth2.Config{ClientID: app["client_id"].(string), RedirectURL: "https://viewer.example/cb",
		Endpoint: oauth2.Endpoint{AuthURL: e.u.Authorization, TokenURL: e.u.Token, AuthStyle: oauth2.AuthStyleInParams}}
	authURL := func(verifier, subjectOrg string, extra ...oauth2.AuthCodeOption) string {
		opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier),
			oauth2.SetAuthURLParam("authorization_details", rs.detail()), oauth2.SetAuthURLParam("resource", rs.resource),
			oauth2.SetAuthURLParam("org_id", subjectOrg)}, extra...)
		return cfg.AuthCodeURL("st-e2e", opts...)
	}
	submit := func(u, subject string) (string, map[string]any) {
		t.Helper()
		st, m := e.native(map[string]any{"authorization_url": u, "subject": subject})
		if st != http.StatusCreated {
			t.Fatalf("native submit: %d %v", st, m)
		}
		return m["request_id"].(string), m["consent"].(map[string]any)
	}
	check := func(model map[string]any, name string) map[string]any {
		for _, c := range model["checks"].([]any) {
			if c := c.(map[string]any); c["name"] == name {
				return c
			}
		}
		t.Fatalf("no %s check in %v", name, model["checks"])
		return nil
	}

	// A subject consents through the native API.
	verifier := oauth2.GenerateVerifier()
	id, model := submit(authURL(verifier, orgAndes), subAna)
	for name, want := range map[string]string{"project_approval": "pass", "consent": "ask", "company_access": "pass"} {
		if got := check(model, name)["outcome"]; got != want {
			t.Errorf("check %s: %v, want %s", name, got, want)
		}
	}
	st, m := e.decide(id, map[string]string{"action": "approve"})
	if st != http.StatusOK {
		t.Fatalf("approve: %d %v", st, m)
	}
	code := redirectQuery(t, m["redirect_url"].(string)).Get("code")
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	// The token works at the Resource Server, which reads the grant with
	// the credential its project got before approval.
	callRS := func(hc *http.Client) (int, string) {
		t.Helper()
		resp, err := hc.Get(rs.resource + "/payslips")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if st, body := callRS(cfg.Client(ctx, tok)); st != http.StatusOK || !strings.Contains(body, "2026-10") {
		t.Fatalf("Resource Server with the token: %d %s", st, body)
	}
	if st, body := callRS(http.DefaultClient); st != http.StatusUnauthorized || !strings.Contains(body, "missing_token") {
		t.Fatalf("Resource Server without a token: %d %s", st, body)
	}

	// The subject's consent is remembered: nothing new, not asked again;
	// prompt=consent asks again.
	_, model = submit(authURL(oauth2.GenerateVerifier(), orgAndes), subAna)
	if model["remembered"] != true || check(model, "consent")["outcome"] != "pass" {
		t.Fatalf("remembered consent: %v", model)
	}
	_, model = submit(authURL(oauth2.GenerateVerifier(), orgAndes, oauth2.SetAuthURLParam("prompt", "consent")), subAna)
	if model["remembered"] == true || check(model, "consent")["outcome"] != "ask" {
		t.Fatalf("prompt=consent: %v", model)
	}

	t.Run("refused by the project's approval", func(t *testing.T) {
		other, otherKey := e.project("Unapproved viewer")
		oc := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+other+"/credentials", otherKey,
			map[string]any{"type": "public", "redirect_uris": []string{"https://other.example/cb"}})
		ocfg := *cfg
		ocfg.ClientID, ocfg.RedirectURL = oc["client_id"].(string), "https://other.example/cb"
		u := ocfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
			oauth2.SetAuthURLParam("authorization_details", rs.detail()), oauth2.SetAuthURLParam("resource", rs.resource),
			oauth2.SetAuthURLParam("org_id", orgAndes))
		// No policy asked for: the refusal says how to ask.
		_, model := submit(u, subAna)
		if c := check(model, "project_approval"); c["outcome"] != "fail" || !strings.Contains(c["message"].(string), "miniapp-host policy request") ||
			strings.Contains(c["message"].(string), "pending") {
			t.Fatalf("project_approval without a policy: %v", c)
		}
		// A policy that is pending is no approval; the refusal names the
		// review and how the operator approves it.
		sub := e.mustDash(http.StatusCreated, "POST", "/api/projects/"+other+"/policy", otherKey, map[string]any{"types": []string{rs.typ}})
		subID := sub["id"].(string)
		pending := "policy review " + subID + " asks for it and is pending"
		approveWith := "miniapp-host review approve " + subID
		id, model := submit(u, subAna)
		c := check(model, "project_approval")
		if c["outcome"] != "fail" || c["code"] != "project_not_approved" || !strings.Contains(c["message"].(string), pending) ||
			!strings.Contains(c["message"].(string), approveWith) || !strings.Contains(c["message"].(string), "Pending reviews") {
			t.Fatalf("project_approval: %v", c)
		}
		st, m := e.decide(id, map[string]string{"action": "approve"})
		if desc, _ := m["error_description"].(string); st != http.StatusForbidden || m["error"] != "project_not_approved" ||
			!strings.Contains(desc, pending) || !strings.Contains(desc, approveWith) {
			t.Fatalf("approve: want 403 project_not_approved naming the pending review, got %d %v", st, m)
		}
		// The browser's consent page says the same.
		b := newBrowser(t, e.u.Issuer)
		p := b.get(u)
		f := parseForm(t, p)
		f.values.Set("subject", subAna)
		if p = b.post(f.action, f.values); !strings.Contains(p.body, pending) || !strings.Contains(p.body, approveWith) {
			t.Fatalf("consent page: %d %s", p.status, p.body)
		}
		// A pending review that does not ask for it is named as such.
		e.mustDash(http.StatusOK, "POST", "/api/review/"+subID+"/reject", e.srv.OperatorKey(), map[string]string{"reason": "not yet"})
		sub = e.mustDash(http.StatusCreated, "POST", "/api/projects/"+other+"/policy", otherKey, map[string]any{"scopes": []string{"profile"}})
		_, model = submit(u, subAna)
		if c := check(model, "project_approval"); !strings.Contains(c["message"].(string), "nor in its pending policy review "+sub["id"].(string)) {
			t.Fatalf("project_approval with a pending review that does not ask for it: %v", c)
		}
	})

	t.Run("refused by the subject's consent", func(t *testing.T) {
		id, _ := submit(authURL(oauth2.GenerateVerifier(), orgAndes, oauth2.SetAuthURLParam("prompt", "consent")), subAna)
		st, m := e.decide(id, map[string]string{"action": "deny"})
		if rq := redirectQuery(t, m["redirect_url"].(string)); st != http.StatusOK || rq.Get("error") != "access_denied" {
			t.Fatalf("deny: %d %v", st, m)
		}
		// Revoking the consent revokes the grant: the token stops working
		// at the Resource Server, and the next request asks again.
		req, _ := http.NewRequest(http.MethodDelete, e.u.Issuer+"/native/consents/"+url.PathEscape(cfg.ClientID)+"?subject="+subAna, nil)
		req.SetBasicAuth(hostID, hostSecret)
		if st, m, _ := e.do(req); st != http.StatusNoContent {
			t.Fatalf("revoke consent: %d %v", st, m)
		}
		if st, body := callRS(cfg.Client(ctx, tok)); st != http.StatusUnauthorized || !strings.Contains(body, "revoked_token") {
			t.Fatalf("Resource Server after revocation: %d %s", st, body)
		}
		if _, model := submit(authURL(oauth2.GenerateVerifier(), orgAndes), subAna); model["remembered"] == true {
			t.Fatal("consent still remembered after revocation")
		}
	})

	t.Run("refused by the resource's controls", func(t *testing.T) {
		id, model := submit(authURL(oauth2.GenerateVerifier(), orgAndes), subCarla)
		if c := check(model, "company_access"); c["outcome"] != "fail" || c["code"] != "company_access_denied" {
			t.Fatalf("company_access: %v", c)
		}
		if st, m := e.decide(id, map[string]string{"action": "approve"}); st != http.StatusForbidden || m["error"] != "company_access_denied" {
			t.Fatalf("approve: want 403 company_access_denied, got %d %v", st, m)
		}
	})
}
