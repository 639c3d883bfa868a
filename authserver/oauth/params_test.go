package oauth

import "testing"

func TestRedirectAllowed(t *testing.T) {
	reg := []string{"https://app.example/cb", "http://127.0.0.1:8701/callback"}
	for _, tc := range []struct {
		uri  string
		want bool
	}{
		{"https://app.example/cb", true},
		{"http://127.0.0.1:8701/callback", true},
		{"https://app.example/cb/../admin", false},
		{"https://app.example/cb%2F..%2F", false},
		{"https://app.example/cbx", false},
		{"https://app.example.evil/cb", false},
		{"http://app.example/cb", false},
		{"https://app.example:443/cb", false},
		{"https://app.example/cb#", false},
		{"https://APP.EXAMPLE/cb", false},
		{"https://app.example/cb?x", false},
		{"http://localhost:8701/callback", false},
		{"http://127.0.0.1:8702/callback", false},
		{"", false},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			if got := redirectAllowed(reg, tc.uri); got != tc.want {
				t.Fatalf("redirectAllowed(%q) = %v", tc.uri, got)
			}
		})
	}
}

func TestVerifyPKCE(t *testing.T) {
	// RFC 7636 Appendix B.
	const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	for _, tc := range []struct {
		name, challenge, verifier string
		want                      bool
	}{
		{"RFC 7636 example", challenge, verifier, true},
		{"plain: verifier equals challenge", challenge, challenge, false},
		{"no stored challenge", "", verifier, false},
		{"short verifier", challenge, verifier[:42], false},
		{"verifier with a forbidden character", challenge, verifier[:42] + "+", false},
		{"other verifier", challenge, "aBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verifyPKCE(tc.challenge, tc.verifier); got != tc.want {
				t.Fatalf("verifyPKCE = %v", got)
			}
		})
	}
	if !validChallenge(challenge) || validChallenge(challenge[:42]) || validChallenge(challenge[:42]+"+") {
		t.Fatal("validChallenge accepts the wrong shapes")
	}
}

func TestWellFormedJWT(t *testing.T) {
	for tok, want := range map[string]bool{
		"a.b.c": true, "eyJ.eyJ.sig-_": true,
		"": false, "a.b": false, "a..c": false, ".b.c": false, "a.b.": false, "a.b.c.d": false, "a.b.c d": false, "a.b.c=": false,
	} {
		if got := wellFormedJWT(tok); got != want {
			t.Errorf("wellFormedJWT(%q) = %v", tok, got)
		}
	}
}
