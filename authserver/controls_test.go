package authserver_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Seeded accounts beyond those of helpers_test.go.
const (
	benjaminAccount = "5d4c3b2a-1908-4e7f-8d6c-5b4a39281706"
	pacificoAccount = "d15ea5e0-7777-4a1a-b2b2-333344445555" // of org_pacifico, the operator of prj_demo
)

// TestResourceControls: the resource's controls that can be checked before
// approval (docs/service.md §1, §2.3, §2.4) are checks of the consent model, and an
// approval of a model with a failed check is refused with its code.
func TestResourceControls(t *testing.T) {
	e := start(t)
	base := e.u.BaseURL
	chargeWith := func(beneficiary string) string {
		return `[{"type":"` + base + `/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["` + base + `"],` +
			`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"},"beneficiaries":["` + beneficiary + `"]}]`
	}
	for _, tc := range []struct {
		name, subject, org, details string
		check, outcome, code        string
	}{
		{"identifiers of the subject", subAna, "", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["` + anaAccount1 + `"]}]`,
			"account_ownership", "pass", ""},
		{"identifiers of someone else", subAna, "", `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["` + benjaminAccount + `"]}]`,
			"account_ownership", "fail", "account_not_owned"},
		{"beneficiary of the project's operator", subAna, orgAndes, chargeWith(pacificoAccount), "beneficiaries", "pass", ""},
		{"beneficiary of another Company", subAna, orgAndes, chargeWith(andesAcct), "beneficiaries", "fail", "beneficiary_not_allowed"},
		{"org_id of a Company the subject may not act for", subCarla, orgAndes, chargeWith(pacificoAccount), "company_access", "fail", "company_access_denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := pkce(t)
			q := e.authParams(c)
			q.Set("authorization_details", tc.details)
			if tc.org != "" {
				q.Set("org_id", tc.org)
			}
			st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + q.Encode(), "subject": tc.subject})
			if st != http.StatusCreated {
				t.Fatalf("submit: %d %v", st, m)
			}
			var got map[string]any
			for _, c := range m["consent"].(map[string]any)["checks"].([]any) {
				if c := c.(map[string]any); c["name"] == tc.check {
					got = c
				}
			}
			if got["outcome"] != tc.outcome || (tc.code != "" && got["code"] != tc.code) {
				t.Fatalf("check %s: want %s %s, got %v", tc.check, tc.outcome, tc.code, m["consent"])
			}
			if tc.code == "" {
				return
			}
			if st, m := e.decide(m["request_id"].(string), map[string]string{"action": "approve"}); st != http.StatusForbidden || m["error"] != tc.code {
				t.Fatalf("approve: want 403 %s, got %d %v", tc.code, st, m)
			}
		})
	}
}

// TestChargeLimits: transaction limits are enforced when a charge is made
// (docs/service.md §2.4), at POST {base_url}/automatic-charges.
func TestChargeLimits(t *testing.T) {
	e := start(t)
	base := e.u.BaseURL
	v, c := pkce(t)
	q := e.authParams(c)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", `[{"type":"`+base+`/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["`+base+`"],`+
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"}}]`)
	rq := e.nativeCode(q, subAna, map[string]string{"action": "approve", "account_id": andesAcct})
	st, m := e.exchange(rq.Get("code"), v)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, m)
	}
	tok := m["access_token"].(string)
	// A token without an automatic-charge detail.
	v2, c2 := pkce(t)
	plain := e.publicTokens(e.authParams(c2), v2)["access_token"].(string)

	for _, tc := range []struct {
		name, token, body string
		status            int
		code              string
	}{
		{"within the limits", tok, `{"amount":"1000","currency":"CLP"}`, http.StatusCreated, ""},
		{"at the maximum", tok, `{"amount":"50000","currency":"CLP"}`, http.StatusCreated, ""},
		{"below the minimum", tok, `{"amount":"999","currency":"CLP"}`, http.StatusForbidden, "amount_outside_limits"},
		{"above the maximum", tok, `{"amount":"50001","currency":"CLP"}`, http.StatusForbidden, "amount_outside_limits"},
		{"not an amount", tok, `{"amount":"0100","currency":"CLP"}`, http.StatusBadRequest, "invalid_charge"},
		{"another currency", tok, `{"amount":"1000","currency":"USD"}`, http.StatusBadRequest, "invalid_charge"},
		{"no charge detail", plain, `{"amount":"1000","currency":"CLP"}`, http.StatusForbidden, "insufficient_authorization"},
		{"no token", "", `{"amount":"1000","currency":"CLP"}`, http.StatusUnauthorized, "missing_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, base+"/automatic-charges", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			st, m, _ := e.do(req)
			if st != tc.status || (tc.code != "" && m["code"] != tc.code) {
				t.Fatalf("want %d %s, got %d %v", tc.status, tc.code, st, m)
			}
			if tc.code == "" && m["source"] != andesAcct {
				t.Fatalf("charge: %v", m)
			}
			if tc.code == "amount_outside_limits" && !strings.Contains(m["message"].(string), "1000 to 50000") {
				t.Fatalf("the error does not name the limits: %v", m)
			}
		})
	}
}

