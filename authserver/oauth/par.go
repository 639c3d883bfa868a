package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// Pushed authorization requests (RFC 9126). A client posts the parameters
// of an authorization request to the PAR endpoint, authenticated as at the
// token endpoint; they go through validateAuthorize, the checks of the
// authorization endpoint, and are kept (in the database, so that any
// instance sharing it can take them) under a request_uri. The browser is
// then sent to the authorization endpoint with client_id and request_uri
// only; the request is taken once and checked again, and goes on as if its
// parameters had been in the query.

const (
	pathPAR = "/oauth/par"
	// requestURIPrefix begins every request_uri (RFC 9126 §2.2).
	requestURIPrefix = "urn:ietf:params:oauth:request_uri:"
	// codeInvalidRequestURI: OpenID Connect Core §3.1.2.6.
	codeInvalidRequestURI = "invalid_request_uri"
)

// Pushed request quota keys.
const (
	keyPushedClient = "pushed client:"
	keyPushedAll    = "pushed all"
)

// parHandler answers the pushed authorization request endpoint (RFC 9126
// §2): the client authenticates (clientAuth), the parameters are checked
// (authzRequests) and kept under a request_uri, which
// authzRequests.authorizeRequest takes later.
type parHandler struct {
	*base
	st       pushedRequests
	auth     *clientAuth
	dpop     *dpopVerifier
	requests *authzRequests
}

// pushedRequests is where pushed requests are kept.
type pushedRequests interface {
	AddPushed(ctx context.Context, p *store.PushedRequest, c store.Charge, now time.Time) error
}

// parResponse is RFC 9126 §2.2.
type parResponse struct {
	RequestURI string `json:"request_uri"`
	ExpiresIn  int64  `json:"expires_in"`
}

// clientAuthParams are the parameters of client authentication, which are
// not parameters of the authorization request.
var clientAuthParams = []string{"client_secret", "client_assertion", "client_assertion_type"}

// handlePAR serves the pushed authorization request endpoint (RFC 9126 §2).
func (s *parHandler) handlePAR(w http.ResponseWriter, r *http.Request) {
	if err := parsePostForm(w, r); err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	c, err := s.auth.authenticateClient(r)
	if err == nil {
		if oe, done := s.injectFault(w, r, FaultPAR, c.ID, nil); done {
			return
		} else if oe != nil {
			err = oe
		}
	}
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	form := r.PostForm
	if _, ok := form["request_uri"]; ok {
		s.writeJSONError(w, r, oauthErr(codeInvalidRequest, "request_uri must not be pushed (RFC 9126 section 2.1): push the parameters themselves"))
		return
	}
	params := make(map[string][]string, len(form))
	for k, v := range form {
		params[k] = v
	}
	for _, k := range clientAuthParams {
		delete(params, k)
	}
	params["client_id"] = []string{c.ID}
	if _, _, err := s.requests.validateAuthorize(r.Context(), params); err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	if err := s.checkPushed(r, c, params); err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	id, err := s.randomToken(32)
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	now := s.cfg.Now()
	ttl := s.cfg.FAPI.PARTTL
	ch := store.Charge{Period: ttl / quotaPeriods, Quotas: []store.Quota{
		{Key: keyPushedClient + c.ID, Limit: s.cfg.FAPI.MaxPushedPerClient}, {Key: keyPushedAll, Limit: s.cfg.FAPI.MaxPushed}}}
	err = s.st.AddPushed(r.Context(), &store.PushedRequest{IDHash: store.Hash(id), ClientID: c.ID, Params: params,
		ExpiresAt: now.Add(ttl)}, ch, now)
	var qe *store.QuotaError
	if errors.As(err, &qe) {
		who := "of this client"
		if qe.Key == keyPushedAll {
			who = "in all"
		}
		err = oauthErr(codeTemporarilyUnavailable, fmt.Sprintf("too many pushed authorization requests %s are waiting to be used: the quota is %d, each held up to %s; retry later",
			who, qe.Limit, ttl))
	}
	if err != nil {
		s.writeJSONError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, parResponse{RequestURI: requestURIPrefix + id, ExpiresIn: int64(ttl.Seconds())})
}

