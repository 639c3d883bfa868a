package oauth

import (
	"encoding/json"
	"net/http"

	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/catalog"
)

// buildMetadata renders the discovery document once: OpenID Connect
// Discovery 1.0 §3 and RFC 8414 §2 share their members, so one document
// serves both well-known URLs (routes).
func (s *Server) buildMetadata(c *catalog.Catalog) ([]byte, error) {
	var scopes, types []string
	for _, sc := range c.Scopes() {
		scopes = append(scopes, sc.Name)
	}
	for _, t := range c.Types() {
		types = append(types, t.Name)
	}
	md := map[string]any{
		"issuer":                                        s.cfg.Issuer,
		"authorization_endpoint":                        s.endpoint(pathAuthorize),
		"token_endpoint":                                s.endpoint(pathToken),
		"userinfo_endpoint":                             s.endpoint(pathUserinfo),
		"jwks_uri":                                      s.endpoint(pathJWKS),
		"introspection_endpoint":                        s.endpoint(pathIntrospect),
		"revocation_endpoint":                           s.endpoint(pathRevoke),
		"scopes_supported":                              scopes,
		"authorization_details_types_supported":         types,
		"response_types_supported":                      []string{"code"},
		"response_modes_supported":                      []string{"query"},
		"grant_types_supported":                         []string{"authorization_code", "refresh_token"},
		"subject_types_supported":                       []string{"public"},
		"id_token_signing_alg_values_supported":         store.IDTokenAlgs,
		"code_challenge_methods_supported":              []string{"S256"},
		"token_endpoint_auth_methods_supported":         []string{"client_secret_basic", "client_secret_post", "none"},
		"introspection_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported":    []string{"client_secret_basic", "client_secret_post", "none"},
		"claims_supported": []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "azp", "name", "given_name",
			"family_name", "email", "email_verified", "phone_number", "phone_number_verified", "address"},
		"authorization_response_iss_parameter_supported": true,
		"request_parameter_supported":                    false,
		"request_uri_parameter_supported":                false,
		// RFC 9068 §2.1 access tokens, and where the grant of one is read.
		"access_token_signing_alg_values_supported": []string{"ES256"},
		"grant_endpoint":          s.GrantEndpoint(),
		"native_consent_endpoint": s.NativeEndpoint(),
	}
	s.fapiMetadata(md)
	s.grantMetadata(md)
	return json.Marshal(md)
}

// handleMetadata serves the discovery documents.
func (s *Server) handleMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	w.Write(*s.metadata.Load())
}

// handleJWKS serves the public keys (RFC 7517 §5).
func (s *Server) handleJWKS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "max-age=300")
	w.Write(s.keys.Load().jwks)
}
