package dashboard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/miniapp-host/miniapp-host/authserver/audit"
	"github.com/miniapp-host/miniapp-host/authserver/store"
	"github.com/miniapp-host/miniapp-host/origin"
)

// Projects and their OAuth credentials (docs/service.md §2.7): a project is created
// with a name only; credentials are added afterwards, each a client_id and,
// for a confidential client, a client_secret shown once.

// createdProject is the answer to POST /api/projects: the key is shown
// this once and kept only as a hash.
type createdProject struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Key  string `json:"key"`
}

// handleCreateProject creates a project. Creating one needs no credential;
// everything a project can then do on its own is inert until the operator
// approves it.
func (s *Server) handleCreateProject(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string `json:"name"`
	}
	if err := decode(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := checkName("/name", body.Name); err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := s.newID("prj_", 9)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	key, err := s.newID("mhk_", 32)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.st.CreateProject(r.Context(), store.Project{ID: id, Name: body.Name}, store.Hash(key)); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, createdProject{ID: id, Name: body.Name, Key: key})
}

func checkName(field, name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return missing(field, "a name is required")
	case utf8.RuneCountInString(name) > 100 || !utf8.ValidString(name):
		return invalid(field, "a name is valid UTF-8 of at most 100 characters")
	}
	return nil
}

// credential is a credential as listed: never its secret.
type credential struct {
	ClientID       string   `json:"client_id"`
	ClientSecret   string   `json:"client_secret,omitempty"` // only when created or rotated
	ClientType     string   `json:"client_type"`
	Name           string   `json:"name"`
	RedirectURIs   []string `json:"redirect_uris"`
	AllowedOrigins []string `json:"allowed_origins"`
	Roles          []string `json:"roles,omitempty"`
	// IDTokenAlg signs the credential's ID tokens (OpenID Connect Dynamic
	// Client Registration 1.0 §2).
	IDTokenAlg string `json:"id_token_signed_response_alg"`
	// The FAPI 2.0 settings (security.go).
	securityView
}

func credentialOf(c *store.Client) credential {
	cfg := clientConfigOf(c)
	alg := c.IDTokenAlg
	if alg == "" {
		alg = store.DefaultIDTokenAlg
	}
	return credential{ClientID: c.ID, ClientType: cfg.ClientType, Name: c.Name, RedirectURIs: cfg.RedirectURIs,
		AllowedOrigins: cfg.AllowedOrigins, Roles: c.Roles, IDTokenAlg: alg}
}

// projectView is the answer to GET /api/projects/{project_id}.
type projectView struct {
	ID          string              `json:"id"`
	Name        string              `json:"name"`
	Credentials []credential        `json:"credentials"`
	Policy      store.Policy        `json:"approved_policy"`
	Submissions []*store.Submission `json:"submissions"`
}

