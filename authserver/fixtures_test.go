package authserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// Fixture ids of these tests (docs/dashboard.md, "Fixtures").
const (
	fxGrantActive  = "0193a7c0-0000-7000-8000-0000000000a1"
	fxGrantRevoked = "0193a7c0-0000-7000-8000-0000000000a2"
	fxGrantCarla   = "0193a7c0-0000-7000-8000-0000000000a3"
	fxDanaAccount  = "3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a61"
)

// fixtureOf is a fixture file: Ana and Carla (seeded) each remember a
// consent of the test's public client for authParams' scopes; Ana holds an
// active and a revoked grant of the confidential client, Carla one active.
func fixtureOf() string {
	return `{"version": 1,
	"consents": [
		{"subject": "` + subAna + `", "client_id": "` + publicID + `", "scope": ["openid", "profile", "offline_access"]},
		{"subject": "` + subCarla + `", "client_id": "` + publicID + `", "scope": ["openid", "profile", "offline_access"]}
	],
	"grants": [
		{"id": "` + fxGrantActive + `", "subject": "` + subAna + `", "client_id": "` + confID + `", "scope": ["openid", "profile"],
		 "authorization_details": [{"type": "bank_account", "actions": ["read"], "subject": {"type": "profile"}, "identifiers": ["` + anaAccount1 + `"]}]},
		{"id": "` + fxGrantRevoked + `", "subject": "` + subAna + `", "client_id": "` + confID + `", "scope": ["openid", "email"], "revoked": true},
		{"id": "` + fxGrantCarla + `", "subject": "` + subCarla + `", "client_id": "` + confID + `", "scope": ["openid"]}
	]}`
}

// applyFixture posts a fixture file to the dashboard as the operator.
func (e *env) applyFixture(body string) (int, map[string]any) {
	e.t.Helper()
	return e.dashRaw("POST", "/api/dev/fixtures", body)
}

func (e *env) dashRaw(method, path, body string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.u.Dashboard+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.srv.OperatorKey())
	st, m, _ := e.do(req)
	return st, m
}

// mustApply applies a fixture file and returns the answer's access token
// of each grant, by grant id.
func (e *env) mustApply(body string) map[string]string {
	e.t.Helper()
	st, m := e.applyFixture(body)
	if st != http.StatusOK {
		e.t.Fatalf("apply: want 200, got %d %v", st, m)
	}
	toks := map[string]string{}
	grants, _ := m["grants"].(map[string]any)
	list, _ := grants["tokens"].([]any)
	for _, x := range list {
		t := x.(map[string]any)
		toks[t["grant_id"].(string)] = t["access_token"].(string)
	}
	return toks
}

// remembered submits authParams for subject to the native-consent API and
// reports whether the consent model is remembered (no consent screen).
func (e *env) remembered(subject string) bool {
	e.t.Helper()
	_, c := pkce(e.t)
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + e.authParams(c).Encode(), "subject": subject})
	if st != http.StatusCreated {
		e.t.Fatalf("native submit for %s: %d %v", subject, st, m)
	}
	model, _ := m["consent"].(map[string]any)
	return model["remembered"] == true
}

// consentsOf lists a subject's remembered consents through the host's API.
func (e *env) consentsOf(subject string) string {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.u.Issuer+"/native/consents?subject="+url.QueryEscape(subject), nil)
	asHost(req)
	st, m, _ := e.do(req)
	if st != http.StatusOK {
		e.t.Fatalf("consents of %s: %d %v", subject, st, m)
	}
	return jsonOf(e.t, m["consents"])
}

