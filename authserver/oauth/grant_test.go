package oauth

import (
	"encoding/json"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// TestGrantBodyEncoding: the grant endpoint's hand-written body is byte
// for byte what json.Marshal writes for grantBody, for plain values and
// for those Marshal escapes (HTML characters, quotes, control and
// non-ASCII characters), with and without an organisation.
func TestGrantBodyEncoding(t *testing.T) {
	for _, g := range []*store.Grant{
		{Scopes: []string{"bank_accounts:read", "openid"}, Details: json.RawMessage(`[{"type":"bank_account","actions":["read"]}]`),
			SubjectID: "sub_ana", InstallationID: "5f1c2d3e-0000-5000-8000-000000000000"},
		{Scopes: nil, Details: json.RawMessage(`[]`), OrgID: "org_<acme>&co", SubjectID: `sub "quoted" \\ back`, InstallationID: "i\n\u2028é"},
		{Scopes: []string{"a<b"}, Details: json.RawMessage(`[ {"note" : "x<y & é\u2028"} ]`), SubjectID: "s"},
		{Details: json.RawMessage(`[{"s":"tab\there","e":"\"q\" \\ \/"}]`), SubjectID: "s"},
	} {
		body := grantBody{Scopes: g.Scopes, AuthorizationDetails: g.Details, Subject: g.SubjectID, ConsumerInstallationID: g.InstallationID}
		if body.Scopes == nil {
			body.Scopes = []string{}
		}
		if g.OrgID != "" {
			body.OrgID = &g.OrgID
		}
		want, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendGrantBody(nil, g)
		if err != nil || string(got) != string(want) {
			t.Errorf("got  %s (%v)\nwant %s", got, err, want)
		}
	}
}

// BenchmarkGrantBody encodes the grant endpoint's body as the handler does,
// and with json.Marshal, which it used before, for comparison.
func BenchmarkGrantBody(b *testing.B) {
	g := &store.Grant{Scopes: []string{"bank_accounts:read"}, SubjectID: "sub_ana", InstallationID: "5f1c2d3e-0000-5000-8000-000000000000",
		Details: json.RawMessage(`[{"type":"bank_account","actions":["read"],"subject":{"type":"profile"},"identifiers":["acct-0001"]}]`)}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := appendGrantBody(make([]byte, 0, 256+len(g.Details)), g); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body := grantBody{Scopes: g.Scopes, AuthorizationDetails: g.Details, Subject: g.SubjectID, ConsumerInstallationID: g.InstallationID}
			if _, err := json.Marshal(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
