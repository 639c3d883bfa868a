package dashboard

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// A credential's FAPI 2.0 settings (docs/fapi.md): how it authenticates
// (a secret, or private_key_jwt with its public keys), whether its
// authorization requests must be pushed (RFC 9126), whether its access
// tokens must be DPoP-bound and its proofs carry a server nonce (RFC 9449),
// and the fapi2 profile, which requires all of it. The members have the
// names of the client metadata that define them (RFC 7591 §2, RFC 9126 §6,
// RFC 9449 §5.2), except require_dpop_nonce and profile, which are this
// server's.

// Token endpoint authentication methods a credential may register.
const (
	authSecretBasic   = "client_secret_basic"
	authPrivateKeyJWT = "private_key_jwt"
	authNone          = "none"
)

// credentialSecurity are the settings members of POST .../credentials and
// PATCH .../credentials/{client_id}; a member left out keeps its value (a
// new credential has none of them).
type credentialSecurity struct {
	TokenEndpointAuthMethod string          `json:"token_endpoint_auth_method,omitempty"`
	JWKS                    json.RawMessage `json:"jwks,omitempty"`
	RequirePAR              *bool           `json:"require_pushed_authorization_requests,omitempty"`
	DPoPBound               *bool           `json:"dpop_bound_access_tokens,omitempty"`
	DPoPNonce               *bool           `json:"require_dpop_nonce,omitempty"`
	Profile                 *string         `json:"profile,omitempty"`
}

func (cs *credentialSecurity) empty() bool {
	return cs.TokenEndpointAuthMethod == "" && cs.JWKS == nil && cs.RequirePAR == nil && cs.DPoPBound == nil &&
		cs.DPoPNonce == nil && cs.Profile == nil
}

// securityView is what a credential shows of its settings.
type securityView struct {
	TokenEndpointAuthMethod string          `json:"token_endpoint_auth_method"`
	JWKS                    json.RawMessage `json:"jwks,omitempty"`
	RequirePAR              bool            `json:"require_pushed_authorization_requests"`
	DPoPBound               bool            `json:"dpop_bound_access_tokens"`
	DPoPNonce               bool            `json:"require_dpop_nonce"`
	Profile                 string          `json:"profile,omitempty"`
}

func viewOf(c *store.Client, set store.ClientSettings) securityView {
	v := securityView{JWKS: set.JWKS, RequirePAR: set.RequirePAR, DPoPBound: set.DPoPBound, DPoPNonce: set.DPoPNonce, Profile: set.Profile}
	switch {
	case c.Type == store.Public:
		v.TokenEndpointAuthMethod = authNone
	case len(set.JWKS) > 0:
		v.TokenEndpointAuthMethod = authPrivateKeyJWT
	default:
		v.TokenEndpointAuthMethod = authSecretBasic
	}
	return v
}

// withSecurity fills a credential's settings members.
func (s *Server) withSecurity(r *http.Request, c *store.Client, out *credential) error {
	set, err := s.st.ClientSettings(r.Context(), c.ID)
	if err != nil {
		return err
	}
	out.securityView = viewOf(c, set)
	return nil
}