// TestFixtureApply: after a fixture, an authorization for a remembered
// consent needs no consent screen (the native API answers it remembered),
// one the consent does not cover still does; the grant endpoint shows the
// fixture's active grant with its scopes and details, and its revoked
// grant as revoked; applying the same file again changes nothing.
func TestFixtureApply(t *testing.T) {
	e := start(t)
	if e.remembered(subAna) {
		t.Fatal("before the fixture, Ana has a remembered consent")
	}
	toks := e.mustApply(fixtureOf())
	if !e.remembered(subAna) || !e.remembered(subCarla) {
		t.Fatal("after the fixture, the native API asks Ana or Carla for a consent the fixture remembers")
	}
	// A scope beyond the consent is asked.
	_, c := pkce(t)
	q := e.authParams(c)
	q.Set("scope", "openid profile email offline_access")
	if st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": subAna}); st != http.StatusCreated ||
		m["consent"].(map[string]any)["remembered"] == true {
		t.Fatalf("a scope the fixture does not remember: want the consent screen, got %d %v", st, m)
	}
	st, m := e.grant(toks[fxGrantActive], confID, e.confSecret)
	if st != http.StatusOK || jsonOf(t, m["scopes"]) != `["openid","profile"]` || m["subject"] != subAna ||
		!strings.Contains(jsonOf(t, m["authorizationDetails"]), anaAccount1) {
		t.Fatalf("grant endpoint, active fixture grant: got %d %v", st, m)
	}
	if st, m := e.grant(toks[fxGrantRevoked], confID, e.confSecret); st != http.StatusUnauthorized || m["code"] != "revoked_token" {
		t.Fatalf("grant endpoint, revoked fixture grant: want 401 revoked_token, got %d %v", st, m)
	}

	before := e.consentsOf(subAna) + e.consentsOf(subCarla)
	toks2 := e.mustApply(fixtureOf())
	if after := e.consentsOf(subAna) + e.consentsOf(subCarla); after != before {
		t.Fatalf("applying the same file twice changed the consents:\nbefore %s\nafter  %s", before, after)
	}
	for id, tok := range toks {
		st1, m1 := e.grant(tok, confID, e.confSecret)
		st2, m2 := e.grant(toks2[id], confID, e.confSecret)
		if st1 != st2 || jsonOf(t, m1) != jsonOf(t, m2) {
			t.Fatalf("grant %s after the second apply: the first apply's token answers %d %v, the second's %d %v", id, st1, m1, st2, m2)
		}
	}
}

// TestFixtureExample: the example files (examples/fixtures/qa.json and
// the one shown in docs/dashboard.md) apply to a seeded server, and the
// test identity's remembered consent answers an authorization of the
// seed's public Miniapp without a consent screen.
func TestFixtureExample(t *testing.T) {
	e := start(t)
	doc, err := os.ReadFile("../docs/dashboard.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### Fixtures")
	_, block, _ := strings.Cut(section, "```json\n")
	block, _, _ = strings.Cut(block, "```")
	if st, m := e.applyFixture(block); st != http.StatusOK {
		t.Fatalf("apply the example of docs/dashboard.md: %d %v", st, m)
	}
	raw, err := os.ReadFile("../examples/fixtures/qa.json")
	if err != nil {
		t.Fatal(err)
	}
	st, m := e.applyFixture(string(raw))
	if st != http.StatusOK {
		t.Fatalf("apply the example: %d %v", st, m)
	}
	if got := jsonOf(t, m["subjects"]); got != `{"count":2,"ids":["sub_qa_dana","sub_qa_eli"]}` {
		t.Fatalf("summary of subjects: %s", got)
	}
	_, c := pkce(t)
	q := url.Values{"client_id": {"demo-public"}, "redirect_uri": {"http://127.0.0.1:8701/callback"}, "response_type": {"code"},
		"scope": {"openid profile"}, "resource": {e.u.BaseURL}, "code_challenge": {c}, "code_challenge_method": {"S256"},
		"authorization_details": {`[{"type":"bank_account","subject":{"type":"profile"},"actions":["read"],"selection":{"max":1}}]`}}
	st, m = e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": "sub_qa_dana"})
	model, _ := m["consent"].(map[string]any)
	if st != http.StatusCreated || model["remembered"] != true || model["remembered_account"] != fxDanaAccount {
		t.Fatalf("the example's remembered consent: want remembered with account %s, got %d %v", fxDanaAccount, st, m)
	}
}

