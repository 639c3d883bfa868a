package providers

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/miniapp-host/miniapp-host/authserver/httplimit"
	"github.com/miniapp-host/miniapp-host/catalog"
)

// Config configures one example provider.
type Config struct {
	// Catalog names the types the provider's endpoints require.
	Catalog *catalog.Catalog
	// Grants reads the grant behind an access token.
	Grants GrantSource
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives internal errors, which are never shown to callers; nil
	// discards them.
	Log *slog.Logger

	// Faults, on a development server only, injects QA's faults
	// (faults.go, docs/dashboard.md "Faults") once the grant is read; nil
	// injects none.
	Faults FaultHook
}

// route is one endpoint: method and path below the provider's resource
// address, and the type key and action the grant must hold.
type route struct {
	method, path string
	typeKey      string
	action       string
	serve        func(w http.ResponseWriter, r *http.Request, org string)
}

// Server is one example provider.
type Server struct {
	cfg    Config
	prefix string // the path of the provider's resource address
	routes []route

	mu        sync.Mutex // guards below
	keys      map[string]*ecdsa.PrivateKey
	documents map[string][]document
}

type document struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Amount    string `json:"amount"`
	Currency  string `json:"currency"`
	CreatedAt string `json:"created_at"`
}

// NewSigning returns the signing provider, served below the path of the
// catalog's signing resource address.
func NewSigning(cfg Config) (*Server, error) {
	s, err := newServer(cfg, cfg.Catalog.Endpoints().SigningBaseURL)
	if err != nil {
		return nil, err
	}
	s.routes = []route{
		// POST {signing_base_url}/company-key: create the Company signing key.
		{"POST", "/company-key", "company-key", "create", s.createKey},
		// POST {signing_base_url}/signatures: sign with the Company key.
		{"POST", "/signatures", "signatures", "create", s.sign},
		// GET {signing_base_url}/signing-key: key readiness and public key.
		{"GET", "/signing-key", "signing-key", "read", s.readKey},
	}
	return s, nil
}

// NewInvoicing returns the invoicing provider, served below the path of the
// catalog's invoicing resource address.
func NewInvoicing(cfg Config) (*Server, error) {
	s, err := newServer(cfg, cfg.Catalog.Endpoints().InvoicingBaseURL)
	if err != nil {
		return nil, err
	}
	s.routes = []route{
		// GET {invoicing_base_url}/documents: list the Company's documents.
		{"GET", "/documents", "documents", "read", s.listDocuments},
		// POST {invoicing_base_url}/documents: create a document.
		{"POST", "/documents", "documents", "create", s.createDocument},
	}
	return s, nil
}

func newServer(cfg Config, resource string) (*Server, error) {
	if cfg.Catalog == nil || cfg.Grants == nil {
		return nil, errors.New("providers: Config needs a Catalog and Grants")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	u, err := url.Parse(resource)
	if err != nil {
		return nil, fmt.Errorf("providers: resource address: %w", err)
	}
	return &Server{cfg: cfg, prefix: strings.TrimSuffix(u.Path, "/"), keys: map[string]*ecdsa.PrivateKey{}, documents: map[string][]document{}}, nil
}

// ServeHTTP routes a request and applies docs/service.md §5.7 before any endpoint runs.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.routeOf(w, r)
	if !ok {
		return
	}
	scheme, tok, ok := presented(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer, DPoP algs="`+dpopAlgs+`"`)
		writeError(w, http.StatusUnauthorized, "missing_token", "send Authorization: Bearer <access token>, or DPoP <access token> with a DPoP proof")
		return
	}
	var g *Grant
	var err error
	if scheme == "DPoP" {
		g, err = s.dpopGrant(r, tok)
	} else {
		g, err = s.cfg.Grants.Grant(r.Context(), tok)
	}
	if err != nil {
		s.writeGrantRefusal(w, err)
		return
	}
	if s.cfg.Faults != nil {
		in, done := s.cfg.Faults(w, r, tokenClient(tok), g.Subject)
		if done {
			return
		}
		if in != nil {
			writeInjected(w, in)
			return
		}
	}
	typ, _ := s.cfg.Catalog.TypeByKey(rt.typeKey)
	if !g.allows(typ.Name, rt.action) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope"`)
		writeError(w, http.StatusForbidden, "insufficient_authorization",
			fmt.Sprintf("the grant has no authorization_details of type %q with action %q", typ.Name, rt.action))
		return
	}
	if g.OrgID == nil || *g.OrgID == "" {
		writeError(w, http.StatusForbidden, "insufficient_authorization", "the grant names no Company (org_id)")
		return
	}
	rt.serve(w, r, *g.OrgID)
}

// routeOf returns the request's route, or answers 404 for a path no
// route has and 405, with Allow, for a method its routes do not take.
func (s *Server) routeOf(w http.ResponseWriter, r *http.Request) (*route, bool) {
	path, ok := strings.CutPrefix(r.URL.Path, s.prefix)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint")
		return nil, false
	}
	var rt *route
	allowed := []string{}
	for i := range s.routes {
		if s.routes[i].path == path {
			allowed = append(allowed, s.routes[i].method)
			if s.routes[i].method == r.Method {
				rt = &s.routes[i]
			}
		}
	}
	switch {
	case len(allowed) == 0:
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint")
		return nil, false
	case rt == nil:
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use "+strings.Join(allowed, " or "))
		return nil, false
	}
	return rt, true
}

