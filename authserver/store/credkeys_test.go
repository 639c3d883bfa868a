package store

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"
)

// fakeJWS is a compact JWS whose payload is claims; the signature is not
// checked by AccessTokenKey, which only reads the jti's prefix.
func fakeJWS(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"ES256","typ":"at+jwt"}`)) + "." + enc([]byte(claims)) + "." + enc([]byte("signature"))
}

// TestCredentialKeysAreTimeOrdered: codes, refresh tokens and access
// tokens issued later key after those issued earlier, whatever their
// random parts, and each key ends with the value's hash.
func TestCredentialKeysAreTimeOrdered(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	var prevSecret, prevToken []byte
	for i := range 50 {
		now := t0.Add(time.Duration(i) * time.Microsecond)
		s, err := NewSecret(rand.Reader, now)
		if err != nil {
			t.Fatal(err)
		}
		jti, err := NewJTI(rand.Reader, now)
		if err != nil {
			t.Fatal(err)
		}
		tok := fakeJWS(`{"jti":"` + jti + `","iss":"https://as.example","exp":1}`)
		sk, tk := SecretKey(s), AccessTokenKey(tok)
		if len(s) != 54 || len(sk) != 40 || !bytes.Equal(sk[8:], Hash(s)) {
			t.Fatalf("secret %q: key %x", s, sk)
		}
		if len(tk) != 40 || !bytes.Equal(tk[8:], Hash(tok)) || !bytes.Equal(tk[:8], sk[:8]) {
			t.Fatalf("token key %x, secret key %x: want the same prefix and the token's hash", tk, sk)
		}
		if prevSecret != nil && (bytes.Compare(prevSecret, sk) >= 0 || bytes.Compare(prevToken, tk) >= 0) {
			t.Fatalf("issue %d keys before issue %d", i, i-1)
		}
		prevSecret, prevToken = sk, tk
	}
}

// TestCredentialKeysWithoutPrefix: values issued before keys had a prefix,
// or any other string, key by their hash alone, so that they are still
// found; a value whose prefix was changed keys differently and so is not.
func TestCredentialKeysWithoutPrefix(t *testing.T) {
	legacyCode := base64.RawURLEncoding.EncodeToString(make([]byte, 32)) // 43 characters, as codes were
	legacyAT := fakeJWS(`{"iss":"https://as.example","sub":"u","jti":"x"}`)
	for _, v := range []string{legacyCode, "code-no-pkce", "", "not base64 !", legacyAT, "a.b", "a." + legacyCode} {
		if !bytes.Equal(SecretKey(v), Hash(v)) || !bytes.Equal(AccessTokenKey(v), Hash(v)) {
			t.Errorf("%q: want its hash alone as key", v)
		}
	}
	s, _ := NewSecret(rand.Reader, time.Now())
	b, _ := base64.RawURLEncoding.DecodeString(s)
	b[0] ^= 1
	forged := base64.RawURLEncoding.EncodeToString(b)
	if bytes.Equal(SecretKey(forged)[8:], SecretKey(s)[8:]) {
		t.Fatal("a changed prefix kept the hash")
	}
}
