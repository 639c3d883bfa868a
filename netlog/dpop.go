package netlog

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/miniapp-host/miniapp-host/redact"
)

// A DPoP proof (RFC 9449 section 4.2) is a JWT the client signed for one
// request. The log never keeps it whole (a proof could be replayed within
// its lifetime, and its claims are the client's choice), but a developer
// debugging a refusal needs to know which key and algorithm made it: the
// log keeps its protected header's typ, alg and kid, and the key by its
// JWK thumbprint (RFC 7638), the jkt a bound token's cnf and dpop_jkt
// carry (RFC 9449 section 6.1).

// dpopProofSummary is what the log keeps of a DPoP header's value:
// "redacted:withheld (the DPoP proof); header {"alg":...,"typ":...}; jkt
// <thumbprint>", or
// the withheld marker alone when the value is not a proof it can read.
func dpopProofSummary(v string) string {
	head, _, ok := strings.Cut(strings.TrimSpace(v), ".")
	if !ok {
		return withheld
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return withheld
	}
	var h struct {
		Typ string          `json:"typ"`
		Alg string          `json:"alg"`
		Kid string          `json:"kid"`
		JWK json.RawMessage `json:"jwk"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return withheld
	}
	kept := struct {
		Alg string `json:"alg,omitempty"`
		Typ string `json:"typ,omitempty"`
		Kid string `json:"kid,omitempty"`
	}{capString(redact.URL(h.Alg), 32), capString(redact.URL(h.Typ), 32), capString(redact.URL(h.Kid), 128)}
	b, _ := json.Marshal(kept)
	out := withheld + " (the DPoP proof); header " + string(b)
	if jkt, ok := jwkThumbprint(h.JWK); ok {
		out += "; jkt " + jkt
	} else {
		out += "; jkt unknown (the header's jwk is not a public key RFC 7638 defines a thumbprint for)"
	}
	return out
}

// jwkThumbprint is the base64url SHA-256 JWK thumbprint of a public key
// (RFC 7638 section 3): the hash of its required members, in
// lexicographic order, without whitespace; for EC crv, kty, x, y
// (section 3.2), for RSA e, kty, n, for OKP crv, kty, x (RFC 8037
// section 2).
func jwkThumbprint(raw json.RawMessage) (string, bool) {
	var k map[string]any
	if json.Unmarshal(raw, &k) != nil {
		return "", false
	}
	var members []string
	switch k["kty"] {
	case "EC":
		members = []string{"crv", "kty", "x", "y"}
	case "RSA":
		members = []string{"e", "kty", "n"}
	case "OKP":
		members = []string{"crv", "kty", "x"}
	default:
		return "", false
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members {
		s, ok := k[m].(string)
		if !ok {
			return "", false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(m)
		val, _ := json.Marshal(s)
		b.Write(name)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	sum := sha256.Sum256([]byte(b.String()))
	return base64.RawURLEncoding.EncodeToString(sum[:]), true
}
