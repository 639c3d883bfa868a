package netlog

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miniapp-host/miniapp-host/redact"
)

// encodings are the spellings of a secret that a log could hold it in.
func encodings(secret string) map[string]string {
	js, _ := json.Marshal(secret)
	return map[string]string{
		"raw": secret, "percent-encoded": url.QueryEscape(secret), "path-escaped": url.PathEscape(secret),
		"base64": base64.StdEncoding.EncodeToString([]byte(secret)), "base64 unpadded": base64.RawStdEncoding.EncodeToString([]byte(secret)),
		"base64url": base64.URLEncoding.EncodeToString([]byte(secret)), "base64url unpadded": base64.RawURLEncoding.EncodeToString([]byte(secret)),
		"JSON-escaped": strings.Trim(string(js), `"`),
	}
}

// leaks says in which spelling doc holds secret, or "": a chosen secret
// (withheld) must not be there as its fingerprint either.
func leaks(doc, secret string, chosen bool) string {
	for name, enc := range encodings(secret) {
		if strings.Contains(doc, enc) {
			return name
		}
	}
	if chosen && strings.Contains(doc, redact.Fingerprint(secret)) {
		return "fingerprint of a secret the server did not issue"
	}
	return ""
}

// exported is everything the log lets out of an entry: the entry (the
// flow's JSON export), its HAR entry, its copy as curl and its event.
func exported(t *testing.T, e Entry) string {
	t.Helper()
	js, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	har, err := json.Marshal(harEntry(e))
	if err != nil {
		t.Fatal(err)
	}
	return string(js) + "\n" + string(har) + "\n" + e.Curl
}

// TestRedactionCanaries: a canary planted wherever the red team found a
// secret kept (a URL of any spelling, the headers that carry URLs, JSON at
// any depth, a form, an error, the caught authorization request) is in no
// export in any encoding; and a secret the server did not issue is not
// there as a fingerprint either.
func TestRedactionCanaries(t *testing.T) {
	const code, state, secret, password, verifier = "cnryCODEq7Zx2Lw9", "cnrySTATEp3Vb8Km", "cnrySECRETr5Tn1Hd", "cnryPASSWORDa4", "cnryVERIFIERs6Yj0Qe"
	chosen := map[string]bool{state: true, secret: true, password: true, verifier: true}
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	js := func(v any) []byte { b, _ := json.Marshal(v); return b }
	cases := map[string]Exchange{
		"upper-case scheme in a JSON answer": {Method: "POST", URL: "http://127.0.0.1:1/native/x/decision", Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"application/json"}},
			ResponseBody:   js(map[string]any{"redirect_url": "HTTP://127.0.0.1:19556/cb?code=" + code + "&state=" + state})},
		"leading space and relative URLs, deep in JSON": {Method: "POST", URL: "/x", Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"application/problem+json"}},
			ResponseBody: js(map[string]any{"a": []any{map[string]any{"b": []any{" https://a.example/cb?code=" + code,
				"/cb?state=" + state, "cb#code=" + code, "Code=" + code}}}})},
		"a JSON string holding JSON": {Method: "POST", URL: "/x", Status: 200, ResponseHeader: http.Header{"Content-Type": {"application/json"}},
			ResponseBody: js(map[string]any{"inner": `{"client_secret":"` + secret + `","next":"/cb?code=` + code + `"}`})},
		"URL headers": {Method: "GET", URL: "/x", Status: 302, ResponseHeader: http.Header{
			"Location": {" HTTPS://a.example/cb?code=" + code}, "Refresh": {"0; url=/cb?code=" + code},
			"Link": {"</cb?state=" + state + `>; rel="next"`}, "Content-Location": {"/cb#code=" + code},
			"X-Redirect": {"https://a.example/cb?code=" + code}, "Set-Cookie": {"s=v; Path=/cb?code=" + code}}},
		"request headers": {Method: "GET", URL: "/x", RequestHeader: http.Header{"Referer": {"https://a.example/cb?code=" + code + "&state=" + state},
			"Dpop": {verifier}, "X-Client-Assertion": {secret}, "Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("c:"+secret))}},
			Status: 200},
		"password and secret in URLs": {Method: "GET", URL: "https://a.example/t?password=" + password + "&client_secret=" + secret +
			"&code_verifier=" + verifier, Status: 200},
		"a form with a URL in it": {Method: "POST", URL: "/token", RequestHeader: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			RequestBody: []byte("grant_type=authorization_code&code=" + code + "&redirect_uri=" +
				url.QueryEscape("HTTP://a.example/cb?state="+state) + "&client_secret=" + secret + "&password=" + password), Status: 200},
		"a percent-encoded URL in a parameter": {Method: "GET",
			URL: "/login?next=" + url.QueryEscape("/authorize?state="+state+"&r="+url.QueryEscape("/cb?code="+code)), Status: 200},
		"an error": {Method: "GET", URL: "/x", Err: `Get "HTTP://127.0.0.1:1/cb?code=` + code + `": connection refused`},
		// The red team's spellings the rule table lacked: passwd=, the
		// members secret and api_key, a JWK's d, a URL's userinfo password.
		"passwd and userinfo in the URL": {Method: "GET", URL: "https://u:" + password + "@a.example/t?passwd=" + secret, Status: 200},
		"secret, api_key, a JWK's d and a DSN in JSON": {Method: "POST", URL: "/x", Status: 200,
			RequestHeader: http.Header{"Content-Type": {"application/json"}},
			RequestBody: js(map[string]any{"secret": secret, "settings": map[string]any{"api_key": verifier},
				"jwk": map[string]any{"kty": "EC", "crv": "P-256", "x": "eA", "y": "eQ", "d": state},
				"dsn": "postgres://u:" + password + "@db.example/app"})},
	}
	for name, x := range cases {
		t.Run(name, func(t *testing.T) {
			x.Started, x.Done = at, at
			x.RequestSize, x.ResponseSize = int64(len(x.RequestBody)), int64(len(x.ResponseBody))
			doc := exported(t, record(x))
			for _, c := range []string{code, state, secret, password, verifier} {
				if how := leaks(doc, c, chosen[c]); how != "" {
					t.Errorf("the export holds %q (%s):\n%s", c, how, doc)
				}
			}
		})
	}
	t.Run("the caught authorization request", func(t *testing.T) {
		u, _ := url.Parse("HTTP://svc.example/oauth/authorize?client_id=c1&state=" + state + "&client_secret=" + secret +
			"&password=" + password + "&code_verifier=" + verifier + "&redirect_uri=" + url.QueryEscape("http://a.example/cb?code="+code))
		e := authorizeEntry(u, at)
		doc := exported(t, e)
		for _, c := range []string{code, state, secret, password, verifier} {
			if how := leaks(doc, c, chosen[c]); how != "" {
				t.Errorf("the authorize entry holds %q (%s):\n%s", c, how, doc)
			}
		}
	})
}

