package playground

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/miniapp-host/miniapp-host/bridge"
	"github.com/miniapp-host/miniapp-host/jsonhttp"
	"github.com/miniapp-host/miniapp-host/netlog"
	"github.com/miniapp-host/miniapp-host/origin"
	"github.com/miniapp-host/miniapp-host/redact"
)

// Events the playground adds to the automation channel's (docs/playground.md).
// The host never sees the token a Miniapp's own backend obtains (way 1 of
// docs/architecture.md), so the playground reads the demo backends' token
// responses on their way back and reports what the inspector shows.

// TokenClaimsEvent reports the decoded claims of an access token (a JWT;
// the signature is not checked, the inspector only shows them). The token
// itself never travels: Fingerprint matches TokenIssuedEvent's, and
// CodeFingerprint that of the code it was exchanged for.
type TokenClaimsEvent struct {
	ClientID        string          `json:"client_id"`
	Fingerprint     string          `json:"fingerprint"`
	CodeFingerprint string          `json:"code_fingerprint,omitempty"`
	Claims          json.RawMessage `json:"claims,omitempty"`
	Error           string          `json:"error,omitempty"`
	// Flow is the network log's flow whose code was exchanged; "" for a
	// token obtained outside the window (a plain browser tab).
	Flow string `json:"flow,omitempty"`
}

// Kind implements bridge.Event.
func (TokenClaimsEvent) Kind() string { return "token.claims" }

