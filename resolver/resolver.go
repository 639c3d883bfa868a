package resolver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/miniapp-host/miniapp-host/origin"
)

// Resolver resolves Miniapps. It is safe for concurrent use; its HTTP cache
// lives as long as it does, so one Resolver per process gives repeated
// resolves of the same Miniapp the benefit of HTTP caching.
type Resolver struct {
	cfg       Config
	dashboard *url.URL // canonical; nil when Config.Dashboard is empty
	client    *http.Client
	schemas   *schemas
	cache     httpCache
}

// New returns a Resolver for cfg, with the defaults of Config applied. It
// fails when cfg is invalid or the embedded schemas do not compile.
func New(cfg Config) (*Resolver, error) {
	cfg, dash, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s, err := compiledSchemas()
	if err != nil {
		return nil, err
	}
	var client http.Client
	if cfg.HTTPClient != nil {
		client = *cfg.HTTPClient
	} else {
		client = *newHTTPClient()
	}
	// The Resolver follows redirects itself, same origin only.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Resolver{cfg: cfg, dashboard: dash, client: &client, schemas: s, cache: httpCache{entries: map[string]*cacheEntry{}}}, nil
}

// Resolve resolves the Miniapp id served at rawOrigin (spec 4.3): it
// returns the Miniapp, a *Rejection, an *Undecided, or a plain error when
// the Resolver has no dashboard configured.
func (r *Resolver) Resolve(ctx context.Context, id, rawOrigin string) (*Miniapp, error) {
	if r.dashboard == nil {
		return nil, errors.New("resolver: no dashboard URL configured (Config.Dashboard)")
	}
	rep := newReport(id, rawOrigin, false)
	o, reason := r.checkOrigin(rawOrigin)
	if reason != nil {
		return nil, rep.reject([]Reason{*reason})
	}
	manifestURL, err := origin.ParseURL(o.String() + ManifestPath)
	if err != nil {
		// A canonical origin plus a fixed path always parses.
		return nil, fmt.Errorf("resolver: manifest URL of %s: %w", o, err)
	}
	rep.ManifestURL = manifestURL.String()
	rep.ok(StageOrigin, "origin "+o.String())

	got, se := r.fetch(ctx, target{StageDownload, "manifest"}, manifestURL)
	dl := rep.stage(StageDownload)
	dl.URL = manifestURL.String()
	if se != nil {
		return nil, r.fail(rep, se)
	}
	dl.Outcome, dl.Status, dl.Cache, dl.Redirects = OutcomeOK, got.status, got.cache, got.redirects
	if got.redirects > 0 {
		dl.Notes = append(dl.Notes, "served from "+got.url.String())
		rep.ManifestURL = got.url.String()
	}
	return r.evaluate(ctx, rep, id, got.body, got.url, r.fetchClient)
}

// Check is the offline mode (issue 3): it checks a manifest and a client
// configuration read from files, as if the manifest were served at
// manifestURL, without the network. Stages origin (of manifestURL), parse,
// schema, identity, client (schema and client type) and origins run; download
// is skipped. The result is the same as Resolve's, without *Undecided.
func (r *Resolver) Check(ctx context.Context, id, manifestURL string, manifest, client []byte) (*Miniapp, error) {
	rep := newReport(id, manifestURL, true)
	u, err := origin.ParseURL(manifestURL)
	if err != nil {
		return nil, rep.reject([]Reason{{Stage: StageOrigin, Code: CodeOriginInvalid,
			Message: fmt.Sprintf("the manifest URL %q does not parse: %v", manifestURL, err),
			Hint:    "pass the absolute URL the manifest will be served from, e.g. https://app.example/miniapp.webmanifest"}})
	}
	o := origin.Of(u)
	rep.Origin = o.String()
	if reason := r.trustworthy(o, manifestURL); reason != nil {
		return nil, rep.reject([]Reason{*reason})
	}
	rep.ManifestURL = u.String()
	rep.ok(StageOrigin, "origin "+o.String())
	rep.stage(StageDownload).Notes = []string{"offline: the manifest was read from a file"}
	source := func(context.Context, string) (*fetched, *stageError) {
		return &fetched{body: client}, nil
	}
	return r.evaluate(ctx, rep, id, manifest, u, source)
}

// checkOrigin is the origin stage of Resolve.
func (r *Resolver) checkOrigin(raw string) (origin.Origin, *Reason) {
	o, err := origin.Parse(raw)
	if err != nil {
		return o, &Reason{Stage: StageOrigin, Code: CodeOriginInvalid, Message: err.Error(),
			Hint: "pass a bare origin: scheme, host and optional port, such as https://app.example or http://127.0.0.1:8080 (no path, query, fragment or user name)"}
	}
	return o, r.trustworthy(o, raw)
}

