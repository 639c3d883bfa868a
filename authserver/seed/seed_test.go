package seed

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
)

// uuidRE is docs/service.md §2.2 rule 4: the catalog accepts only such identifiers, so
// a seeded account that did not match could never be named in a request.
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`)

func TestWorldIsConsistent(t *testing.T) {
	w, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	projects, subjects, companies := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range w.Projects {
		projects[p.ID] = true
	}
	for _, s := range w.Subjects {
		subjects[s.ID] = true
	}
	for _, c := range w.Companies {
		companies[c.ID] = true
		if c.LegalID == "" || c.Country == "" || len(c.Addresses) == 0 {
			t.Errorf("company %s lacks legal id, country or addresses", c.ID)
		}
	}
	hosts := 0
	for _, c := range w.Clients {
		if !projects[c.ProjectID] {
			t.Errorf("client %s: unknown project %s", c.ID, c.ProjectID)
		}
		for _, r := range c.Roles {
			if r == "host" {
				hosts++
			}
		}
	}
	if hosts != 1 {
		t.Errorf("want exactly one host client, got %d", hosts)
	}
	for _, m := range w.Memberships {
		if !subjects[m.SubjectID] || !companies[m.CompanyID] {
			t.Errorf("membership %v names an unknown subject or company", m)
		}
	}
	for _, a := range w.Accounts {
		t.Run(a.ID, func(t *testing.T) {
			if !uuidRE.MatchString(a.ID) {
				t.Error("account id is not a UUID the catalog accepts")
			}
			if (a.SubjectID == "") == (a.CompanyID == "") || (a.SubjectID != "" && !subjects[a.SubjectID]) || (a.CompanyID != "" && !companies[a.CompanyID]) {
				t.Error("account must belong to exactly one known subject or company")
			}
		})
	}
}

// TestDemoPolicyCoversTheCatalog: the demo project's approved policy names
// every catalog permission, with the placeholders the server fills, so the
// demo Miniapps pass the project-approval check whatever they request; and
// its operator Company exists (the beneficiaries check).
func TestDemoPolicyCoversTheCatalog(t *testing.T) {
	w, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	ep := catalog.Endpoints{BaseURL: "http://127.0.0.1:8600/bank", SigningBaseURL: "http://127.0.0.1:8602/api", InvoicingBaseURL: "http://127.0.0.1:8603/api"}
	cat, err := catalog.New(ep)
	if err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("{base_url}", ep.BaseURL, "{signing_origin}", ep.SigningOrigin(), "{invoicing_origin}", ep.InvoicingOrigin())
	var demo *store.Policy
	for i, p := range w.Policies {
		if p.ProjectID == "prj_demo" {
			demo = &w.Policies[i].Policy
		}
	}
	if demo == nil {
		t.Fatal("prj_demo has no seeded policy")
	}
	for _, sc := range cat.Scopes() {
		if !slices.Contains(demo.Scopes, sc.Name) {
			t.Errorf("the demo policy lacks scope %s", sc.Name)
		}
	}
	var types []string
	for _, ty := range demo.Types {
		types = append(types, fill.Replace(ty))
	}
	for _, ty := range cat.Types() {
		if !slices.Contains(types, ty.Name) {
			t.Errorf("the demo policy lacks type %s", ty.Name)
		}
	}
	ok := false
	for _, p := range w.Projects {
		for _, c := range w.Companies {
			ok = ok || (p.ID == "prj_demo" && p.OperatorCompany == c.ID)
		}
	}
	if !ok {
		t.Error("prj_demo's operator Company is not a seeded Company")
	}
}