// writeGrantRefusal answers a grant that could not be read. A refusal
// about the caller's token (unknown, expired, revoked, or meant for
// another resource) is the caller's 401 invalid_token (RFC 6750 §3.1), or
// its DPoP refusal (RFC 9449); only the provider's own failure to read the
// grant (its credential refused, the service down or failing) is 502.
func (s *Server) writeGrantRefusal(w http.ResponseWriter, err error) {
	var de *dpopError
	if errors.As(err, &de) {
		dpopRefusal(w, de.code, de.desc, "")
		return
	}
	var ge *GrantError
	if errors.As(err, &ge) && ge.dpop() {
		desc := ge.Message
		if desc == "" {
			desc = "the access token or its DPoP proof was refused (RFC 9449)"
		}
		dpopRefusal(w, ge.Code, desc, ge.Nonce)
		return
	}
	if errors.As(err, &ge) {
		if desc := ge.tokenProblem(); desc != "" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="`+desc+`"`)
			writeError(w, http.StatusUnauthorized, "invalid_token", desc)
			return
		}
	}
	s.cfg.Log.Error("reading the grant", "err", err)
	writeError(w, http.StatusBadGateway, "grant_unavailable", "the provider could not read the grant from the service")
}

// presented returns the scheme (Bearer or DPoP) and the access token of
// the request's Authorization header.
func presented(r *http.Request) (scheme, tok string, ok bool) {
	scheme, tok, ok = strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	switch {
	case !ok || tok == "":
		return "", "", false
	case strings.EqualFold(scheme, "Bearer"):
		return "Bearer", tok, true
	case strings.EqualFold(scheme, "DPoP"):
		return "DPoP", tok, true
	}
	return "", "", false
}

// dpopAlgs is the algs parameter of the providers' DPoP challenges: the
// algorithms the service accepts (docs/fapi.md).
const dpopAlgs = "ES256 PS256 EdDSA"

// dpopError is a DPoP refusal the provider makes itself.
type dpopError struct{ code, desc string }

func (e *dpopError) Error() string { return "providers: " + e.desc }

// dpopGrant reads the grant behind a DPoP-bound token (RFC 9449 §7): the
// provider checks that the proof was made for this request, its htm and
// the exact htu of the provider's URL, and forwards it to the service,
// which checks its signature, key, ath, age and single use.
func (s *Server) dpopGrant(r *http.Request, tok string) (*Grant, error) {
	ds, ok := s.cfg.Grants.(DPoPGrantSource)
	if !ok {
		return nil, &dpopError{"invalid_token", "this provider takes Bearer tokens only"}
	}
	proofs := r.Header.Values("DPoP")
	if len(proofs) != 1 {
		return nil, &dpopError{"invalid_dpop_proof", "send one DPoP header with the proof of the token's key (RFC 9449 section 7.1)"}
	}
	var c struct {
		Htm string `json:"htm"`
		Htu string `json:"htu"`
	}
	parts := strings.Split(proofs[0], ".")
	if len(parts) != 3 {
		return nil, &dpopError{"invalid_dpop_proof", "the DPoP proof is not a compact JWS (RFC 9449 section 4.2)"}
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(raw, &c) != nil {
		return nil, &dpopError{"invalid_dpop_proof", "the DPoP proof's claims are not base64url JSON (RFC 9449 section 4.2)"}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	want := scheme + "://" + r.Host + r.URL.Path
	htu := c.Htu
	if i := strings.IndexAny(htu, "?#"); i >= 0 {
		htu = htu[:i]
	}
	switch {
	case c.Htm != r.Method:
		return nil, &dpopError{"invalid_dpop_proof", fmt.Sprintf("the DPoP proof's htm is %s; this request is %s", quoted(c.Htm), r.Method)}
	case htu != want:
		return nil, &dpopError{"invalid_dpop_proof", fmt.Sprintf("the DPoP proof's htu %s is not the URL at which this Resource Server received the request, %s "+
			"(the proof is made for the request it comes with: the Resource Server's URL, RFC 9449 section 4.3)", quoted(c.Htu), quoted(want))}
	}
	return ds.GrantDPoP(r.Context(), tok, proofs[0])
}

// quoted quotes a value of the request in a refusal: without control
// characters, at most 200 bytes, between apostrophes (the description
// goes in a WWW-Authenticate quoted-string too).
func quoted(v string) string {
	var b strings.Builder
	for _, r := range v {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' || r == utf8.RuneError {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > 200 {
			b.WriteString("...")
			break
		}
		b.WriteRune(r)
	}
	return "'" + b.String() + "'"
}

// dpopRefusal answers 401 with a DPoP challenge (RFC 9449 §7.1) and, when
// the service gave one, its nonce for the next proof.
func dpopRefusal(w http.ResponseWriter, code, desc, nonce string) {
	if nonce != "" {
		w.Header().Set("DPoP-Nonce", nonce)
	}
	w.Header().Set("WWW-Authenticate", `DPoP error="`+code+`", error_description="`+strings.ReplaceAll(desc, `"`, `'`)+`", algs="`+dpopAlgs+`"`)
	writeError(w, http.StatusUnauthorized, code, desc)
}

// createKey creates the Company's P-256 signing key; creating it again
// replaces it, as a rotation.
func (s *Server) createKey(w http.ResponseWriter, _ *http.Request, org string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		s.cfg.Log.Error("generating a key", "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "the key could not be created")
		return
	}
	s.mu.Lock()
	s.keys[org] = k
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, keyView(org, k))
}