// GrantEvent reports what GET {base_url}/authorization answered for an
// access token, read with the credential of the client it was issued to.
type GrantEvent struct {
	ClientID    string          `json:"client_id"`
	Fingerprint string          `json:"fingerprint"`
	Status      int             `json:"status,omitempty"`
	Grant       json.RawMessage `json:"grant,omitempty"`
	Error       string          `json:"error,omitempty"`
	// Scope and AuthorizationDetails are what the token response says was
	// granted (RFC 6749 section 5.1, RFC 9396 section 7), set when the
	// grant endpoint could not be asked: what is known without it.
	Scope                string          `json:"scope,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	// Flow is as in TokenClaimsEvent.
	Flow string `json:"flow,omitempty"`
}

// errPublicGrant says why a public client's grant is not read: the grant
// endpoint answers the token's own client, authenticated with its secret, or
// a Resource Server in the token's audience (docs/authserver.md).
const errPublicGrant = "not read: GET /authorization needs a client secret, and a public client has none " +
	"(the endpoint answers only the token's own client, authenticated, or a Resource Server in the token's audience); " +
	"scope and authorization_details below are those of the token response"

// Kind implements bridge.Event.
func (GrantEvent) Kind() string { return "grant" }

// observer is the transport of the demo Miniapps' token requests: it passes
// every request on unchanged and, for a successful token response of the
// service's token endpoint, publishes token.issued, token.claims and then
// (in the background) grant.
type observer struct {
	bus    *bridge.Bus
	base   http.RoundTripper // nil: http.DefaultTransport
	client *http.Client      // reads the grant
	log    *slog.Logger
	// token, grant and par are the service's endpoints, set before any
	// demo Miniapp starts.
	token, grant, par *url.URL
	// hostIssues is set for the host's own client: the host publishes
	// token.issued itself (docs/automation.md), so the observer adds only
	// token.claims and grant.
	hostIssues bool
	// netlog receives the token exchange and the grant read, in the flow
	// whose code was exchanged (a flow of the window's).
	netlog *netlog.Log

	wg sync.WaitGroup // grant reads in flight

	mu sync.Mutex // guards keyed
	// keyed are the tokens of private_key_jwt clients by fingerprint,
	// until their backend reads the grant itself: the playground holds no
	// key to read it with.
	keyed map[string]keyedToken
}

// keyedToken is a token whose grant its backend reads (observer.keyed).
type keyedToken struct {
	flow     *netlog.Flow
	clientID string
}

// is reports whether req is a request with method to the endpoint u.
func is(req *http.Request, method string, u *url.URL) bool {
	return u != nil && req.Method == method && origin.SameOrigin(req.URL, u) && req.URL.Path == u.Path
}

const maxObserved = 1 << 20

func (o *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	base := o.base
	if base == nil {
		base = http.DefaultTransport
	}
	switch {
	case is(req, http.MethodPost, o.par) && netlog.FlowOf(req.Context()) == nil:
		// A backend's pushed authorization request (RFC 9126): it joins
		// the flow its request_uri starts, once the host catches it.
		req = req.WithContext(netlog.IntoPushed(req.Context(), o.netlog, netlog.SourceBackend))
		return (&netlog.Transport{Base: base}).RoundTrip(req)
	case is(req, http.MethodGet, o.grant) && netlog.FlowOf(req.Context()) == nil:
		return o.backendGrant(base, req)
	case !is(req, http.MethodPost, o.token):
		return base.RoundTrip(req)
	}
	var form url.Values
	if req.Body != nil {
		body, err := io.ReadAll(io.LimitReader(req.Body, maxObserved))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		form, _ = url.ParseQuery(string(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	// The host's own token request (the bridge's authorize) is recorded
	// in its flow by the host's client already. A backend's joins the
	// flow that issued its code, if the window ran one: the code is the
	// link (netlog.Flow.SetCode).
	var resp *http.Response
	var err error
	flow := netlog.FlowOf(req.Context())
	if flow != nil {
		resp, err = base.RoundTrip(req)
	} else {
		flow = o.netlog.FlowByCode(form.Get("code"))
		req = req.WithContext(netlog.Into(req.Context(), flow, netlog.SourceBackend, netlog.KindToken))
		resp, err = (&netlog.Transport{Base: base}).RoundTrip(req)
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	// The backend reads the answer after the observer, whole or not at
	// all: over the cap, it gets the error that says so.
	ans, err := jsonhttp.Read(resp, maxObserved)
	if err != nil {
		return nil, err
	}
	body := ans.Body
	resp.Body = io.NopCloser(bytes.NewReader(body))
	clientID, secret, ok := req.BasicAuth()
	if ok {
		// RFC 6749 section 2.3.1: both are form-encoded before Basic.
		clientID, _ = url.QueryUnescape(clientID)
		secret, _ = url.QueryUnescape(secret)
	} else {
		clientID, secret = form.Get("client_id"), form.Get("client_secret")
	}
	o.publish(flow, clientID, secret, form.Get("client_assertion") != "", form.Get("code"), body)
	return resp, nil
}

// backendGrant passes on a backend's own request to the grant endpoint.
// For the token of a private_key_jwt client (observer.keyed), the first
// one is recorded in the token's flow and its answer published as the
// grant event.
func (o *observer) backendGrant(base http.RoundTripper, req *http.Request) (*http.Response, error) {
	_, tok, _ := strings.Cut(req.Header.Get("Authorization"), " ")
	fp := redact.Fingerprint(strings.TrimSpace(tok))
	o.mu.Lock()
	k, ok := o.keyed[fp]
	delete(o.keyed, fp)
	o.mu.Unlock()
	if !ok {
		return base.RoundTrip(req)
	}
	req = req.WithContext(netlog.Into(req.Context(), k.flow, netlog.SourceBackend, netlog.KindGrant))
	resp, err := (&netlog.Transport{Base: base}).RoundTrip(req)
	ev := GrantEvent{ClientID: k.clientID, Fingerprint: fp, Flow: k.flow.ID()}
	if err != nil {
		ev.Error = "the grant endpoint did not answer"
		o.bus.Publish(ev)
		return nil, err
	}
	ev.Status = resp.StatusCode
	ans, err := jsonhttp.Read(resp, maxObserved)
	if err != nil {
		ev.Error = "the grant endpoint's answer could not be read: " + err.Error()
		o.bus.Publish(ev)
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(ans.Body))
	var grant json.RawMessage
	if ans.Decode(&grant) != nil {
		ev.Error = "the grant endpoint's answer is not JSON"
	} else {
		ev.Grant = ans.Body
	}
	o.bus.Publish(ev)
	return resp, nil
}

// publish reports one token response; keyed says the client
// authenticated with a client assertion (private_key_jwt).
func (o *observer) publish(flow *netlog.Flow, clientID, secret string, keyed bool, code string, body []byte) {
	var tr struct {
		AccessToken          string          `json:"access_token"`
		TokenType            string          `json:"token_type"`
		ExpiresIn            int64           `json:"expires_in"`
		Scope                string          `json:"scope"`
		AuthorizationDetails json.RawMessage `json:"authorization_details"`
		GrantID              string          `json:"grant_id"`
	}
	if json.Unmarshal(body, &tr) != nil || tr.AccessToken == "" {
		return
	}
	fp := redact.Fingerprint(tr.AccessToken)
	if !o.hostIssues {
		o.bus.Publish(bridge.TokenIssuedEvent{ClientID: clientID, TokenType: tr.TokenType, Scope: tr.Scope, ExpiresIn: tr.ExpiresIn,
			AuthorizationDetails: tr.AuthorizationDetails, Fingerprint: fp, GrantID: tr.GrantID, Flow: flow.ID()})
	}
	claims := TokenClaimsEvent{ClientID: clientID, Fingerprint: fp, Flow: flow.ID()}
	if code != "" {
		claims.CodeFingerprint = redact.Fingerprint(code)
	}
	if c, err := jwtClaims(tr.AccessToken); err != nil {
		claims.Error = err.Error()
	} else {
		claims.Claims = c
	}
	o.bus.Publish(claims)
	if keyed {
		// Its backend reads the grant (backendGrant); the token response
		// says what was granted meanwhile.
		o.mu.Lock()
		if o.keyed == nil {
			o.keyed = map[string]keyedToken{}
		}
		if len(o.keyed) > 256 {
			clear(o.keyed) // tokens whose grant no backend read
		}
		o.keyed[fp] = keyedToken{flow: flow, clientID: clientID}
		o.mu.Unlock()
		return
	}
	if secret == "" {
		o.bus.Publish(GrantEvent{ClientID: clientID, Fingerprint: fp, Error: errPublicGrant,
			Scope: tr.Scope, AuthorizationDetails: tr.AuthorizationDetails, Flow: flow.ID()})
		return
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.bus.Publish(o.readGrant(flow, clientID, secret, tr.AccessToken, fp))
	}()
}

// readGrant asks the grant endpoint about token, as the client it was
// issued to (docs/authserver.md, "GET {base_url}/authorization").
func (o *observer) readGrant(flow *netlog.Flow, clientID, secret, token, fp string) GrantEvent {
	ev := GrantEvent{ClientID: clientID, Fingerprint: fp, Flow: flow.ID()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = netlog.Into(ctx, flow, netlog.SourceBackend, netlog.KindGrant)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.grant.String(), nil)
	if err != nil {
		ev.Error = err.Error()
		return ev
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Client-Id", clientID)
	req.Header.Set("X-Client-Secret", secret)
	ans, err := jsonhttp.Do(netlog.Client(o.client), req, maxObserved)
	var je *jsonhttp.Error
	if errors.As(err, &je) && je.Status == 0 {
		o.log.Warn("playground: read grant", "err", err)
		ev.Error = "the grant endpoint did not answer"
		return ev
	}
	var grant json.RawMessage
	if err == nil {
		ev.Status = ans.Status
		err = ans.Decode(&grant)
	} else {
		ev.Status = je.Status
	}
	if err != nil {
		ev.Error = "the grant endpoint's answer is not JSON"
		return ev
	}
	ev.Grant = ans.Body
	return ev
}

// wait waits for the grant reads in flight.
func (o *observer) wait() { o.wg.Wait() }

// jwtClaims decodes the payload of a compact JWS without checking it.
func jwtClaims(token string) (json.RawMessage, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errNotJWT
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || !json.Valid(b) {
		return nil, errNotJWT
	}
	return b, nil
}

var errNotJWT = errors.New("the access token is not a JWT: no claims to show")

// history keeps the latest event envelopes for a launcher that connects
// after they were published.
type history struct {
	mu     sync.Mutex // guards below
	events []json.RawMessage
	max    int

	sub    *bridge.Subscription
	closed bool

	bus  *bridge.Bus
	done chan struct{}
}

func newHistory(bus *bridge.Bus, max int) *history {
	h := &history{max: max, bus: bus, sub: bus.Subscribe(1024), done: make(chan struct{})}
	go h.run()
	return h
}

func (h *history) run() {
	defer close(h.done)
	h.mu.Lock()
	sub := h.sub
	h.mu.Unlock()
	for {
		for env := range sub.C() {
			h.mu.Lock()
			h.events = append(h.events, env)
			if len(h.events) > h.max {
				h.events = append(h.events[:0:0], h.events[len(h.events)-h.max:]...)
			}
			h.mu.Unlock()
		}
		// Dropped for falling behind: the gap is lost, the rest is not.
		h.mu.Lock()
		if h.closed || !sub.Dropped() {
			h.mu.Unlock()
			return
		}
		h.sub = h.bus.Subscribe(1024)
		sub = h.sub
		h.mu.Unlock()
	}
}

// recent returns the kept envelopes, oldest first.
func (h *history) recent() []json.RawMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]json.RawMessage(nil), h.events...)
}

func (h *history) close() {
	h.mu.Lock()
	h.closed = true
	sub := h.sub
	h.mu.Unlock()
	sub.Close()
	<-h.done
}