// checkPushed is where the PAR endpoint checks what only it sees (a DPoP
// proof, dpop.go); the parameters passed validateAuthorize.
func (s *parHandler) checkPushed(r *http.Request, c *store.Client, params map[string][]string) error {
	if err := checkDPoPJKT(params); err != nil {
		return err
	}
	// A proof at PAR binds the code to its key, as dpop_jkt does (RFC
	// 9449 §10.1); both must then name the same key.
	jkt, err := s.dpop.tokenProof(r, c)
	switch {
	case err != nil:
		return err
	case jkt == "":
	case len(params["dpop_jkt"]) == 0:
		params["dpop_jkt"] = []string{jkt}
	case params["dpop_jkt"][0] != jkt:
		return oauthErr(codeInvalidRequest, "dpop_jkt "+echo(params["dpop_jkt"][0])+" is not the thumbprint of the DPoP proof's key, "+echo(jkt)+
			": both must name the same key (RFC 9449 section 10.1)")
	}
	return nil
}

// authorizeRequest reads and checks an authorization request, at the
// authorization endpoint and in the native-consent API: a request_uri of
// this server's is replaced by the pushed request it names, taken once;
// then validateAuthorize; then, for a request that was not pushed, whether
// the client or the server requires PAR. redirect is validateAuthorize's:
// whether an error may go to the verified redirect_uri.
func (s *authzRequests) authorizeRequest(ctx context.Context, q map[string][]string) (v *validated, redirect bool, err error) {
	params, pushed, err := s.pushedParams(ctx, q)
	if err != nil {
		return &validated{params: q, req: ParseAuthorize(q)}, false, err
	}
	v, redirect, err = s.validateAuthorize(ctx, params)
	v.pushed, v.requestURI = pushed, ""
	if pushed {
		v.requestURI = q["request_uri"][0]
	}
	if err == nil {
		err = checkDPoPJKT(params)
	}
	if pushed || v.client == nil || !redirect {
		return v, redirect, err
	}
	required := s.cfg.FAPI.RequirePAR
	if !required {
		cs, serr := s.sec.get(ctx, v.client)
		if serr != nil {
			return v, redirect, serr
		}
		required = cs.requirePAR()
	}
	if required {
		who := "client " + v.client.ID
		if s.cfg.FAPI.RequirePAR {
			who = "this server"
		}
		return v, true, oauthErr(codeInvalidRequest, who+" requires pushed authorization requests (require_pushed_authorization_requests): "+
			"POST the parameters to "+s.endpoint(pathPAR)+" and send only client_id and the request_uri it returns (RFC 9126 section 4)")
	}
	return v, redirect, err
}

// pushedParams returns the parameters of the pushed request that q's
// request_uri names, taken so that it is used once (RFC 9126 §4), and
// whether there was one. A request_uri not of this server's form is left
// to validateAuthorize, which refuses it (request_uri_not_supported).
// Parameters sent beside client_id and request_uri are ignored: only the
// pushed ones, which the client authenticated, count (FAPI 2.0 Security
// Profile §5.3.2.2).
func (s *authzRequests) pushedParams(ctx context.Context, q map[string][]string) (map[string][]string, bool, error) {
	uris := q["request_uri"]
	if len(uris) == 0 || !strings.HasPrefix(uris[0], requestURIPrefix) {
		return q, false, nil
	}
	if len(uris) > 1 || len(q["client_id"]) > 1 {
		return nil, false, oauthErr(codeInvalidRequest, fmt.Sprintf("client_id and request_uri must each be sent once (RFC 6749 section 3.1): client_id is sent %d times, request_uri %d times",
			len(q["client_id"]), len(uris)))
	}
	clientID := ""
	if len(q["client_id"]) == 1 {
		clientID = q["client_id"][0]
	}
	if clientID == "" {
		return nil, false, oauthErr(codeInvalidRequest, "client_id is missing: send it with the request_uri (RFC 9126 section 4)")
	}
	id := strings.TrimPrefix(uris[0], requestURIPrefix)
	p, err := s.st.TakePushed(ctx, store.Hash(id), clientID, s.cfg.Now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, oauthErr(codeInvalidRequestURI, "request_uri "+echo(uris[0])+" is unknown, has expired, was used already or was pushed by a client other than "+
			echo(clientID)+": push the request again and use the new request_uri once, within its expires_in (RFC 9126 section 4)")
	} else if err != nil {
		return nil, false, err
	}
	return p.Params, true, nil
}
