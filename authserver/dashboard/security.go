package dashboard

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/origin"
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
	JWKSURI                 *string         `json:"jwks_uri,omitempty"`
	RequirePAR              *bool           `json:"require_pushed_authorization_requests,omitempty"`
	DPoPBound               *bool           `json:"dpop_bound_access_tokens,omitempty"`
	DPoPNonce               *bool           `json:"require_dpop_nonce,omitempty"`
	Profile                 *string         `json:"profile,omitempty"`
	// GrantManagementActionRequired: FAPI Grant Management §4.1
	// (docs/authserver.md, "Grant management").
	GrantManagementActionRequired *bool `json:"grant_management_action_required,omitempty"`
}

func (cs *credentialSecurity) empty() bool {
	return cs.TokenEndpointAuthMethod == "" && cs.JWKS == nil && cs.JWKSURI == nil && cs.RequirePAR == nil && cs.DPoPBound == nil &&
		cs.DPoPNonce == nil && cs.Profile == nil && cs.GrantManagementActionRequired == nil
}

// securityView is what a credential shows of its settings.
type securityView struct {
	TokenEndpointAuthMethod       string          `json:"token_endpoint_auth_method"`
	JWKS                          json.RawMessage `json:"jwks,omitempty"`
	JWKSURI                       string          `json:"jwks_uri,omitempty"`
	RequirePAR                    bool            `json:"require_pushed_authorization_requests"`
	DPoPBound                     bool            `json:"dpop_bound_access_tokens"`
	DPoPNonce                     bool            `json:"require_dpop_nonce"`
	Profile                       string          `json:"profile,omitempty"`
	GrantManagementActionRequired bool            `json:"grant_management_action_required"`
}

