package contribution

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// The merged request of two contributions passes the catalog: the
// convention produces what the service accepts.
func TestMergePassesTheCatalog(t *testing.T) {
	ep := catalog.Endpoints{BaseURL: "https://bank.example", SigningBaseURL: "https://sign.example/api", InvoicingBaseURL: "https://inv.example/api"}
	cat, err := catalog.New(ep)
	if err != nil {
		t.Fatal(err)
	}
	bank := ResourceServer{ID: "bank", Resource: ep.BaseURL}
	signing := ResourceServer{ID: "rs-signing", Resource: ep.SigningBaseURL}
	req, err := Merge("org-1",
		bank.Contribute([]string{"openid", "profile"}),
		signing.Contribute(nil, Detail{Type: "https://sign.example/authorization-details/signatures", Actions: []string{"create"}}),
		bank.Contribute([]string{"profile", "email"}, Detail{Type: "https://bank.example/authorization-details/company-identity", Actions: []string{"read"}},
			Detail{Type: "https://bank.example/authorization-details/company-addresses", Actions: []string{"read"}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	if req.Scope != "openid profile email" {
		t.Errorf("Scope = %q, want each scope once in order", req.Scope)
	}
	if strings.Join(req.Resources, " ") != "https://bank.example https://sign.example/api" {
		t.Errorf("Resources = %v", req.Resources)
	}
	r := cat.Check(catalog.Request{Scope: req.Scope, Resource: req.Resources, AuthorizationDetails: req.AuthorizationDetails, OrgID: req.OrgID})
	if !r.Valid() {
		t.Fatalf("merged request refused by the catalog: %v", r.Violations)
	}
	if len(r.Details) != 3 || r.Details[0].Type.Resource != ep.SigningBaseURL {
		t.Errorf("details = %+v", r.Details)
	}
	v := req.Values()
	if v.Get("org_id") != "org-1" || len(v["resource"]) != 2 || !json.Valid([]byte(v.Get("authorization_details"))) {
		t.Errorf("Values = %v", v)
	}
	if _, err := req.AuthCodeOptions(); err == nil {
		t.Error("AuthCodeOptions accepted two resources it cannot express")
	}
}

func TestContributionJSONShape(t *testing.T) {
	c := ResourceServer{ID: "rs-1", Resource: "https://rs.example"}.Contribute([]string{"x:read"},
		Detail{Type: "https://rs.example/authorization-details/x", Actions: []string{"read"}, Extra: map[string]any{"limit": 5}})
	js, _ := json.Marshal(c)
	want := `{"resourceServerId":"rs-1","resource":"https://rs.example","scopes":["x:read"],"authorizationDetails":[{"actions":["read"],"limit":5,"type":"https://rs.example/authorization-details/x"}]}`
	if string(js) != want {
		t.Errorf("JSON:\n got %s\nwant %s", js, want)
	}
}

func TestMergeRefuses(t *testing.T) {
	rs := ResourceServer{ID: "rs", Resource: "https://rs.example"}
	for _, tc := range []struct {
		name string
		cs   []Contribution
		want string
	}{
		{"nothing", nil, "nothing to request"},
		{"no resource", []Contribution{ResourceServer{ID: "x"}.Contribute([]string{"a"})}, "has no resource"},
		{"scope with space", []Contribution{rs.Contribute([]string{"a b"})}, "not a scope token"},
		{"detail without actions", []Contribution{rs.Contribute(nil, Detail{Type: "t"})}, "at least one action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Merge("", tc.cs...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Merge = %v, want %q", err, tc.want)
			}
		})
	}
}