// TestFixtureReset: reset forgets every decision of one subject (its
// remembered consents come back as consent screens, its active grants are
// revoked) and nothing of another subject; a reset by client forgets that
// client's; a second reset finds nothing.
func TestFixtureReset(t *testing.T) {
	e := start(t)
	toks := e.mustApply(fixtureOf())
	m := e.mustDash(http.StatusOK, "POST", "/api/dev/fixtures/reset", e.srv.OperatorKey(), map[string]any{"subject": subAna})
	if m["consents_forgotten"] != 1.0 || m["grants_revoked"] != 1.0 || jsonOf(t, m["grant_ids"]) != `["`+fxGrantActive+`"]` {
		t.Fatalf("reset of Ana: want 1 consent and grant %s, got %v", fxGrantActive, m)
	}
	if e.remembered(subAna) {
		t.Fatal("after the reset of Ana, her consent is still remembered: no consent screen")
	}
	if !e.remembered(subCarla) {
		t.Fatal("the reset of Ana forgot Carla's consent")
	}
	if st, m := e.grant(toks[fxGrantActive], confID, e.confSecret); st != http.StatusUnauthorized || m["code"] != "revoked_token" {
		t.Fatalf("Ana's grant after the reset: want revoked_token, got %d %v", st, m)
	}
	if st, m := e.grant(toks[fxGrantCarla], confID, e.confSecret); st != http.StatusOK {
		t.Fatalf("Carla's grant after the reset of Ana: want it active, got %d %v", st, m)
	}
	m = e.mustDash(http.StatusOK, "POST", "/api/dev/fixtures/reset", e.srv.OperatorKey(), map[string]any{"client_id": publicID})
	if m["consents_forgotten"] != 1.0 || m["grants_revoked"] != 0.0 || jsonOf(t, m["consents"]) != `["`+subCarla+` `+publicID+`"]` {
		t.Fatalf("reset of the public client: want Carla's consent only, got %v", m)
	}
	if e.remembered(subCarla) {
		t.Fatal("after the reset of the public client, Carla's consent is still remembered")
	}
	m = e.mustDash(http.StatusOK, "POST", "/api/dev/fixtures/reset", e.srv.OperatorKey(), map[string]any{"subject": subAna, "client_id": publicID})
	if m["consents_forgotten"] != 0.0 || m["grants_revoked"] != 0.0 {
		t.Fatalf("a second reset: want zeros, got %v", m)
	}
	// The suite's second run applies the fixture again: remembered again,
	// and the grant the reset revoked is active again with a new token,
	// while the token issued before the reset stays dead.
	toks2 := e.mustApply(fixtureOf())
	if !e.remembered(subAna) {
		t.Fatal("the fixture applied after a reset does not remember Ana's consent")
	}
	if st, m := e.grant(toks2[fxGrantActive], confID, e.confSecret); st != http.StatusOK || m["subject"] != subAna {
		t.Fatalf("Ana's grant applied again after the reset: want it active, got %d %v", st, m)
	}
	if st, m := e.grant(toks[fxGrantActive], confID, e.confSecret); st != http.StatusUnauthorized || m["code"] != "invalid_token" {
		t.Fatalf("the token of Ana's grant from before the reset: want it unknown (invalid_token), got %d %v", st, m)
	}
}

