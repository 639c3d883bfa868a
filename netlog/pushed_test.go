package netlog

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// dpopProof signs a DPoP proof (RFC 9449 section 4.2) with a fresh P-256
// key and returns it with the key's RFC 7638 thumbprint as go-jose
// computes it.
func dpopProof(t *testing.T, htm, htu string) (proof, jkt string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := jose.JSONWebKey{Key: &k.PublicKey}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k},
		(&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	claims, _ := json.Marshal(map[string]any{"jti": "jti-" + secretVerify, "htm": htm, "htu": htu, "iat": 1})
	jws, err := s.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	proof, err = jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return proof, base64.RawURLEncoding.EncodeToString(tp)
}

// TestPushedRequestJoinsItsFlow: a backend's pushed authorization request
// (RFC 9126), recorded through IntoPushed before any flow exists, becomes
// the first entry of the flow whose caught request names the request_uri
// it got, before the caught request; its client assertion is withheld and
// its DPoP proof is kept only as its header and key thumbprint (the
// signed proof nowhere, not in the HAR either), which its network event
// carries too. The service's reading of
// the pushed request lands on the caught request (SetPushed). A push the
// service refused, and one whose request_uri no flow names, join nothing.
func TestPushedRequestJoinsItsFlow(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		n++
		switch r.URL.Query().Get("answer") {
		case "refuse":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_request"}`))
		default:
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"request_uri":"urn:ietf:params:oauth:request_uri:r` + string(rune('0'+n)) + `","expires_in":60}`))
		}
	}))
	defer srv.Close()
	bus := &events{}
	l := New(Config{Events: bus})
	c := Client(srv.Client())
	proof, jkt := dpopProof(t, "POST", srv.URL+"/oauth/par")
	push := func(query string) {
		ctx := IntoPushed(t.Context(), l, SourceBackend)
		body := "client_id=c1&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer&client_assertion=" +
			secretClient + "&code_challenge=abc&scope=openid"
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/oauth/par"+query, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("DPoP", proof)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	push("")              // r1
	push("?answer=other") // r2, named by no flow
	push("?answer=refuse")
	la := l.BeginLaunch("https://app.example", "app", "c1")
	u, _ := url.Parse(srv.URL + "/oauth/authorize?client_id=c1&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Ar1")
	f := la.BeginFlow(u)
	f.SetPushed(json.RawMessage(`{"pushed":true,"request_uri":"urn:ietf:params:oauth:request_uri:r1","redirect_uri":"https://app.example/cb","state":"` + secretVerify + `"}`))
	x, _ := l.Flow(f.ID())
	if len(x.Entries) != 2 || x.Entries[0].Kind != KindPAR || x.Entries[1].Kind != KindAuthorize {
		t.Fatalf("entries %+v, want the pushed request, then the caught one", x.Entries)
	}
	par := x.Entries[0]
	if par.Source != SourceBackend || par.Response == nil || par.Response.Status != http.StatusCreated ||
		!strings.Contains(par.Response.Body.Text, "urn:ietf:params:oauth:request_uri:r1") || !strings.Contains(par.Request.Body.Text, "client_assertion="+url.QueryEscape(withheld)) {
		t.Errorf("PAR entry %+v: want the backend's push, its 201 with the request_uri, the assertion withheld", par)
	}
	var dpop string
	for _, h := range par.Request.Headers {
		if h.Name == "Dpop" {
			dpop = h.Value
		}
	}
	want := withheld + ` (the DPoP proof); header {"alg":"ES256","typ":"dpop+jwt"}; jkt ` + jkt
	if dpop != want {
		t.Errorf("DPoP header kept as %q, want %q", dpop, want)
	}
	if len(bus.evs) < 1 || bus.evs[0].(NetworkEvent).EntryKind != KindPAR || bus.evs[0].(NetworkEvent).DPoP != want {
		t.Errorf("first network event %+v: want the pushed request's, with the DPoP proof's header and thumbprint", bus.evs)
	}
	pushed := string(x.Entries[1].Authorize.Pushed)
	if !strings.Contains(pushed, `"redirect_uri": "https://app.example/cb"`) || !strings.Contains(pushed, `"state": "`+withheld+`"`) {
		t.Errorf("the caught request's pushed reading %s: want the redirect_uri and the state withheld", pushed)
	}
	h, _ := l.HAR(f.ID())
	exports := []any{x, h}
	for _, part := range strings.Split(proof, ".")[1:] {
		for _, doc := range exports {
			if b, _ := json.Marshal(doc); strings.Contains(string(b), part) {
				t.Errorf("an export holds a part of the signed proof (%.20s...): %s", part, b)
			}
		}
	}
	assertNoSecret(t, "the flow", x)
	assertNoSecret(t, "the HAR", h)
	if !strings.Contains(func() string { b, _ := json.Marshal(h); return string(b) }(), "jkt "+jkt) {
		t.Error("the HAR lacks the DPoP proof's thumbprint")
	}
	other, _ := url.Parse(srv.URL + "/oauth/authorize?client_id=c1&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Ar1")
	if x, _ := l.Flow(la.BeginFlow(other).ID()); len(x.Entries) != 1 {
		t.Errorf("a second flow naming the same request_uri got %d entries; the push joins one flow", len(x.Entries))
	}
}

// TestDPoPProofSummary: what the log keeps of DPoP header values it cannot
// read is the withheld marker alone; an RSA and an OKP key get their
// RFC 7638 thumbprints (RFC 7638 section 3.1's example key).
func TestDPoPProofSummary(t *testing.T) {
	for _, v := range []string{"", "not-a-jwt", "%%%.x.y", base64.RawURLEncoding.EncodeToString([]byte("[1]")) + ".x.y"} {
		if got := dpopProofSummary(v); got != withheld {
			t.Errorf("%q kept as %q, want %q", v, got, withheld)
		}
	}
	// RFC 7638 section 3.1.
	rsa := `{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}`
	if got, ok := jwkThumbprint(json.RawMessage(rsa)); !ok || got != "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs" {
		t.Errorf("RSA thumbprint %q, want RFC 7638's NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", got)
	}
	if _, ok := jwkThumbprint(json.RawMessage(`{"kty":"oct","k":"c2VjcmV0"}`)); ok {
		t.Error("a symmetric key got a thumbprint")
	}
	head := base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"dpop+jwt","alg":"EdDSA","jwk":{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}`))
	got := dpopProofSummary(head + ".e30.c2ln")
	if !strings.HasPrefix(got, withheld+` (the DPoP proof); header {"alg":"EdDSA","typ":"dpop+jwt"}; jkt `) || strings.Contains(got, "c2ln") {
		t.Errorf("EdDSA proof kept as %q", got)
	}
}