func (r *Resolver) trustworthy(o origin.Origin, raw string) *Reason {
	if o.Scheme != "http" && o.Scheme != "https" {
		return &Reason{Stage: StageOrigin, Code: CodeOriginInvalid,
			Message: fmt.Sprintf("%q has the origin %s; a Miniapp is served over http(s)", raw, o),
			Hint:    "serve the Miniapp over https"}
	}
	if !o.IsPotentiallyTrustworthy() && !r.cfg.Insecure {
		return &Reason{Stage: StageOrigin, Code: CodeOriginInsecure,
			Message: fmt.Sprintf("%s is plain http on a host that is not loopback", o),
			Hint:    "serve the Miniapp over https, or over http on localhost, 127.0.0.0/8 or [::1]; --insecure allows http elsewhere, for tests"}
	}
	return nil
}

// clientSource gets the client configuration of a client_id.
type clientSource func(ctx context.Context, clientID string) (*fetched, *stageError)

// fetchClient is GET {dashboard_url}/api/oauth/clients/{client_id} (spec 4.2).
func (r *Resolver) fetchClient(ctx context.Context, clientID string) (*fetched, *stageError) {
	u, err := r.clientURL(clientID)
	if err != nil {
		return nil, &stageError{reason: Reason{Stage: StageClient, Code: CodeNetwork, Message: err.Error()}, undecided: true, err: err}
	}
	got, se := r.fetch(ctx, target{StageClient, "client configuration"}, u)
	if se != nil && se.status == http.StatusNotFound {
		se.reason = Reason{Stage: StageClient, Code: CodeNotRegistered, Pointer: "/oauth/client_id",
			Message: fmt.Sprintf("the dashboard does not know the client %q (%s answered 404)", clientID, u),
			Hint:    "register the OAuth client in the dashboard, or fix oauth.client_id in the manifest"}
	}
	if got != nil {
		got.url = u
	}
	return got, se
}

// clientURL builds the dashboard URL of a client, with client_id as one
// path-escaped segment, and checks that it stays on the dashboard's origin.
func (r *Resolver) clientURL(clientID string) (*url.URL, error) {
	base := r.dashboard
	raw := base.Scheme + "://" + base.Host + strings.TrimSuffix(base.EscapedPath(), "/") + "/api/oauth/clients/" + url.PathEscape(clientID)
	u, err := origin.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("resolver: client URL for %q: %w", clientID, err)
	}
	if !origin.SameOrigin(u, base) {
		return nil, fmt.Errorf("resolver: client URL for %q leaves the dashboard's origin", clientID)
	}
	return u, nil
}

// evaluate runs the stages after download: parse, schema, identity, client
// and origins.
func (r *Resolver) evaluate(ctx context.Context, rep *Report, id string, body []byte, manifestURL *url.URL, source clientSource) (*Miniapp, error) {
	body = bytes.TrimPrefix(body, utf8BOM)
	v, reason := decodeJSON(StageParse, "manifest", body)
	if reason != nil {
		return nil, rep.reject([]Reason{*reason})
	}
	rep.ok(StageParse)
	if reasons := schemaReasons(r.schemas.manifest, StageSchema, "manifest", v); len(reasons) > 0 {
		return nil, rep.reject(reasons)
	}
	var m Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		// The schema admits only what Manifest can hold.
		return nil, fmt.Errorf("resolver: decoding a schema-valid manifest: %w", err)
	}
	rep.ok(StageSchema)

	if m.ID != id {
		return nil, rep.reject([]Reason{{Stage: StageIdentity, Code: CodeIDMismatch, Pointer: "/id",
			Message: fmt.Sprintf("the manifest's id is %q, not the requested %q", m.ID, id),
			Hint:    "open the Miniapp with the id its manifest declares, or fix the manifest's id (compared exactly, case included)"}})
	}
	rep.ok(StageIdentity)

	client, err := r.clientStage(ctx, rep, &m, source)
	if err != nil {
		return nil, err
	}

	mo := origin.Of(manifestURL)
	start, startReasons := checkMember(mo, manifestURL, client, "/start_url", m.StartURL, CodeStartURLInvalid, CodeStartURLCrossOrigin, CodeStartURLNotAllowed)
	reasons := startReasons
	var auth *url.URL
	if m.OAuth.AuthURL != "" {
		var authReasons []Reason
		auth, authReasons = checkMember(mo, manifestURL, client, "/oauth/auth_url", m.OAuth.AuthURL, CodeAuthURLInvalid, CodeAuthURLCrossOrigin, CodeAuthURLNotAllowed)
		reasons = append(reasons, authReasons...)
	}
	if len(reasons) > 0 {
		return nil, rep.reject(reasons)
	}
	notes := []string{"start_url " + start.String()}
	if auth != nil {
		notes = append(notes, "auth_url "+auth.String())
	}
	rep.ok(StageOrigins, notes...)

	app := &Miniapp{Manifest: &m, ManifestURL: manifestURL, Client: client, Origin: mo, StartURL: start, LoadURL: start, Report: rep}
	if client.Confidential() {
		app.AuthURL, app.LoadURL = auth, auth
	}
	rep.Outcome = OutcomeAccepted
	rep.Miniapp = &Summary{Name: m.Name, Origin: mo.String(), ManifestURL: manifestURL.String(), StartURL: start.String(),
		LoadURL: app.LoadURL.String(), ClientID: m.OAuth.ClientID, ClientType: client.ClientType, AllowedOrigins: client.AllowedOrigins}
	if app.AuthURL != nil {
		rep.Miniapp.AuthURL = app.AuthURL.String()
	}
	return app, nil
}