// handleGetProject shows a project with its credentials, approved policy
// and submissions with their review outcome.
func (s *Server) handleGetProject(w http.ResponseWriter, r *http.Request, p store.Project) {
	creds, err := s.credentials(r, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	pol, err := s.st.ApprovedPolicy(r.Context(), p.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	subs, err := s.st.Submissions(r.Context(), store.SubmissionFilter{ProjectID: p.ID})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Empty lists are [], never null, for every reader of the answer.
	if pol.Scopes == nil {
		pol.Scopes = []string{}
	}
	if pol.Types == nil {
		pol.Types = []string{}
	}
	writeJSON(w, http.StatusOK, projectView{ID: p.ID, Name: p.Name, Credentials: creds, Policy: pol, Submissions: subs})
}

func (s *Server) credentials(r *http.Request, p store.Project) ([]credential, error) {
	cs, err := s.st.ProjectClients(r.Context(), p.ID)
	if err != nil {
		return nil, err
	}
	out := make([]credential, 0, len(cs))
	for _, c := range cs {
		cred := credentialOf(c)
		if err := s.withSecurity(r, c, &cred); err != nil {
			return nil, err
		}
		out = append(out, cred)
	}
	return out, nil
}

// handleListCredentials lists a project's credentials.
func (s *Server) handleListCredentials(w http.ResponseWriter, r *http.Request, p store.Project) {
	creds, err := s.credentials(r, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Credentials []credential `json:"credentials"`
	}{creds})
}

// newCredential is the body of POST .../credentials.
type newCredential struct {
	// Type is "confidential" (a server-side app, gets a secret) or "public".
	Type           string   `json:"type"`
	Name           string   `json:"name"`
	RedirectURIs   []string `json:"redirect_uris"`
	AllowedOrigins []string `json:"allowed_origins"`
	// IDTokenAlg is id_token_signed_response_alg (OpenID Connect Dynamic
	// Client Registration 1.0 §2): RS256 when omitted, or ES256 or EdDSA.
	IDTokenAlg string `json:"id_token_signed_response_alg"`
	// The FAPI 2.0 settings (security.go).
	credentialSecurity
}

// handleAddCredential adds an OAuth credential to a project.
func (s *Server) handleAddCredential(w http.ResponseWriter, r *http.Request, p store.Project) {
	var body newCredential
	if err := decode(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := checkCredential(&body); err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := s.newID("cli_", 12)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c := &store.Client{ID: id, ProjectID: p.ID, Name: body.Name, Type: store.ClientType(body.Type),
		RedirectURIs: body.RedirectURIs, AllowedOrigins: body.AllowedOrigins, IDTokenAlg: body.IDTokenAlg}
	if c.Name == "" {
		c.Name = p.Name
	}
	set, err := applySecurity(c.Type, store.ClientSettings{}, body.credentialSecurity, s.cfg.LocalJWKSURI)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var secret string
	if c.Type == store.Confidential {
		if !set.Keyed() { // private_key_jwt has keys, no secret
			if secret, err = s.newID("", 32); err != nil {
				s.writeError(w, r, err)
				return
			}
			c.SecretHash = store.Hash(secret)
		}
		// A project whose Resource Server was approved reads grants with
		// its confidential credentials (GET {base_url}/authorization).
		if res, err := s.approvedResource(r, p.ID); err != nil {
			s.writeError(w, r, err)
			return
		} else if res != "" {
			c.Roles, c.Resource = []string{store.RoleResourceServer}, res
		}
	}
	// The settings first: the client never exists without them.
	if !noSettings(set) {
		if err := s.st.PutClientSettings(r.Context(), c.ID, set); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if err := s.st.AddClient(r.Context(), c); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.cfg.InvalidateClient(c.ID)
	out := credentialOf(c)
	out.ClientSecret = secret
	out.securityView = viewOf(c, set)
	writeJSON(w, http.StatusCreated, out)
}

// checkCredential checks a new credential's type and addresses with the
// one origin policy: each allowed origin must be an origin (origin.Parse),
// each redirect URI an absolute http(s) URL without fragment, http only on
// a loopback host (RFC 8252 §7.3, RFC 9700 §4.1.1). Redirect URIs are kept
// byte for byte, because the authorization endpoint matches them exactly.
func checkCredential(c *newCredential) error {
	switch c.Type {
	case "":
		return missing("/type", `type is "confidential" (an app that runs on a server) or "public"`)
	case string(store.Confidential), string(store.Public):
	default:
		return invalid("/type", fmt.Sprintf(`type %q is neither "confidential" nor "public"`, c.Type))
	}
	if c.Name != "" {
		if err := checkName("/name", c.Name); err != nil {
			return err
		}
	}
	if c.IDTokenAlg != "" && !slices.Contains(store.IDTokenAlgs, c.IDTokenAlg) {
		return invalid("/id_token_signed_response_alg", fmt.Sprintf("id_token_signed_response_alg %q is not one of %s; omit it for %s",
			c.IDTokenAlg, strings.Join(store.IDTokenAlgs, ", "), store.DefaultIDTokenAlg))
	}
	return checkAddresses(c.RedirectURIs, c.AllowedOrigins)
}

// maxAddresses caps a credential's redirect URIs, and its allowed origins.
const maxAddresses = 20

// checkAddresses checks a credential's redirect URIs and allowed origins,
// when it is added and when it is updated: each allowed origin must be an
// origin (origin.Parse), each redirect URI pass checkRedirectURI, at most
// maxAddresses of each. The error names the member and the index.
func checkAddresses(redirectURIs, allowedOrigins []string) error {
	// No redirect URI is fine: a Resource Server's credential only reads
	// grants and never asks for an authorization.
	if len(redirectURIs) > maxAddresses {
		return invalid("/redirect_uris", fmt.Sprintf("at most %d redirect URIs, not %d", maxAddresses, len(redirectURIs)))
	}
	if len(allowedOrigins) > maxAddresses {
		return invalid("/allowed_origins", fmt.Sprintf("at most %d allowed origins, not %d", maxAddresses, len(allowedOrigins)))
	}
	for i, raw := range redirectURIs {
		if err := checkRedirectURI(raw); err != nil {
			return invalid(fmt.Sprintf("/redirect_uris/%d", i), fmt.Sprintf("redirect URI %q: %s", raw, err))
		}
	}
	for i, raw := range allowedOrigins {
		if _, err := origin.Parse(raw); err != nil {
			return invalid(fmt.Sprintf("/allowed_origins/%d", i), fmt.Sprintf("allowed origin %q: %v", raw, err))
		}
	}
	return nil
}

// CheckRedirectURI is checkRedirectURI for the server's other ways of
// registering a client (authserver.RegisterClient) and its start-up check
// of the clients already registered (RedirectURIWarnings).
func CheckRedirectURI(raw string) error { return checkRedirectURI(raw) }

// RedirectURIWarnings checks the redirect URIs of registered clients with
// checkRedirectURI: those registered before the check refused what they
// hold, or written to the database directly. The authorization endpoint
// still matches them exactly, so each is named, with its client and why,
// for the operator to register again as the message says.
func RedirectURIWarnings(clients []*store.Client) []string {
	var out []string
	for _, c := range clients {
		for _, raw := range c.RedirectURIs {
			if err := checkRedirectURI(raw); err != nil {
				out = append(out, fmt.Sprintf("client %s (project %s): redirect URI %q: %v", c.ID, c.ProjectID, raw, err))
			}
		}
	}
	return out
}

// checkRedirectURI is the one check of a redirect URI a credential
// registers (create, and any later change of its redirect URIs): an
// absolute https URL, or http on a loopback host (RFC 8252 §7.3, RFC 9700
// §4.1.1), without fragment (RFC 6749 §3.1.2) or userinfo, written exactly
// as a browser serializes it (origin.ParseURL, the WHATWG parser) and read
// the same by Go's net/url. The authorization endpoint compares redirect
// URIs character for character (RFC 9700 §4.1.3), and the host's checks and
// the webview each parse the URL: a string that two parsers read
// differently (a backslash, a numeric IPv4 form, an upper-case host, a dot
// segment) could send a code somewhere other than where a reader of the
// registration believes. So what is accepted is canonical, and what is
// stored is what was accepted; a refusal says how to write it.
func checkRedirectURI(raw string) error {
	if err := redirectURICharacters(raw); err != nil {
		return err
	}
	u, err := origin.ParseURL(raw)
	if err != nil {
		return fmt.Errorf("not an absolute URL: %w", err)
	}
	g, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("the Go URL parser refuses it (%v), where a browser reads %q", err, u.String())
	}
	if u.User != nil || g.User != nil {
		return errors.New("a redirect URI has no user name or password (userinfo): write the host alone")
	}
	if err := redirectURIScheme(u); err != nil {
		return err
	}
	return redirectURICanonical(raw, u, g)
}

// redirectURICharacters refuses what a browser and Go's URL parser read
// differently before either parses: a fragment, a backslash, spaces and
// control characters.
func redirectURICharacters(raw string) error {
	if strings.Contains(raw, "#") {
		return errors.New("a redirect URI has no fragment (RFC 6749 §3.1.2)")
	}
	if strings.Contains(raw, "\\") {
		return errors.New(`a redirect URI has no backslash: a browser reads "\" as "/" where Go's URL parser keeps it, so the two would disagree on the host or the path`)
	}
	if i := strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return fmt.Errorf("a redirect URI has no spaces or control characters (one at byte %d): a browser removes or trims them, Go's URL parser does not", i)
	}
	return nil
}

// redirectURIScheme allows https, and http on a loopback host only
// (RFC 8252 §7.3).
func redirectURIScheme(u *url.URL) error {
	o := origin.Of(u)
	switch {
	case o.Scheme == "https":
	case o.Scheme == "http" && o.IsLoopback():
	case o.Scheme == "http":
		return errors.New("http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https")
	default:
		return fmt.Errorf("the scheme must be https (or http on loopback), not %q", u.Scheme)
	}
	return nil
}

// redirectURICanonical checks that raw is written as a browser serializes
// it (u, the WHATWG reading) and that Go's reading (g) agrees, saying
// how to write it otherwise.
func redirectURICanonical(raw string, u, g *url.URL) error {
	canonical := u.String()
	browserHost, goHost := u.Hostname(), g.Hostname()
	switch {
	case goHost != browserHost && net.ParseIP(browserHost) != nil && !strings.EqualFold(goHost, browserHost):
		return fmt.Errorf("the host %q is a numeric IPv4 form (decimal, hexadecimal, octal or shortened) that a browser reads as %s; write %q",
			goHost, browserHost, canonical)
	case goHost != browserHost:
		return fmt.Errorf("a browser reads the host %q as %q (lower case, IDNA, percent-decoding); write %q", goHost, browserHost, canonical)
	case g.Port() != u.Port():
		port := strconv.Quote(u.Port())
		if u.Port() == "" {
			port = "the scheme's default, written without a port"
		}
		return fmt.Errorf("a browser reads the port %q as %s; write %q", g.Port(), port, canonical)
	case raw != canonical:
		return fmt.Errorf("write %q, as a browser reads it (a lower-case scheme, a path of at least \"/\", no dot segments, "+
			"percent-encoding where it encodes): the authorization endpoint compares redirect URIs character for character", canonical)
	case g.Scheme != u.Scheme || g.Host != u.Host || g.EscapedPath() != u.EscapedPath() || g.RawQuery != u.RawQuery:
		return fmt.Errorf("a browser and the Go URL parser read %q differently; write it more plainly", raw)
	}
	return nil
}

// projectClient returns a project's client named in the path; a client of
// another project is not found, so that a key reaches only its own.
func (s *Server) projectClient(r *http.Request, p store.Project) (*store.Client, error) {
	c, err := s.st.Client(r.Context(), r.PathValue("client_id"))
	if errors.Is(err, store.ErrNotFound) || (err == nil && c.ProjectID != p.ID) {
		return nil, &Error{Code: codeCredentialNotFound, Field: "client_id", Message: "project " + p.ID + " has no credential " + r.PathValue("client_id")}
	}
	return c, err
}

// handleRotateSecret gives a confidential credential a new secret, shown
// once; the old secret stops working at once.
func (s *Server) handleRotateSecret(w http.ResponseWriter, r *http.Request, p store.Project) {
	c, err := s.projectClient(r, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if c.Type != store.Confidential {
		s.writeError(w, r, &Error{Code: codeNotConfidential, Field: "client_id", Message: "a public client has no secret to rotate"})
		return
	}
	out := credentialOf(c)
	if err := s.withSecurity(r, c, &out); err != nil {
		s.writeError(w, r, err)
		return
	}
	if out.TokenEndpointAuthMethod == authPrivateKeyJWT {
		s.writeError(w, r, &Error{Code: codeNotConfidential, Field: "client_id",
			Message: "the credential authenticates with private_key_jwt and has no secret; change its keys with PATCH and jwks"})
		return
	}
	secret, err := s.newID("", 32)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.st.SetClientSecret(r.Context(), c.ID, store.Hash(secret)); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.cfg.InvalidateClient(c.ID)
	out.ClientSecret = secret
	writeJSON(w, http.StatusOK, out)
}

// credentialUpdate is the body of PATCH .../credentials/{client_id}: each
// member given replaces the credential's list; a member left out keeps it.
type credentialUpdate struct {
	RedirectURIs   *[]string `json:"redirect_uris"`
	AllowedOrigins *[]string `json:"allowed_origins"`
	// The FAPI 2.0 settings (security.go).
	credentialSecurity
}

// handleUpdateCredential replaces a credential's redirect URIs or allowed
// origins, checked exactly as when a credential is added (checkAddresses).
// The change is announced like every change of a client (the OAuth
// server's client cache here, and those of other instances on a shared
// database), so the next authorization request and the next CORS check
// see it. Pending authorization requests are checked again against it
// when they are decided on a shared database.
func (s *Server) handleUpdateCredential(w http.ResponseWriter, r *http.Request, p store.Project) {
	c, err := s.projectClient(r, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var body credentialUpdate
	if err := decode(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	addresses := body.RedirectURIs != nil || body.AllowedOrigins != nil
	if !addresses && body.credentialSecurity.empty() {
		s.writeError(w, r, missing("/redirect_uris", "give redirect_uris, allowed_origins, a setting (docs/fapi.md) or several: each replaces the credential's"))
		return
	}
	if body.RedirectURIs != nil {
		c.RedirectURIs = *body.RedirectURIs
	}
	if body.AllowedOrigins != nil {
		c.AllowedOrigins = *body.AllowedOrigins
	}
	if err := checkAddresses(c.RedirectURIs, c.AllowedOrigins); err != nil {
		s.writeError(w, r, err)
		return
	}
	set, err := s.st.ClientSettings(r.Context(), c.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !body.credentialSecurity.empty() {
		keyed := set.Keyed()
		if set, err = applySecurity(c.Type, set, body.credentialSecurity, s.cfg.LocalJWKSURI); err == nil && !keyed && set.Keyed() {
			err = invalid("/token_endpoint_auth_method", "the credential authenticates with a secret; create a new credential for private_key_jwt")
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if err := s.st.PutClientSettings(r.Context(), c.ID, set); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if addresses {
		err = s.st.SetClientAddresses(r.Context(), c.ID, c.RedirectURIs, c.AllowedOrigins)
		if errors.Is(err, store.ErrNotFound) {
			err = &Error{Code: codeCredentialNotFound, Field: "client_id", Message: "project " + p.ID + " has no credential " + c.ID}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.cfg.InvalidateClient(c.ID)
	out := credentialOf(c)
	out.securityView = viewOf(c, set)
	writeJSON(w, http.StatusOK, out)
}

// handleRemoveCredential removes a credential and revokes its grants.
func (s *Server) handleRemoveCredential(w http.ResponseWriter, r *http.Request, p store.Project) {
	c, err := s.projectClient(r, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.st.RemoveClient(r.Context(), c.ID, s.cfg.Now()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.cfg.InvalidateClient(c.ID)
	s.cfg.Events.Record(r.Context(), audit.Event{Kind: audit.GrantRevoked, ClientID: c.ID, Actor: audit.Project(p.ID),
		Outcome: audit.OutcomeOK, Detail: map[string]string{"via": "credential_removed"}})
	w.WriteHeader(http.StatusNoContent)
}
