package authserver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// TestProviderDPoP: the signing provider (authserver/providers) takes a
// DPoP-bound token with its proof, made for the provider's own URL, and
// forwards both to the grant endpoint: the Company key's state is read. The
// bound token as Bearer, a proof for another URL, a replayed proof and a
// proof of another key are refused with 401 and a DPoP challenge naming
// the error (RFC 9449 §7.1).
func TestProviderDPoP(t *testing.T) {
	e := start(t)
	key := newSigner(t, jose.ES256)
	verifier, challenge := pkce(t)
	q := e.authParams(challenge)
	q.Set("org_id", orgAndes)
	q.Set("authorization_details", signingDetails(e))
	q.Add("resource", e.u.SigningBaseURL)
	rq := e.nativeCode(q, subAna, map[string]string{"action": "approve"})
	form := url.Values{"grant_type": {"authorization_code"}, "code": {rq.Get("code")}, "redirect_uri": {publicRedir},
		"code_verifier": {verifier}, "client_id": {publicID}}
	st, m, _ := e.post(e.u.Token, form, "", "", "DPoP", key.proof(e, "POST", e.u.Token, "", ""))
	if st != http.StatusOK || m["token_type"] != "DPoP" {
		t.Fatalf("token: want 200 DPoP, got %d %v", st, m)
	}
	at := m["access_token"].(string)
	target := e.u.SigningBaseURL + "/signing-key"
	call := func(scheme, proof string) (int, map[string]any, http.Header) {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Authorization", scheme+" "+at)
		if proof != "" {
			req.Header.Set("DPoP", proof)
		}
		return e.do(req)
	}
	good := key.proof(e, "GET", target, at, "")
	if st, m, _ := call("DPoP", good); st != http.StatusOK {
		t.Fatalf("DPoP with the proof: want 200 and the key's state, got %d %v", st, m)
	}
	for _, tc := range []struct{ name, scheme, proof, code, desc string }{
		{"as Bearer", "Bearer", "", "invalid_token", "DPoP"},
		{"no proof", "DPoP", "", "invalid_dpop_proof", "one DPoP header"},
		{"proof for another URL", "DPoP", key.proof(e, "GET", e.u.SigningBaseURL+"/signatures", at, ""), "invalid_dpop_proof",
			"htu '" + e.u.SigningBaseURL + "/signatures' is not the URL at which this Resource Server received the request, '" + target + "'"},
		{"wrong htm", "DPoP", key.proof(e, "POST", target, at, ""), "invalid_dpop_proof", "htm"},
		{"replayed proof", "DPoP", good, "invalid_dpop_proof", "jti was used before"},
		{"another key", "DPoP", newSigner(t, jose.ES256).proof(e, "GET", target, at, ""), "invalid_dpop_proof", "key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, m, h := call(tc.scheme, tc.proof)
			ch := h.Get("WWW-Authenticate")
			if st != http.StatusUnauthorized || m["error"] != tc.code || !strings.HasPrefix(ch, `DPoP error="`+tc.code+`"`) ||
				!strings.Contains(m["error_description"].(string)+ch, tc.desc) {
				t.Fatalf("want 401 %s with a DPoP challenge (%q), got %d %v %q", tc.code, tc.desc, st, m, ch)
			}
		})
	}
}