// applySecurity checks the settings members of a body against the
// credential's type and its settings so far (set), and returns the new
// settings. A credential that authenticates with private_key_jwt has keys
// and no secret.
func applySecurity(typ store.ClientType, set store.ClientSettings, in credentialSecurity) (store.ClientSettings, error) {
	keyed := len(set.JWKS) > 0
	switch in.TokenEndpointAuthMethod {
	case "":
	case authPrivateKeyJWT:
		if typ != store.Confidential {
			return set, invalid("/token_endpoint_auth_method", "private_key_jwt is for a confidential credential; a public one authenticates with none")
		}
		keyed = true
	case authSecretBasic, "client_secret_post":
		if typ != store.Confidential {
			return set, invalid("/token_endpoint_auth_method", in.TokenEndpointAuthMethod+" is for a confidential credential; a public one authenticates with none")
		}
		if keyed {
			return set, invalid("/token_endpoint_auth_method", "the credential authenticates with private_key_jwt; create a new credential for a secret")
		}
	case authNone:
		if typ != store.Public {
			return set, invalid("/token_endpoint_auth_method", "none is for a public credential")
		}
	default:
		return set, invalid("/token_endpoint_auth_method", fmt.Sprintf("token_endpoint_auth_method %q is not one of client_secret_basic, client_secret_post, private_key_jwt, none", in.TokenEndpointAuthMethod))
	}
	if in.JWKS != nil {
		if !keyed {
			return set, invalid("/jwks", `jwks are the public keys of private_key_jwt: give "token_endpoint_auth_method": "private_key_jwt" with them`)
		}
		if err := checkJWKS(in.JWKS); err != nil {
			return set, err
		}
		set.JWKS = in.JWKS
	} else if keyed && len(set.JWKS) == 0 {
		return set, missing("/jwks", "private_key_jwt needs the credential's public keys: jwks, a JWK Set (RFC 7517 section 5) of EC P-256, RSA (2048 bits or more) or Ed25519 keys")
	}
	if in.RequirePAR != nil {
		set.RequirePAR = *in.RequirePAR
	}
	if in.DPoPBound != nil {
		set.DPoPBound = *in.DPoPBound
	}
	if in.DPoPNonce != nil {
		set.DPoPNonce = *in.DPoPNonce
	}
	if in.Profile != nil {
		switch *in.Profile {
		case "":
		case store.ProfileFAPI2:
			if len(set.JWKS) == 0 {
				return set, invalid("/profile", `the fapi2 profile authenticates with private_key_jwt only: give "token_endpoint_auth_method": "private_key_jwt" and jwks`)
			}
		default:
			return set, invalid("/profile", fmt.Sprintf("profile %q is not fapi2; omit it, or give \"\" to leave the profile", *in.Profile))
		}
		set.Profile = *in.Profile
	}
	return set, nil
}

// noSettings reports whether set is the zero value: a credential with no
// settings stores none.
func noSettings(set store.ClientSettings) bool {
	return len(set.JWKS) == 0 && !set.RequirePAR && !set.DPoPBound && !set.DPoPNonce && set.Profile == ""
}

// maxClientKeys bounds a credential's JWK Set.
const maxClientKeys = 10

// checkJWKS checks a credential's keys: a JWK Set (RFC 7517 §5) of 1 to 10
// public keys, each usable with an algorithm of FAPI 2.0 (ES256 on P-256,
// PS256 on RSA of at least 2048 bits, EdDSA on Ed25519), with an alg (if
// any) that fits it, and without a private part.
// CheckJWKS checks the public keys of a private_key_jwt credential by the
// dashboard's rules (docs/fapi.md, "Registered keys"), for clients
// registered in-process (authserver.Server.RegisterClient).
func CheckJWKS(raw json.RawMessage) error { return checkJWKS(raw) }

func checkJWKS(raw json.RawMessage) error {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return invalid("/jwks", "jwks is not a JWK Set (RFC 7517 section 5, {\"keys\": [...]}): "+err.Error())
	}
	if len(set.Keys) == 0 || len(set.Keys) > maxClientKeys {
		return invalid("/jwks/keys", fmt.Sprintf("jwks has %d keys; give 1 to %d", len(set.Keys), maxClientKeys))
	}
	for i, k := range set.Keys {
		field := fmt.Sprintf("/jwks/keys/%d", i)
		if !k.IsPublic() {
			return invalid(field, "key "+k.KeyID+" has its private part: register the public key only")
		}
		var fits string
		switch pk := k.Key.(type) {
		case *ecdsa.PublicKey:
			if pk.Curve != elliptic.P256() {
				return invalid(field, "an EC key must be on P-256 (ES256)")
			}
			fits = string(jose.ES256)
		case *rsa.PublicKey:
			if pk.N.BitLen() < 2048 {
				return invalid(field, fmt.Sprintf("an RSA key of %d bits is too short: FAPI 2.0 asks for 2048 bits or more", pk.N.BitLen()))
			}
			fits = string(jose.PS256)
		case ed25519.PublicKey:
			fits = string(jose.EdDSA)
		default:
			return invalid(field, fmt.Sprintf("key type %T is not an EC P-256, RSA or Ed25519 public key", k.Key))
		}
		if k.Algorithm != "" && k.Algorithm != fits {
			return invalid(field, fmt.Sprintf("alg %q does not fit the key: it signs %s (allowed: ES256, PS256, EdDSA)", k.Algorithm, fits))
		}
		if k.Use != "" && k.Use != "sig" {
			return invalid(field, fmt.Sprintf("use %q: a client assertion key has use sig, or none", k.Use))
		}
	}
	return nil
}