// FuzzRedactCanary: whatever surrounds it, a canary planted as the value of
// a secret parameter (any name of the list, in any case, percent-encoded or
// not) in a URL, a header, a JSON string at some depth, a JSON member, a
// form, an error or the caught authorization request never survives in
// the export, in any encoding; a withheld one leaves no fingerprint.
func FuzzRedactCanary(f *testing.F) {
	f.Add("HTTP://127.0.0.1:19556/cb", "&x=1", "X-Redirect", uint8(0), uint8(0), uint8(0), uint8(0))
	f.Add(" /cb", "", "Refresh", uint8(1), uint8(3), uint8(1), uint8(5))
	f.Add("0; url=/cb", "#top", "Link", uint8(2), uint8(7), uint8(2), uint8(2))
	f.Add("https://a.example/", "", "Authorization", uint8(3), uint8(6), uint8(0xff), uint8(1))
	f.Add("grant_type=x", "&y", "Cookie", uint8(4), uint8(1), uint8(4), uint8(3))
	f.Add("Get \"https://a/cb", "\": refused", "", uint8(5), uint8(2), uint8(3), uint8(4))
	f.Add("https://svc.example/oauth/authorize?client_id=c", "", "", uint8(6), uint8(8), uint8(0x55), uint8(0))
	const canary = "zCnRy8Qw3Lp6Vt1Xk"
	names := []string{"code", "state", "access_token", "id_token", "refresh_token", "token", "code_verifier", "client_secret",
		"password", "client_assertion", "assertion", "dpop"}
	seps := []string{"?", "&", ";", "#", "?a=b&", "#/cb?"}
	ends := []string{"", "&", "#", ";", "&x=1"}
	f.Fuzz(func(t *testing.T, prefix, suffix, header string, where, nameIdx, caseMask, sepIdx uint8) {
		for _, in := range []string{prefix, suffix, header} {
			if strings.Contains(in, canary) {
				return
			}
		}
		name := names[int(nameIdx)%len(names)]
		spelled := []byte(name)
		for i := range spelled {
			if caseMask&(1<<(i%8)) != 0 {
				spelled[i] = strings.ToUpper(string(spelled[i]))[0]
			}
		}
		n := string(spelled)
		if caseMask&0x80 != 0 {
			n = "%" + strings.ToUpper(hexByte(spelled[0])) + n[1:]
		}
		param := seps[int(sepIdx)%len(seps)] + n + "=" + canary + ends[int(sepIdx/8)%len(ends)]
		text := prefix + param + suffix
		at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		x := Exchange{Method: "POST", URL: "/x", Started: at, Done: at, Status: 200, ResponseHeader: http.Header{}}
		var e Entry
		switch where % 7 {
		case 0:
			x.URL = text
		case 1:
			if header == "" {
				header = "X-Any"
			}
			x.RequestHeader = http.Header{header: {text}}
			x.ResponseHeader = http.Header{header: {text}}
		case 2:
			var v any = text
			for range int(where/7) % 4 {
				v = []any{map[string]any{"k": v}}
			}
			b, _ := json.Marshal(v)
			x.ResponseHeader.Set("Content-Type", "application/json")
			x.ResponseBody, x.ResponseSize = b, int64(len(b))
		case 3:
			b, _ := json.Marshal(map[string]any{prefix: suffix, n: canary})
			x.ResponseHeader.Set("Content-Type", "application/json")
			x.ResponseBody, x.ResponseSize = b, int64(len(b))
		case 4:
			body := prefix + "&" + n + "=" + canary + "&" + suffix
			x.RequestHeader = http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			x.RequestBody, x.RequestSize = []byte(body), int64(len(body))
		case 5:
			x.Err = text
		case 6:
			u, err := url.Parse(text)
			if err != nil {
				return
			}
			e = authorizeEntry(u, at)
		}
		if where%7 != 6 {
			e = record(x)
		}
		doc := exported(t, e)
		if how := leaks(doc, canary, redact.ChosenSecretParam(name)); how != "" {
			t.Fatalf("the canary survives (%s) planted as %q in %q (case %d):\n%s", how, param, text, where%7, doc)
		}
	})
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&0xf]})
}
