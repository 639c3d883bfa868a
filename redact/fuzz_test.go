package redact

import (
	"strings"
	"testing"
)

// plantedSpellings are the spellings of a secret the red team found kept
// (docs/security.md, the threat table), SECRET where the secret goes, and
// whether URL, which takes one URL or parameter string, must redact the
// spelling alone too (Text must redact every one, in any text).
var plantedSpellings = []struct {
	text string
	url  bool
}{
	{"https://qa:SECRET@app.example/cb", true},
	{"postgres://app:SECRET@db.example:5432/app?sslmode=disable", true},
	{`{"dsn":"postgres://app:SECRET@db.example/app"}`, false},
	{`{"dsn":"postgres:\/\/app:SECRET@db.example\/app"}`, false},
	{"passwd=SECRET", true},
	{"https://a.example/login?user=ana&passwd=SECRET&next=/", true},
	{`{"secret":"SECRET"}`, false},
	{`{"api_key": "SECRET", "n": 1}`, false},
	{`msg="body {\"client_secret\":\"SECRET\",\"x\":1}"`, false},
	{`{"kty":"EC","crv":"P-256","x":"eA","y":"eQ","d":"SECRET"}`, false},
	{`{"d":"SECRET","kty":"RSA","n":"bg","e":"AQAB"}`, false},
	{`{"kty":"oct","k":"SECRET"}`, false},
	{`{"private_key":{"kty":"EC","d":"SECRET"}}`, false},
	{"https://app.example/cb?code=SECRET&state=s", true},
	{"https://as.example/a?redirect_uri=https%3A%2F%2Fapp.example%2Fcb%3Fpasswd%3DSECRET", true},
	{"https://as.example/a?next=https%3A%2F%2Fqa%3ASECRET%40app.example%2F", true},
	{"X_API_KEY=SECRET", true},
	{`{"access_token":"SECRET","token_type":"Bearer"}`, false},
}

// FuzzRedactPlantedSecret: a secret planted in any of plantedSpellings,
// with any text before and after it, never survives Text (nor URL, for the
// spellings of a URL), neither as itself nor, when it is one someone chose,
// as its fingerprint. The seed corpus is testdata/fuzz/FuzzRedactPlantedSecret.
func FuzzRedactPlantedSecret(f *testing.F) {
	for i := range plantedSpellings {
		f.Add(uint(i), "hunter2hunter2", "", "")
	}
	f.Fuzz(func(t *testing.T, spelling uint, secret, before, after string) {
		sp := plantedSpellings[spelling%uint(len(plantedSpellings))]
		// A secret is what one looks like: 8 to 64 letters and digits, in
		// none of the text around it (else it is there whatever happens)
		// and not the word that stands for one.
		if len(secret) < 8 || len(secret) > 64 || strings.Trim(secret, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" ||
			strings.Contains(before+" "+sp.text+" "+after, secret) || strings.Contains(Withheld, secret) {
			return
		}
		planted := strings.ReplaceAll(sp.text, "SECRET", secret)
		check := func(how, in, out string) {
			if strings.Contains(out, secret) {
				t.Fatalf("%s(%q) keeps the secret %q:\n%s", how, in, secret, out)
			}
			if !strings.Contains(sp.text, "code=") && !strings.Contains(sp.text, "access_token") && strings.Contains(out, Fingerprint(secret)) {
				t.Fatalf("%s(%q) shows the fingerprint of a chosen secret:\n%s", how, in, out)
			}
		}
		in := before + " " + planted + " " + after
		check("Text", in, Text(in))
		if sp.url {
			check("URL", planted, URL(planted))
		}
	})
}