// TestBrowserRemembersConsent: in a browser, a request with nothing new
// goes straight back to the client; prompt=consent shows the page again.
func TestBrowserRemembersConsent(t *testing.T) {
	e := start(t)
	b := newBrowser(t, e.u.Issuer)
	_, c := pkce(t)
	q := e.authParams(c)
	if rq := b.browserCode(e.u.Authorization+"?"+q.Encode(), subAna, map[string]string{"action": "approve"}); rq.Get("code") == "" {
		t.Fatalf("first consent: %v", rq)
	}
	p := b.get(e.u.Authorization + "?" + q.Encode())
	if loc := p.header.Get("Location"); !strings.HasPrefix(loc, publicRedir+"?code=") {
		t.Fatalf("remembered consent: want a redirect with a code, got %d %s %s", p.status, p.url, loc)
	}
	q.Set("prompt", "consent")
	if p := b.get(e.u.Authorization + "?" + q.Encode()); p.status != http.StatusOK || !strings.Contains(p.url.Path, "/oauth/consent") {
		t.Fatalf("prompt=consent: want the consent page, got %d %s", p.status, p.url)
	}
}

// TestPromptNone: prompt=none (OpenID Connect Core §3.1.2.1) never shows a
// page. A signed-in subject who consented before gets the code at once;
// something new is consent_required; nobody signed in is login_required;
// every error carries state and iss. The native API refuses it unless the
// consent is remembered.
func TestPromptNone(t *testing.T) {
	e := start(t)
	b := newBrowser(t, e.u.Issuer)
	_, c := pkce(t)
	q := e.authParams(c)
	silent := func(b *browser, q url.Values) url.Values {
		t.Helper()
		q = cloneValues(q)
		q.Set("prompt", "none")
		p := b.get(e.u.Authorization + "?" + q.Encode())
		loc, err := url.Parse(p.header.Get("Location"))
		if err != nil || !strings.HasPrefix(loc.String(), publicRedir+"?") {
			t.Fatalf("prompt=none: want a redirect to the client, got %d %s %q", p.status, p.url, p.header.Get("Location"))
		}
		if loc.Query().Get("state") != q.Get("state") || loc.Query().Get("iss") != e.u.Issuer {
			t.Errorf("prompt=none answer %s lacks state or iss", loc)
		}
		return loc.Query()
	}
	if r := silent(b, q); r.Get("error") != "login_required" {
		t.Fatalf("nobody signed in: %v, want login_required", r)
	}
	if rq := b.browserCode(e.u.Authorization+"?"+q.Encode(), subAna, map[string]string{"action": "approve"}); rq.Get("code") == "" {
		t.Fatalf("first consent: %v", rq)
	}
	if r := silent(b, q); r.Get("code") == "" {
		t.Fatalf("remembered consent: %v, want a code without any page", r)
	}
	more := cloneValues(q)
	more.Set("scope", q.Get("scope")+" email")
	if r := silent(b, more); r.Get("error") != "consent_required" {
		t.Fatalf("a new scope: %v, want consent_required", r)
	}

	nq := cloneValues(more)
	nq.Set("prompt", "none")
	st, m := e.native(map[string]any{"authorization_url": e.u.Authorization + "?" + nq.Encode(), "subject": subCarla})
	if st != http.StatusBadRequest || m["error"] != "consent_required" || !strings.Contains(fmt.Sprint(m["redirect_url"]), "error=consent_required") {
		t.Fatalf("native prompt=none without consent: %d %v", st, m)
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
