package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// keySet holds the parsed signing keys and ready signers, built once at
// start: access tokens are ES256 (short, fast to sign and verify); ID
// tokens are signed with the algorithm the client registered
// (id_token_signed_response_alg, OpenID Connect Dynamic Client
// Registration 1.0 §2): RS256 by default, the algorithm OpenID Connect
// Core §15.1 requires every relying party to accept, or ES256 or EdDSA
// (Ed25519, RFC 8037), which sign 20 to 50 times faster. ID tokens share
// the ES256 key with access tokens; their typ headers (JWT and at+jwt)
// keep one from passing for the other (RFC 8725 §3.11, RFC 9068 §4).
// Every stored key is published in the JWKS so that tokens signed before a
// key change still verify.
type keySet struct {
	access *jwsSigner            // ES256, typ at+jwt (RFC 9068 §2.1)
	id     map[string]*jwsSigner // by store.IDTokenAlgs, typ JWT
	jwks   []byte
}

// idSigner is the signer of client c's ID tokens.
func (ks *keySet) idSigner(c *store.Client) *jwsSigner {
	if sg, ok := ks.id[c.IDTokenAlg]; ok {
		return sg
	}
	return ks.id[store.DefaultIDTokenAlg]
}

// loadKeys reads the stored keys and creates the missing ones, under
// store.Exclusive, so that instances starting at once on one database
// create one key of each algorithm between them. Keys come from
// crypto/rand, not Config.Rand: Go's key generation ignores a caller's
// reader, and a test gains nothing from predictable keys.
func loadKeys(ctx context.Context, st Storage, now func() time.Time) (ks *keySet, err error) {
	err = st.Exclusive(ctx, func() error {
		ks, err = loadKeysLocked(ctx, st, now)
		return err
	})
	return ks, err
}

func loadKeysLocked(ctx context.Context, st Keys, now func() time.Time) (*keySet, error) {
	stored, err := st.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	have := map[string]bool{}
	for _, k := range stored {
		have[k.Alg] = true
	}
	created := false
	for _, alg := range []string{string(jose.ES256), string(jose.RS256), string(jose.EdDSA)} {
		if have[alg] {
			continue
		}
		k, err := newKey(alg, now())
		if err != nil {
			return nil, err
		}
		if err := st.AddKey(ctx, k); err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
		created = true
	}
	if created { // read back, so that the JWKS order is the store's on every start
		if stored, err = st.Keys(ctx); err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
	}
	ks := &keySet{}
	var pub jose.JSONWebKeySet
	latest := map[string]jose.JSONWebKey{}
	for _, k := range stored {
		priv, err := x509.ParsePKCS8PrivateKey(k.DER)
		if err != nil {
			return nil, fmt.Errorf("oauth: key %s: %w", k.KID, err)
		}
		jwk := jose.JSONWebKey{Key: priv, KeyID: k.KID, Algorithm: k.Alg, Use: "sig"}
		latest[k.Alg] = jwk // stored oldest first, so the last one wins
		pub.Keys = append(pub.Keys, jwk.Public())
	}
	ks.jwks, err = json.Marshal(pub)
	if err != nil {
		return nil, fmt.Errorf("oauth: jwks: %w", err)
	}
	ks.access, err = newJWSSigner(latest[string(jose.ES256)], "at+jwt")
	if err != nil {
		return nil, fmt.Errorf("oauth: access token signer: %w", err)
	}
	ks.id = map[string]*jwsSigner{}
	for _, alg := range store.IDTokenAlgs {
		ks.id[alg], err = newJWSSigner(latest[alg], "JWT")
		if err != nil {
			return nil, fmt.Errorf("oauth: %s id token signer: %w", alg, err)
		}
	}
	return ks, nil
}

// newKey generates a key for alg; its kid is the RFC 7638 thumbprint.
func newKey(alg string, now time.Time) (store.Key, error) {
	var priv crypto.Signer
	var err error
	switch alg {
	case string(jose.ES256):
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case string(jose.RS256):
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case string(jose.EdDSA):
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return store.Key{}, fmt.Errorf("oauth: no key type for %s", alg)
	}
	if err != nil {
		return store.Key{}, fmt.Errorf("oauth: generate %s key: %w", alg, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return store.Key{}, fmt.Errorf("oauth: %w", err)
	}
	jwk := jose.JSONWebKey{Key: priv.Public()}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return store.Key{}, fmt.Errorf("oauth: %w", err)
	}
	return store.Key{KID: base64.RawURLEncoding.EncodeToString(tp), Alg: alg, DER: der, CreatedAt: now}, nil
}

// jwsSigner signs JWS in compact serialization (RFC 7515 §7.1) with one
// key. Its protected header is encoded once; per token only the claims are
// marshalled, encoded and signed with the standard library's crypto.
// go-jose's signer built and marshalled the header as a map for every
// token and encoded the result twice: about a quarter of an access
// token's signing time. Verification stays with go-jose (tests, relying
// parties).
type jwsSigner struct {
	alg    string
	header string // base64url of the protected header, then "."
	key    crypto.Signer
}

// newJWSSigner is the signer of jwk's private key, whose tokens carry typ.
func newJWSSigner(jwk jose.JSONWebKey, typ string) (*jwsSigner, error) {
	key, ok := jwk.Key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("oauth: key %s is not a private key", jwk.KeyID)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if jwk.Algorithm != string(jose.ES256) || k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("oauth: key %s: ES256 needs a P-256 key", jwk.KeyID)
		}
	case *rsa.PrivateKey:
		if jwk.Algorithm != string(jose.RS256) {
			return nil, fmt.Errorf("oauth: key %s: an RSA key signs RS256", jwk.KeyID)
		}
	case ed25519.PrivateKey:
		if jwk.Algorithm != string(jose.EdDSA) {
			return nil, fmt.Errorf("oauth: key %s: an Ed25519 key signs EdDSA", jwk.KeyID)
		}
	default:
		return nil, fmt.Errorf("oauth: key %s: unsupported type %T", jwk.KeyID, key)
	}
	h, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{jwk.Algorithm, jwk.KeyID, typ})
	if err != nil {
		return nil, err
	}
	return &jwsSigner{alg: jwk.Algorithm, header: base64.RawURLEncoding.EncodeToString(h) + ".", key: key}, nil
}

// sign serialises claims and signs them in compact form. The claims are
// marshalled once by encoding/json, not round-tripped through a map as the
// jwt builder does, which matters at thousands of tokens per second.
func sign(sg *jwsSigner, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("oauth: claims: %w", err)
	}
	enc := base64.RawURLEncoding
	b := make([]byte, 0, len(sg.header)+enc.EncodedLen(len(payload))+1+enc.EncodedLen(512))
	b = append(b, sg.header...)
	b = enc.AppendEncode(b, payload)
	var sig []byte
	switch k := sg.key.(type) {
	case *ecdsa.PrivateKey:
		// RFC 7518 §3.4: R and S as two 32-byte big-endian integers.
		d := sha256.Sum256(b)
		r, s, err := ecdsa.Sign(rand.Reader, k, d[:])
		if err != nil {
			return "", fmt.Errorf("oauth: sign: %w", err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case *rsa.PrivateKey:
		d := sha256.Sum256(b)
		if sig, err = rsa.SignPKCS1v15(nil, k, crypto.SHA256, d[:]); err != nil {
			return "", fmt.Errorf("oauth: sign: %w", err)
		}
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, b)
	}
	b = append(b, '.')
	return string(enc.AppendEncode(b, sig)), nil
}