// TestFixtureBadInput: each refused file or reset names the JSON pointer,
// the rule and the fix, answers 400, and changes nothing already stored,
// even when the file's first records were valid.
func TestFixtureBadInput(t *testing.T) {
	e := start(t)
	toks := e.mustApply(fixtureOf())
	// A valid head, so that a half-applied file would show: a new subject,
	// and a change of Ana's consent.
	head := `{"version": 1, "subjects": [{"id": "sub_qa_new", "profile": {"name": "New"}}],
		"consents": [{"subject": "` + subAna + `", "client_id": "` + publicID + `", "scope": ["openid"]}, `
	grantHead := `{"version": 1, "grants": [{"id": "` + fxGrantActive + `", "subject": "` + subAna + `", "client_id": "` + confID + `", "scope": ["openid", "email"]}, `
	for _, x := range []struct {
		name, body, code, field, want string
	}{
		{"unknown field", `{"version": 1, "subjects": [{"id": "sub_qa_x", "profile": {"name": "X"}, "colour": "red"}]}`,
			"invalid_body", "/subjects/0/colour", `unknown field "colour"`},
		{"unknown nested field", head + `{"subject": "` + subAna + `", "client_id": "` + publicID + `", "scope": ["openid"], "remember": true}]}`,
			"invalid_body", "/consents/1/remember", "unknown field"},
		{"wrong type", grantHead + `{"id": "` + fxGrantCarla + `", "subject": "` + subCarla + `", "client_id": "` + confID + `", "scope": ["openid"], "revoked": "yes"}]}`,
			"invalid_body", "/grants/1/revoked", "true or false"},
		{"wrong type of a list", `{"version": 1, "consents": {"subject": "` + subAna + `"}}`, "invalid_body", "/consents", "must be an array"},
		{"no version", `{"subjects": []}`, "missing_field", "/version", `"version": 1`},
		{"not JSON", `{"version": 1,`, "invalid_body", "", "not one JSON document"},
		{"member twice", `{"version": 1, "version": 1}`, "invalid_body", "/version", "twice"},
		{"bad subject id", `{"version": 1, "subjects": [{"id": "ana", "profile": {"name": "A"}}]}`, "invalid_field", "/subjects/0/id", "sub_ and 1 to 60"},
		{"unknown subject", head + `{"subject": "sub_nobody", "client_id": "` + publicID + `", "scope": ["openid"]}]}`,
			"unknown_reference", "/consents/1/subject", "add it under /subjects"},
		{"unknown client", head + `{"subject": "` + subAna + `", "client_id": "no-such-client", "scope": ["openid"]}]}`,
			"unknown_reference", "/consents/1/client_id", "not registered"},
		{"unknown company", head + `{"subject": "` + subAna + `", "client_id": "` + confID + `", "scope": ["openid"], "org_id": "org_nowhere"}]}`,
			"unknown_reference", "/consents/1/org_id", "add it under /companies"},
		{"not a member", head + `{"subject": "` + subCarla + `", "client_id": "` + confID + `", "scope": ["openid"], "org_id": "` + orgAndes + `"}]}`,
			"invalid_field", "/consents/1/org_id", "may not act for company"},
		{"unknown membership company", `{"version": 1, "subjects": [{"id": "sub_qa_x", "profile": {"name": "X"}, "companies": [{"id": "org_nowhere", "role": "admin"}]}]}`,
			"unknown_reference", "/subjects/0/companies/0/id", "add it under /companies"},
		{"account of another subject", head + `{"subject": "` + subCarla + `", "client_id": "` + confID + `", "scope": ["openid"], "account_id": "` + anaAccount1 + `"}]}`,
			"invalid_field", "/consents/1/account_id", "no account of subject sub_carla"},
		{"identifier of another subject", grantHead + `{"id": "` + fxGrantCarla + `", "subject": "` + subCarla + `", "client_id": "` + confID + `",
			"authorization_details": [{"type": "bank_account", "actions": ["read"], "subject": {"type": "profile"}, "identifiers": ["` + anaAccount1 + `"]}]}]}`,
			"invalid_field", "/grants/1/authorization_details/0/identifiers/0", "no account of subject sub_carla"},
		{"account stored as another's", `{"version": 1, "subjects": [{"id": "sub_qa_new", "profile": {"name": "New"},
			"accounts": [{"id": "` + anaAccount1 + `", "name": "Mine", "number": "1", "currency": "CLP"}]}]}`,
			"invalid_field", "/subjects/0/accounts/0/id", "never changes owner"},
		{"unknown scope", head + `{"subject": "` + subAna + `", "client_id": "` + confID + `", "scope": ["openid", "telepathy"]}]}`,
			"invalid_field", "/consents/1/scope/1", "not in the catalog"},
		{"unknown type", head + `{"subject": "` + subAna + `", "client_id": "` + confID + `", "authorization_details": [{"type": "crystal_ball"}]}]}`,
			"invalid_field", "/consents/1/authorization_details/0/type", "not in the catalog"},
		{"entry against its schema", head + `{"subject": "` + subAna + `", "client_id": "` + confID + `",
			"authorization_details": [{"type": "bank_account", "actions": ["fly"], "subject": {"type": "profile"}, "selection": {"max": 1}}], "account_id": "` + anaAccount1 + `"}]}`,
			"invalid_field", "/consents/1/authorization_details/0/actions/0", `"fly" is not allowed`},
		{"selection without account", head + `{"subject": "` + subAna + `", "client_id": "` + confID + `",
			"authorization_details": [{"type": "bank_account", "actions": ["read"], "subject": {"type": "profile"}, "selection": {"max": 1}}]}]}`,
			"missing_field", "/consents/1/account_id", "add account_id"},
		{"grant of another subject", grantHead + `{"id": "` + fxGrantCarla + `", "subject": "` + subAna + `", "client_id": "` + confID + `", "scope": ["openid"]}]}`,
			"invalid_field", "/grants/1/id", "another id"},
		{"id twice", `{"version": 1, "grants": [{"id": "` + fxGrantCarla + `", "subject": "` + subCarla + `", "client_id": "` + confID + `", "scope": ["openid"]},
			{"id": "` + fxGrantCarla + `", "subject": "` + subCarla + `", "client_id": "` + confID + `", "scope": ["openid"]}]}`,
			"invalid_field", "/grants/1/id", "named twice"},
	} {
		before := e.fixtureState(toks)
		st, m := e.applyFixture(x.body)
		msg, _ := m["message"].(string)
		field, _ := m["field"].(string)
		if st != http.StatusBadRequest || m["code"] != x.code || field != x.field || !strings.Contains(msg, x.want) {
			t.Errorf("%s: want 400 %s at %q saying %q, got %d %v", x.name, x.code, x.field, x.want, st, m)
		}
		if after := e.fixtureState(toks); after != before {
			t.Errorf("%s: the refused file changed what was stored:\nbefore %s\nafter  %s", x.name, before, after)
		}
	}
	for _, x := range []struct {
		body        any
		code, field string
	}{
		{map[string]any{}, "missing_field", "/subject"},
		{map[string]any{"subject": "sub_nobody"}, "unknown_reference", "/subject"},
		{map[string]any{"client_id": "no-such-client"}, "unknown_reference", "/client_id"},
		{map[string]any{"subject": subAna, "everything": true}, "invalid_body", "/everything"},
	} {
		before := e.fixtureState(toks)
		if st, m := e.dash("POST", "/api/dev/fixtures/reset", e.srv.OperatorKey(), x.body); st != http.StatusBadRequest || m["code"] != x.code || m["field"] != x.field {
			t.Errorf("reset %v: want 400 %s at %q, got %d %v", x.body, x.code, x.field, st, m)
		}
		if after := e.fixtureState(toks); after != before {
			t.Errorf("reset %v: the refused reset changed what was stored", x.body)
		}
	}
}

// fixtureState is what a refused fixture must leave as it was: the
// remembered consents, the grants behind the fixture's tokens, and
// whether the new subject of the refused files exists.
func (e *env) fixtureState(toks map[string]string) string {
	e.t.Helper()
	var b bytes.Buffer
	b.WriteString(e.consentsOf(subAna) + e.consentsOf(subCarla))
	for _, id := range []string{fxGrantActive, fxGrantRevoked, fxGrantCarla} {
		st, m := e.grant(toks[id], confID, e.confSecret)
		json.NewEncoder(&b).Encode([]any{id, st, m})
	}
	_, c := pkce(e.t)
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + e.authParams(c).Encode(), "subject": "sub_qa_new"})
	json.NewEncoder(&b).Encode([]any{"sub_qa_new", st, m["error"]})
	return b.String()
}
