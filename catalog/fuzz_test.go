package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// FuzzCheck feeds arbitrary request documents to CheckDocument:
// neither may panic, and every violation must be complete and point into
// the request.
func FuzzCheck(f *testing.F) {
	c := newTestCatalog(f)
	seeds := []string{
		`{}`,
		`{"scope":"openid profile","resource":"https://bank.example"}`,
		`{"authorization_details":[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"selection":{"min":2,"max":1}}]}`,
		`{"authorization_details":[{"type":"https://bank.example/authorization-details/automatic-charge","actions":["read"],"locations":["https://bank.example"],"transaction":{"currency":"CLP","minimum":"1","maximum":"2"},"budget":null}],"org_id":"o"}`,
		`{"authorization_details":[{"type":"https://bank.example/authorization-details/company-identity","actions":["read"],"locations":["x"]}]}`,
		`{"authorization_details":"[]"}`,
		`{"authorization_details":[[[[{}]]]]}`,
		`{"resource":["a","b"],"scope":"  "}`,
		`[]`, `"x"`, `{"a~/b":1}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := c.CheckDocument(data)
		if err != nil {
			return
		}
		for _, v := range r.Violations {
			if v.Code == "" || v.Message == "" || v.OAuthError == "" || !strings.HasPrefix(v.Pointer, "/") {
				t.Fatalf("incomplete violation %+v for %q", v, data)
			}
		}
		for _, d := range r.Details {
			var back any
			if d.Type == nil || json.Unmarshal(d.JSON, &back) != nil {
				t.Fatalf("bad detail %+v", d)
			}
			if obj, ok := back.(map[string]any); !ok || obj["type"] != d.Type.Name {
				t.Fatalf("detail text %q is not the detail of type %s", d.JSON, d.Type.Name)
			}
		}
	})
}

// realisticDetails are the three details of the realistic request; the
// charge's maximum is a parameter so that the distinct benchmark can vary it.
func realisticDetails(maximum string) []map[string]any {
	return []map[string]any{
		set(set(validDetail("bank_account"), "selection", nil), "identifiers", anys(uuids(3))),
		set(set(set(validDetail("automatic-charge"), "budget", map[string]any{"amount": "100000", "interval": map[string]any{"unit": "months", "count": 1}, "time_zone": "America/Santiago"}),
			"account_binding", map[string]any{"key": "main", "name": map[string]any{"suggested": "Main account", "editable": true}}), "transaction.maximum", maximum),
		validDetail("signatures"),
	}
}

// BenchmarkCheckDistinct checks realistic requests whose charge detail is
// different every time, so no verdict comes from the memo: the cost of a
// request seen for the first time.
func BenchmarkCheckDistinct(b *testing.B) {
	c := newTestCatalog(b)
	reqs := make([]Request, 1<<14)
	for i := range reqs {
		js, _ := json.Marshal(realisticDetails(fmt.Sprint(100000 + i)))
		reqs[i] = Request{Scope: "openid profile email offline_access", Resource: []string{"https://bank.example"}, AuthorizationDetails: js, OrgID: "org-1"}
	}
	// The bank_account and signing details repeat; only the charge is new.
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		c.verdicts = newVerdicts() // every detail unseen
		c.Check(reqs[i%len(reqs)])
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkCheckRealistic checks a realistic request: four scopes and three
// details (a bank account, an automatic charge with budget and binding, and
// a signing detail), the same request every time as a Miniapp sends it on
// every sign-in: the details' verdicts come from the memo. The target:
// 50,000 requests/s per core (BENCHMARKS.md, "Catalog").
func BenchmarkCheckRealistic(b *testing.B) {
	c := newTestCatalog(b)
	js, _ := json.Marshal(realisticDetails("50000"))
	req := Request{Scope: "openid profile email offline_access", Resource: []string{"https://bank.example"}, AuthorizationDetails: js, OrgID: "org-1"}
	if r := c.Check(req); !r.Valid() || len(r.Details) != 3 {
		b.Fatalf("the benchmark request must be valid: %v", r.Violations)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.Check(req)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