func (s *Server) readKey(w http.ResponseWriter, _ *http.Request, org string) {
	s.mu.Lock()
	k := s.keys[org]
	s.mu.Unlock()
	if k == nil {
		writeJSON(w, http.StatusOK, map[string]any{"org_id": org, "ready": false})
		return
	}
	writeJSON(w, http.StatusOK, keyView(org, k))
}

// sign signs the SHA-256 digest of the request's payload with the Company
// key (ES256, raw r||s as in JWS).
func (s *Server) sign(w http.ResponseWriter, r *http.Request, org string) {
	var in struct {
		Payload string `json:"payload"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if in.Payload == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", `send {"payload": "<text to sign>"}`)
		return
	}
	s.mu.Lock()
	k := s.keys[org]
	s.mu.Unlock()
	if k == nil {
		writeError(w, http.StatusConflict, "key_missing", "the Company has no signing key yet; create it with POST company-key")
		return
	}
	digest := sha256.Sum256([]byte(in.Payload))
	rr, ss, err := ecdsa.Sign(rand.Reader, k, digest[:])
	if err != nil {
		s.cfg.Log.Error("signing", "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "the payload could not be signed")
		return
	}
	sig := make([]byte, 64)
	rr.FillBytes(sig[:32])
	ss.FillBytes(sig[32:])
	writeJSON(w, http.StatusOK, map[string]any{"org_id": org, "key_id": keyID(k), "alg": "ES256",
		"signature": base64.RawURLEncoding.EncodeToString(sig)})
}

func (s *Server) listDocuments(w http.ResponseWriter, _ *http.Request, org string) {
	s.mu.Lock()
	docs := append([]document{}, s.documents[org]...)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"org_id": org, "documents": docs})
}

func (s *Server) createDocument(w http.ResponseWriter, r *http.Request, org string) {
	var in struct {
		Title  string `json:"title"`
		Amount string `json:"amount"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if strings.TrimSpace(in.Title) == "" || len(in.Title) > 200 || !catalog.IsAmount(in.Amount) {
		writeError(w, http.StatusBadRequest, "invalid_request", `send {"title": "1 to 200 characters", "amount": "an amount in CLP, 1 to 15 digits"}`)
		return
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	d := document{ID: "doc_" + base64.RawURLEncoding.EncodeToString(id[:]), Title: in.Title, Amount: in.Amount, Currency: "CLP",
		CreatedAt: s.cfg.Now().UTC().Format(time.RFC3339)}
	s.mu.Lock()
	s.documents[org] = append(s.documents[org], d)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, d)
}

func keyView(org string, k *ecdsa.PrivateKey) map[string]any {
	x, y := coordinates(k)
	return map[string]any{"org_id": org, "ready": true, "public_key": map[string]string{
		"kty": "EC", "crv": "P-256", "kid": keyID(k), "alg": "ES256",
		"x": base64.RawURLEncoding.EncodeToString(x), "y": base64.RawURLEncoding.EncodeToString(y)}}
}

// keyID is a short id derived from the public key.
func keyID(k *ecdsa.PrivateKey) string {
	pub, _ := k.PublicKey.Bytes()
	sum := sha256.Sum256(pub)
	return base64.RawURLEncoding.EncodeToString(sum[:8])
}

// coordinates returns the public key's X and Y from its uncompressed
// encoding (0x04 || X || Y).
func coordinates(k *ecdsa.PrivateKey) (x, y []byte) {
	pub, _ := k.PublicKey.Bytes()
	return pub[1:33], pub[33:65]
}

// maxBody caps request bodies of the example endpoints.
const maxBody = 64 << 10

// readJSON reads one JSON object with the one strict reader
// (httplimit.ReadJSON): unknown members, a member named twice and anything
// after the object are refused with 400; a body over maxBody is 413
// (RFC 9110 §15.5.14). On failure it has written the answer.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	err := httplimit.ReadJSON(w, r, maxBody, v)
	switch {
	case err == nil:
		return true
	case httplimit.TooLarge(err):
		writeError(w, http.StatusRequestEntityTooLarge, "content_too_large", fmt.Sprintf("the body is over the limit of %d bytes", maxBody))
	default:
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not the expected JSON object: "+err.Error())
	}
	return false
}

func writeError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
