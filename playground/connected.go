package playground

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"time"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// Connected Miniapps (docs/playground.md, "Connected Miniapps"): the
// current subject's grants, as the reference server's Connected Miniapps
// API lists them (docs/authserver.md, "Connected Miniapps"), with revoke.
// The launcher's API calls that API as the subject: each call signs a
// session of its own in through the API's sign-in (this development server
// has no passwords) and sends the session's CSRF token, as the server's
// own page does.

// connectedAPI is the path of the server's Connected Miniapps API below
// the issuer.
const connectedAPI = "/oauth/connected/api"

// ConnectedView is what the launcher shows: the subject, the address of
// the server's own page, and the clients with their grants as the server
// lists them (client, grants, each grant's entries with their meanings).
type ConnectedView struct {
	Subject string          `json:"subject"`
	PageURL string          `json:"page_url"`
	Clients json.RawMessage `json:"clients"`
}

// subjectSession is a client of the server's Connected Miniapps API signed
// in as one subject.
type subjectSession struct {
	hc   *http.Client
	base string
	csrf string
}

// signInAs starts a session of the Connected Miniapps API for subject.
func (p *Playground) signInAs(ctx context.Context, subject string) (*subjectSession, error) {
	jar, _ := cookiejar.New(nil)
	// A client of its own: the configured one's transport records what
	// the network log shows of sign-in flows, which these calls are not.
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	s := &subjectSession{hc: hc, base: p.world.urls.Issuer + connectedAPI}
	var first struct {
		CSRF string `json:"csrf"`
	}
	if err := s.do(ctx, http.MethodGet, "", nil, &first); err != nil {
		return nil, err
	}
	s.csrf = first.CSRF
	var in struct {
		CSRF string `json:"csrf"`
	}
	if err := s.do(ctx, http.MethodPost, "/login", map[string]string{"subject": subject}, &in); err != nil {
		return nil, err
	}
	s.csrf = in.CSRF
	return s, nil
}

// do calls the API; an answer other than 200 is an error with the
// server's code and description.
func (s *subjectSession) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return fmt.Errorf("playground: connected miniapps: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-CSRF-Token", s.csrf)
	}
	a, err := jsonhttp.Do(s.hc, req, 8<<20)
	if err != nil {
		return fmt.Errorf("playground: connected miniapps: %w", err)
	}
	if a.Status != http.StatusOK {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(a.Body, &e)
		return &apiError{status: statusOfServer(a.Status), code: e.Error, message: e.Description}
	}
	if err := a.Decode(out); err != nil {
		return fmt.Errorf("playground: connected miniapps: the server's answer: %w", err)
	}
	return nil
}

// statusOfServer is the launcher's status for the server's refusal: the
// same for the subject's mistakes (4xx), a gateway failure otherwise.
func statusOfServer(st int) int {
	if st >= 400 && st < 500 {
		return st
	}
	return http.StatusBadGateway
}

// ConnectedMiniapps lists the current subject's grants.
func (p *Playground) ConnectedMiniapps(ctx context.Context) (ConnectedView, error) {
	subject := p.Subject()
	s, err := p.signInAs(ctx, subject)
	if err != nil {
		return ConnectedView{}, err
	}
	var v struct {
		Subject string          `json:"subject"`
		Clients json.RawMessage `json:"clients"`
	}
	if err := s.do(ctx, http.MethodGet, "", nil, &v); err != nil {
		return ConnectedView{}, err
	}
	return ConnectedView{Subject: v.Subject, PageURL: p.world.urls.Issuer + "/oauth/connected", Clients: v.Clients}, nil
}

// RevokeConnected revokes, for the current subject, one entry of a grant
// ("scope profile", "detail 0") or, with entry "", the whole grant, and
// returns the server's answer (grant_id, revoked, whole_grant).
func (p *Playground) RevokeConnected(ctx context.Context, grantID, entry string) (json.RawMessage, error) {
	if strings.TrimSpace(grantID) == "" {
		return nil, invalid("grant_id: missing; GET /api/connected lists the grants")
	}
	s, err := p.signInAs(ctx, p.Subject())
	if err != nil {
		return nil, err
	}
	var out json.RawMessage
	if err := s.do(ctx, http.MethodPost, "/revoke", map[string]string{"grant_id": grantID, "entry": entry}, &out); err != nil {
		return nil, err
	}
	ev := GrantRevokedEvent{Subject: p.Subject()}
	if err := json.Unmarshal(out, &ev); err != nil {
		return nil, fmt.Errorf("playground: connected miniapps: the server's answer: %w", err)
	}
	p.bus.Publish(ev)
	return out, nil
}

// GrantRevokedEvent reports a revocation made from the launcher's
// Connected Miniapps panel: entries of a grant, or the whole grant, as the
// server answered it (docs/authserver.md, "Connected Miniapps").
type GrantRevokedEvent struct {
	Subject    string   `json:"subject"`
	GrantID    string   `json:"grant_id"`
	Revoked    []string `json:"revoked,omitempty"`
	WholeGrant bool     `json:"whole_grant"`
}

// Kind is the event's name on the automation channel.
func (GrantRevokedEvent) Kind() string { return "grant.revoked" }

// handleConnected serves GET /api/connected.
func (p *Playground) handleConnected(w http.ResponseWriter, r *http.Request) {
	v, err := p.ConnectedMiniapps(r.Context())
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// handleRevokeConnected serves POST /api/connected/revoke {grant_id, entry}.
func (p *Playground) handleRevokeConnected(w http.ResponseWriter, r *http.Request) {
	var in struct {
		GrantID string `json:"grant_id"`
		Entry   string `json:"entry"`
	}
	if err := readJSON(r, &in); err != nil {
		writeError(w, err)
		return
	}
	out, err := p.RevokeConnected(r.Context(), in.GrantID, in.Entry)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// asAPIError is err as the launcher's API answers it.
func asAPIError(err error) *apiError {
	if ae, ok := err.(*apiError); ok {
		return ae
	}
	return &apiError{http.StatusBadGateway, "server_failed", err.Error()}
}