// clientStage fetches, parses and checks the client configuration.
func (r *Resolver) clientStage(ctx context.Context, rep *Report, m *Manifest, source clientSource) (*ClientConfig, error) {
	got, se := source(ctx, m.OAuth.ClientID)
	sr := rep.stage(StageClient)
	if got != nil && got.url != nil {
		sr.URL = got.url.String()
	} else if se != nil && r.dashboard != nil {
		if u, err := r.clientURL(m.OAuth.ClientID); err == nil {
			sr.URL = u.String()
		}
	}
	if se != nil {
		return nil, r.fail(rep, se)
	}
	sr.Status, sr.Cache, sr.Redirects = got.status, got.cache, got.redirects
	if rep.Offline {
		sr.Notes = append(sr.Notes, "offline: the client configuration was read from a file")
	}
	body := bytes.TrimPrefix(got.body, utf8BOM)
	v, reason := decodeJSON(StageClient, "client configuration", body)
	if reason != nil {
		return nil, rep.reject([]Reason{*reason})
	}
	if reasons := schemaReasons(r.schemas.client, StageClient, "client configuration", v); len(reasons) > 0 {
		return nil, rep.reject(reasons)
	}
	var c ClientConfig
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("resolver: decoding a schema-valid client configuration: %w", err)
	}
	if c.Confidential() && m.OAuth.AuthURL == "" {
		return nil, rep.reject([]Reason{{Stage: StageClient, Code: CodeAuthURLRequired, Pointer: "/oauth/auth_url",
			Message: fmt.Sprintf("the client %q is confidential, and the manifest has no oauth.auth_url", m.OAuth.ClientID),
			Hint:    "add oauth.auth_url: the page on the Miniapp's origin that starts the authorization on its backend (spec 2.9); or register a public client"}})
	}
	for i, e := range c.AllowedOrigins {
		if _, err := origin.Parse(e); err != nil {
			sr.Notes = append(sr.Notes, fmt.Sprintf("allowed_origins[%d] matches nothing: %v", i, err))
		}
	}
	sr.Outcome = OutcomeOK
	return &c, nil
}

// checkMember resolves a URL member of the manifest against the manifest
// URL as a browser does, and checks its origin against the manifest's origin
// and the client's allowed_origins (spec 4.3 step 3). Each failed check is a
// reason of its own.
func checkMember(mo origin.Origin, base *url.URL, c *ClientConfig, ptr, raw, codeInvalid, codeCross, codeNotAllowed string) (*url.URL, []Reason) {
	name := memberName(ptr)
	u, err := origin.ResolveReference(base, raw)
	if err != nil {
		return nil, []Reason{{Stage: StageOrigins, Code: codeInvalid, Pointer: ptr,
			Message: fmt.Sprintf("%s %q does not resolve to a URL a browser would open: %v", name, raw, err),
			Hint:    fmt.Sprintf("write %s as a path on the Miniapp's origin, such as \"/\", or as an absolute https URL on it", name)}}
	}
	o := origin.Of(u)
	var out []Reason
	if !o.Equal(mo) {
		desc := "origin " + o.String()
		if o.IsOpaque() {
			desc = "an opaque origin (a " + u.Scheme + ": URL)"
		}
		out = append(out, Reason{Stage: StageOrigins, Code: codeCross, Pointer: ptr,
			Message: fmt.Sprintf("%s %q resolves to %s, which has %s, not the manifest's origin %s", name, raw, u, desc, mo),
			Hint:    fmt.Sprintf("put %s on %s; a browser reads \"//host\", \"/\\host\", \"\\\\host\" and \"user@host\" as other hosts", name, mo)})
	}
	if !origin.InList(o, c.AllowedOrigins) {
		hint := fmt.Sprintf("add %q to the client's allowed_origins in the dashboard (exact origin: scheme, host and port; no paths or wildcards)", o.String())
		if !o.Equal(mo) {
			// Never advise allowing a foreign origin: the URL is what is wrong.
			hint = fmt.Sprintf("point %s at the manifest's origin %s, and list that origin in allowed_origins", name, mo)
		}
		out = append(out, Reason{Stage: StageOrigins, Code: codeNotAllowed, Pointer: ptr,
			Message: fmt.Sprintf("%s resolves to %s, whose origin %s is not in the client's allowed_origins %q", name, u, o, c.AllowedOrigins),
			Hint:    hint})
	}
	return u, out
}

// fail ends the report for a failed download.
func (r *Resolver) fail(rep *Report, se *stageError) error {
	if se.undecided {
		return rep.undecided(se)
	}
	if se.status != 0 {
		rep.stage(se.reason.Stage).Status = se.status
	}
	return rep.reject([]Reason{se.reason})
}