func viewOf(c *store.Client, set store.ClientSettings) securityView {
	v := securityView{JWKS: set.JWKS, JWKSURI: set.JWKSURI, RequirePAR: set.RequirePAR, DPoPBound: set.DPoPBound, DPoPNonce: set.DPoPNonce, Profile: set.Profile,
		GrantManagementActionRequired: set.GrantManagementActionRequired}
	switch {
	case c.Type == store.Public:
		v.TokenEndpointAuthMethod = authNone
	case set.Keyed():
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
// settings. A credential that authenticates with private_key_jwt has keys,
// inline (jwks) or at a jwks_uri, and no secret; giving one replaces the
// other. local accepts a jwks_uri on a loopback or private host
// (Config.LocalJWKSURI).
func applySecurity(typ store.ClientType, set store.ClientSettings, in credentialSecurity, local bool) (store.ClientSettings, error) {
	keyed, err := authMethod(typ, set.Keyed(), in.TokenEndpointAuthMethod)
	if err != nil {
		return set, err
	}
	if set, err = applyKeys(set, in, keyed, local); err != nil {
		return set, err
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
	if in.GrantManagementActionRequired != nil {
		set.GrantManagementActionRequired = *in.GrantManagementActionRequired
	}
	return applyProfile(set, in.Profile)
}

// authMethod checks a token_endpoint_auth_method (empty: unchanged)
// against the credential's type and whether it has keys so far, and
// reports whether the credential authenticates with private_key_jwt.
func authMethod(typ store.ClientType, keyed bool, method string) (bool, error) {
	switch method {
	case "":
	case authPrivateKeyJWT:
		if typ != store.Confidential {
			return keyed, invalid("/token_endpoint_auth_method", "private_key_jwt is for a confidential credential; a public one authenticates with none")
		}
		keyed = true
	case authSecretBasic, "client_secret_post":
		if typ != store.Confidential {
			return keyed, invalid("/token_endpoint_auth_method", method+" is for a confidential credential; a public one authenticates with none")
		}
		if keyed {
			return keyed, invalid("/token_endpoint_auth_method", "the credential authenticates with private_key_jwt; create a new credential for a secret")
		}
	case authNone:
		if typ != store.Public {
			return keyed, invalid("/token_endpoint_auth_method", "none is for a public credential")
		}
	default:
		return keyed, invalid("/token_endpoint_auth_method", fmt.Sprintf("token_endpoint_auth_method %q is not one of client_secret_basic, client_secret_post, private_key_jwt, none", method))
	}
	return keyed, nil
}

// applyKeys applies jwks or jwks_uri, which go with private_key_jwt
// (keyed) only, one replacing the other; a credential that turns to
// private_key_jwt must give one of them.
func applyKeys(set store.ClientSettings, in credentialSecurity, keyed, local bool) (store.ClientSettings, error) {
	switch {
	case in.JWKS != nil && in.JWKSURI != nil:
		return set, invalid("/jwks_uri", "give jwks (the keys themselves) or jwks_uri (where they are published), not both (RFC 7591 section 2)")
	case (in.JWKS != nil || in.JWKSURI != nil) && !keyed:
		field := "/jwks"
		if in.JWKSURI != nil {
			field = "/jwks_uri"
		}
		return set, invalid(field, field[1:]+` names the public keys of private_key_jwt: give "token_endpoint_auth_method": "private_key_jwt" with it`)
	case in.JWKS != nil:
		if err := checkJWKS(in.JWKS); err != nil {
			return set, err
		}
		set.JWKS, set.JWKSURI = in.JWKS, ""
	case in.JWKSURI != nil:
		if err := checkJWKSURI(*in.JWKSURI, local); err != nil {
			return set, err
		}
		set.JWKS, set.JWKSURI = nil, *in.JWKSURI
	case keyed && !set.Keyed():
		return set, missing("/jwks", "private_key_jwt needs the credential's public keys: jwks, a JWK Set (RFC 7517 section 5) of EC P-256, RSA (2048 bits or more) or Ed25519 keys, or jwks_uri, the https URL where the client publishes that set")
	}
	return set, nil
}

// applyProfile applies a profile (nil: unchanged; "": none); fapi2 needs
// keys.
func applyProfile(set store.ClientSettings, profile *string) (store.ClientSettings, error) {
	if profile == nil {
		return set, nil
	}
	switch *profile {
	case "":
	case store.ProfileFAPI2:
		if !set.Keyed() {
			return set, invalid("/profile", `the fapi2 profile authenticates with private_key_jwt only: give "token_endpoint_auth_method": "private_key_jwt" and jwks or jwks_uri`)
		}
	default:
		return set, invalid("/profile", fmt.Sprintf("profile %q is not fapi2; omit it, or give \"\" to leave the profile", *profile))
	}
	set.Profile = *profile
	return set, nil
}

// noSettings reports whether set is the zero value: a credential with no
// settings stores none.
func noSettings(set store.ClientSettings) bool {
	return !set.Keyed() && !set.RequirePAR && !set.DPoPBound && !set.DPoPNonce && set.Profile == "" && !set.GrantManagementActionRequired
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
		if _, oct := k.Key.([]byte); oct {
			return invalid(field, "key "+k.KeyID+" is a symmetric (oct) key, a shared secret: private_key_jwt takes public keys only (EC P-256, RSA of 2048 bits or more, Ed25519)")
		}
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
		if k.Algorithm != "" && !slices.Contains([]string{string(jose.ES256), string(jose.PS256), string(jose.EdDSA)}, k.Algorithm) {
			return invalid(field, fmt.Sprintf("alg %q is not allowed: FAPI 2.0 allows ES256, PS256 and EdDSA; this key signs %s, so give that alg or none", k.Algorithm, fits))
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

// maxJWKSURI bounds the length of a jwks_uri.
const maxJWKSURI = 2048

// checkJWKSURI checks a credential's jwks_uri (RFC 7591 §2): an absolute
// https URL without user name or fragment, on a public host by the
// address policy of package origin (origin.HostRule: no loopback,
// private, link-local or other special-purpose address in any spelling, no
// loopback, single-label or local-network name). With local
// (Config.LocalJWKSURI: development and tests) any host is accepted, and
// http on a loopback host, as for redirect URIs. The host is read as a
// browser reads it (origin.ParseURL: 127.1 and 0177.0.0.1 are 127.0.0.1)
// and must be written so, since the server fetches the URL with Go's
// parser, which reads such hosts as names. The authorization server's
// dialer applies the same policy to each address the name resolves to,
// so that a registration cannot make it call the services of its own
// network, even through a name that changes what it resolves to.
func checkJWKSURI(raw string, local bool) *Error {
	const field = "/jwks_uri"
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return invalid(field, `jwks_uri is empty: give the https URL of the client's JWK Set, or jwks`)
	case len(raw) > maxJWKSURI:
		return invalid(field, fmt.Sprintf("jwks_uri is %d bytes long; at most %d", len(raw), maxJWKSURI))
	case err != nil || !u.IsAbs() || u.Host == "":
		return invalid(field, fmt.Sprintf("jwks_uri %q is not an absolute URL: give https://host/path of the client's JWK Set", raw))
	case u.User != nil:
		return invalid(field, "jwks_uri has no user name or password: the keys are public, fetched without credentials")
	case u.Fragment != "" || strings.HasSuffix(raw, "#"):
		return invalid(field, "jwks_uri has no fragment")
	case u.Scheme != "https" && u.Scheme != "http":
		return invalid(field, fmt.Sprintf("jwks_uri's scheme is %q: use https", u.Scheme))
	}
	w, err := origin.ParseURL(raw)
	if err != nil {
		return invalid(field, fmt.Sprintf("jwks_uri %q is not a URL a browser reads the same way: %v", raw, err))
	}
	if !strings.EqualFold(u.Host, w.Host) {
		return invalid(field, fmt.Sprintf("jwks_uri's host %q is read as %q by a browser's URL parser and as a name by others: write the host as %q", u.Host, w.Host, w.Host))
	}
	loopback := origin.Of(w).IsLoopback()
	switch {
	case u.Scheme == "http" && !loopback:
		return invalid(field, fmt.Sprintf("jwks_uri %q is plain http: keys fetched without TLS could be replaced on the way; use https", raw))
	case u.Scheme == "http" && !local:
		return invalid(field, fmt.Sprintf("jwks_uri %q is on loopback: this server fetches loopback and private hosts only in development (an issuer on loopback); publish the keys at a public https URL", raw))
	case local:
		return nil
	}
	if rule := origin.HostRule(w.Hostname()); rule != "" {
		return invalid(field, fmt.Sprintf("jwks_uri's host %q is not public: %s. This server fetches only public hosts outside development; publish the keys at a public https URL", w.Hostname(), rule))
	}
	return nil
}
