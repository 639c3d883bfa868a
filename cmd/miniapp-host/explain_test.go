package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver"
	"github.com/miniapp-host/miniapp-host/authserver/dashboard"
)

const explainOpKey = "op-key-for-the-explain-tests"

// TestExplainCommand runs `miniapp-host explain` against an in-process
// development server: three refused requests name the check and the rule
// (the project's approval, the catalog's org_id rule, a resource control),
// one accepted request shows the consent screen and the claims; the text
// reports are golden, with the run's addresses and ids replaced by names.
func TestExplainCommand(t *testing.T) {
	ctx := context.Background()
	srv, err := authserver.Start(ctx, authserver.Config{DB: filepath.Join(t.TempDir(), "a.db"), OperatorKey: explainOpKey})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u := srv.URLs()
	d := u.Dashboard
	// A project approved for openid and profile only.
	var prj struct{ ID, Key string }
	do := func(key, method, path string, body any, into any) {
		t.Helper()
		out, err := (&dashboard.Client{BaseURL: d, Key: key}).Do(ctx, method, path, body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if into != nil {
			if err := json.Unmarshal(out, into); err != nil {
				t.Fatal(err)
			}
		}
	}
	do("", "POST", "/api/projects", map[string]any{"name": "Narrow"}, &prj)
	var sub struct{ ID string }
	do(prj.Key, "POST", "/api/projects/"+prj.ID+"/policy", map[string]any{"scopes": []string{"openid", "profile"}}, &sub)
	do(explainOpKey, "POST", "/api/review/"+sub.ID+"/approve", nil, nil)
	var cred struct {
		ClientID string `json:"client_id"`
	}
	do(prj.Key, "POST", "/api/projects/"+prj.ID+"/credentials", map[string]any{"type": "public", "redirect_uris": []string{"https://narrow.example/cb"}}, &cred)

	names := strings.NewReplacer(u.BaseURL, "{base_url}", u.SigningBaseURL, "{signing_base_url}", u.InvoicingBaseURL, "{invoicing_base_url}",
		u.Issuer, "{issuer}", originOf(u.SigningBaseURL), "{signing_origin}", originOf(u.InvoicingBaseURL), "{invoicing_origin}", prj.ID, "{project}", cred.ClientID, "{client}")
	file := func(name, text string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := u.BaseURL
	company := file("company.json", `[{"type":"`+base+`/authorization-details/company-identity","actions":["read"],"locations":["`+base+`"]},`+
		`{"type":"`+base+`/authorization-details/company-addresses","actions":["read"],"locations":["`+base+`"]}]`)
	charge := file("charge.json", `[{"type":"`+base+`/authorization-details/automatic-charge","actions":["create_automatic_charge"],"locations":["`+base+`"],`+
		`"transaction":{"currency":"CLP","minimum":"1000","maximum":"50000"},"beneficiaries":["a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"]}]`)
	bank := `[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"min":1,"max":1}}]`
	authURL := u.Authorization + "?" + url.Values{"client_id": {"demo-public"}, "redirect_uri": {"http://127.0.0.1:8701/callback"},
		"response_type": {"code"}, "scope": {"openid profile"}, "resource": {base}, "code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"},
		"code_challenge_method": {"S256"}}.Encode()
	for _, tc := range []struct {
		golden, stdin string
		args          []string
		code          int
		want          []string
	}{
		{"project-not-approved", "", []string{"--client", cred.ClientID, "--subject", "sub_ana", "--scope", "openid profile addresses:write"},
			exitRejected, []string{"REFUSED  project_approval (project approval) project_not_approved", `scope "addresses:write"`, "rule: every requested scope"}},
		{"company-without-org-id", "", []string{"--client", "demo-public", "--subject", "sub_ana", "--authorization-details", company},
			exitRejected, []string{"REFUSED  catalog (catalog) org_id_missing", "Company-scoped", "rule: every scope and authorization_details object"}},
		{"beneficiary-not-allowed", "", []string{"--client", "demo-public", "--subject", "sub_ana", "--authorization-details", charge, "--org-id", "org_andes"},
			exitRejected, []string{"REFUSED  beneficiaries (resource controls) beneficiary_not_allowed", "operator_company=org_pacifico", "DEFERRED transaction_limits"}},
		{"accepted", bank, []string{"--client", "demo-public", "--subject", "sub_ana", "--scope", "openid profile offline_access", "--authorization-details", "-"},
			exitOK, []string{"every check passes", "access_token: iss={issuer} sub=sub_ana aud={base_url} client_id=demo-public", "refresh_token: for 2592000s"}},
		{"authorize-url", "", []string{authURL, "--subject", "sub_carla"}, exitOK, []string{"every check passes", "id_token: iss={issuer} sub=sub_carla aud=demo-public"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errs := cli(t, tc.stdin, append([]string{"explain", "--dashboard", d, "--key", explainOpKey}, tc.args...)...)
			out = names.Replace(out)
			if code != tc.code || errs != "" {
				t.Fatalf("want exit %d, got %d: %s%s", tc.code, code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the report does not say %q:\n%s", w, out)
				}
			}
			golden(t, "explain/"+tc.golden+".txt", out)
		})
	}
	t.Run("json", func(t *testing.T) {
		code, out, errs := cli(t, "", "explain", "--dashboard", d, "--key", explainOpKey, "--client", "demo-public", "--subject", "sub_ana", "--scope", "openid", "--json")
		var rep map[string]any
		if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || rep["verdict"] != "approvable" {
			t.Fatalf("--json: %d %s %s", code, out, errs)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no subject", []string{"--client", "demo-public"}, exitUsage, "--subject is required"},
		{"no client", []string{"--subject", "sub_ana"}, exitUsage, "--client is required"},
		{"both forms", []string{authURL, "--client", "demo-public", "--subject", "sub_ana"}, exitUsage, "either an AUTHORIZE_URL"},
		{"details not JSON", []string{"--client", "demo-public", "--subject", "sub_ana", "--authorization-details", file("bad.json", "[{")}, exitUsage, "not a JSON document"},
		{"details an object", []string{"--client", "demo-public", "--subject", "sub_ana", "--authorization-details", file("obj.json", `{"type":"bank_account"}`)}, exitUsage, "at /authorization_details: authorization_details must be a JSON array"},
		{"unknown client", []string{"--client", "nobody", "--subject", "sub_ana"}, exitUsage, `at /client_id: no client "nobody"`},
		{"unknown subject", []string{"--client", "demo-public", "--subject", "sub_nobody"}, exitUsage, "at /subject: no subject"},
		{"a wrong key", []string{"--client", "demo-public", "--subject", "sub_ana", "--key", "wrong"}, exitUndecided, "operator key"},
		{"the dashboard is down", []string{"--client", "demo-public", "--subject", "sub_ana", "--dashboard", "http://127.0.0.1:1"}, exitUndecided, "is the server running?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"explain", "--dashboard", d, "--key", explainOpKey}, tc.args...)
			if code, out, errs := cli(t, "", args...); code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("want exit %d with %q, got %d: %s%s", tc.code, tc.want, code, out, errs)
			}
		})
	}
}

// TestExplainDeployed: a server whose issuer is not on loopback has no
// dry run, and the command says so.
func TestExplainDeployed(t *testing.T) {
	srv, err := authserver.Start(context.Background(), authserver.Config{DB: filepath.Join(t.TempDir(), "a.db"), OperatorKey: explainOpKey,
		Issuer: "https://id.example"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, _, errs := cli(t, "", "explain", "--dashboard", srv.URLs().Dashboard, "--key", explainOpKey, "--client", "demo-public", "--subject", "sub_ana")
	if code != exitUndecided || !strings.Contains(errs, "this server has no development controls: its issuer is not on loopback") {
		t.Fatalf("want exit 3 saying there are no development controls, got %d: %s", code, errs)
	}
}

// originOf is the origin of an absolute URL.
func originOf(raw string) string {
	p, _ := url.Parse(raw)
	return p.Scheme + "://" + p.Host
}
