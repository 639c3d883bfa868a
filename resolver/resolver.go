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

	"github.com/miniapp-host/miniapp-host/jsonpointer"
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

// Resolve resolves the Miniapp id served at rawOrigin (docs/service.md §4.3): it
// returns the Miniapp, a *Rejection, an *Undecided, or a plain error when
// the Resolver has no dashboard configured. Past a failed stage it runs every
// later stage that still has its input, so that a Rejection lists all that
// one run can establish (package documentation).
func (r *Resolver) Resolve(ctx context.Context, id, rawOrigin string) (*Miniapp, error) {
	if r.dashboard == nil {
		return nil, errors.New("resolver: no dashboard URL configured (Config.Dashboard)")
	}
	rep := newReport(id, rawOrigin, false)
	o, reason := r.checkOrigin(rawOrigin)
	if reason != nil {
		rep.skipAfter(StageOrigin, "there is no usable origin to download the manifest from")
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
		rep.skipAfter(StageDownload, "no manifest was downloaded")
		return nil, r.downloadFailed(rep, se)
	}
	dl.Outcome, dl.Status, dl.Cache, dl.Redirects = OutcomeOK, got.status, got.cache, got.redirects
	if got.redirects > 0 {
		dl.Notes = append(dl.Notes, "served from "+got.url.String())
		rep.ManifestURL = got.url.String()
	}
	return r.evaluate(ctx, rep, id, got.body, got.url, r.fetchClient)
}

// Check is the offline mode: it checks a manifest and a client
// configuration read from files, as if the manifest were served at
// manifestURL, without the network. Stages origin (of manifestURL), parse,
// schema, identity, client (schema and client type) and origins run; download
// is skipped. The result is the same as Resolve's, without *Undecided.
func (r *Resolver) Check(ctx context.Context, id, manifestURL string, manifest, client []byte) (*Miniapp, error) {
	rep, u := r.offlineOrigin(id, manifestURL)
	source := func(context.Context, string) (*fetched, *stageError) {
		return &fetched{body: client}, nil
	}
	return r.evaluate(ctx, rep, id, manifest, u, source)
}

// CheckManifest is the offline check of a manifest alone, before its OAuth
// client exists: stages parse, schema and identity, and, when manifestURL is
// not empty, origin and the same-origin rules of origins. The client stage
// and the allowed_origins rules are skipped, and their notes say so. It
// returns the report, and a *Rejection when a stage failed; the report's
// outcome is then "rejected", else "passed" (never "accepted": what was not
// checked may still refuse the Miniapp).
func (r *Resolver) CheckManifest(ctx context.Context, id, manifestURL string, manifest []byte) (*Report, error) {
	rep, u := r.offlineOrigin(id, manifestURL)
	_, err := r.evaluate(ctx, rep, id, manifest, u, nil)
	return rep, err
}

// offlineOrigin starts the report of an offline check with its origin
// stage, and returns the manifest URL that start_url and auth_url resolve
// against: nil when there is none usable.
func (r *Resolver) offlineOrigin(id, manifestURL string) (*Report, *url.URL) {
	rep := newReport(id, manifestURL, true)
	rep.skip(StageDownload, "offline: the manifest was read from a file")
	if manifestURL == "" {
		rep.skip(StageOrigin, "no manifest URL was given")
		return rep, nil
	}
	u, err := origin.ParseURL(manifestURL)
	if err != nil {
		rep.fail([]Reason{{Stage: StageOrigin, Code: CodeOriginInvalid,
			Message: fmt.Sprintf("the manifest URL %q does not parse: %v", manifestURL, err),
			Hint:    "pass the absolute URL the manifest will be served from, e.g. https://app.example/miniapp.webmanifest"}})
		return rep, nil
	}
	o := origin.Of(u)
	rep.Origin = o.String()
	rep.ManifestURL = u.String()
	if reason := r.trustworthy(o, manifestURL); reason != nil {
		rep.fail([]Reason{*reason})
		if o.Scheme != "http" && o.Scheme != "https" {
			// No Miniapp is served from it: every member would be
			// cross-origin, which says nothing the origin reason does not.
			return rep, nil
		}
		return rep, u
	}
	rep.ok(StageOrigin, "origin "+o.String())
	return rep, u
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

// fetchClient is GET {dashboard_url}/api/oauth/clients/{client_id} (docs/service.md §4.2).
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

// manifestView is what the later stages read of a manifest: every member
// when the schema passed, else the members the schema did not refuse (ok
// says which), so that identity, client and origins still run on them.
type manifestView struct {
	m                                 Manifest
	idOK, clientIDOK, startOK, authOK bool
	authDeclared                      bool // oauth.auth_url is present, valid or not
}

// viewOf builds the manifestView of a decoded manifest v (body is its text)
// and the schema's reasons against it.
func viewOf(v any, body []byte, schemaBad []Reason) (manifestView, error) {
	var mv manifestView
	if len(schemaBad) == 0 {
		if err := json.Unmarshal(body, &mv.m); err != nil {
			// The schema admits only what Manifest can hold.
			return mv, fmt.Errorf("resolver: decoding a schema-valid manifest: %w", err)
		}
		mv.idOK, mv.clientIDOK, mv.startOK = true, true, true
		mv.authOK, mv.authDeclared = mv.m.OAuth.AuthURL != "", mv.m.OAuth.AuthURL != ""
		return mv, nil
	}
	// A member is usable when it is a string and the schema found nothing
	// wrong with it: a client_id of ".." or of 10,000 characters is never
	// sent to the dashboard.
	str := func(ptr string) (string, bool) {
		x, found := jsonpointer.Lookup(v, ptr)
		s, isString := x.(string)
		if !found || !isString {
			return "", false
		}
		for _, r := range schemaBad {
			if r.Pointer == ptr {
				return "", false
			}
		}
		return s, true
	}
	mv.m.ID, mv.idOK = str("/id")
	mv.m.StartURL, mv.startOK = str("/start_url")
	mv.m.OAuth.ClientID, mv.clientIDOK = str("/oauth/client_id")
	mv.m.OAuth.AuthURL, mv.authOK = str("/oauth/auth_url")
	_, mv.authDeclared = jsonpointer.Lookup(v, "/oauth/auth_url")
	return mv, nil
}

// evaluate runs the stages after download: parse, schema, identity, client
// and origins. manifestURL is nil when there is none to resolve members
// against (an offline check without one); source is nil when there is no
// client configuration (CheckManifest). A failed stage does not stop the
// stages after it that still have their input.
func (r *Resolver) evaluate(ctx context.Context, rep *Report, id string, body []byte, manifestURL *url.URL, source clientSource) (*Miniapp, error) {
	body = bytes.TrimPrefix(body, utf8BOM)
	v, reason := decodeJSON(StageParse, "manifest", body)
	if reason != nil {
		note := "the manifest is not JSON"
		if reason.Code == CodeJSONDuplicate {
			note = "the manifest names a member twice"
		}
		rep.skipAfter(StageParse, note)
		return nil, rep.reject([]Reason{*reason})
	}
	rep.ok(StageParse)
	schemaBad := schemaReasons(r.schemas.manifest, StageSchema, "manifest", v)
	mv, err := viewOf(v, body, schemaBad)
	if err != nil {
		return nil, err
	}
	if len(schemaBad) > 0 {
		rep.fail(schemaBad)
	} else {
		rep.ok(StageSchema)
	}
	m := &mv.m

	switch {
	case !mv.idOK:
		rep.skip(StageIdentity, "the manifest's id is missing or invalid: see the schema stage")
	case m.ID != id:
		rep.fail([]Reason{{Stage: StageIdentity, Code: CodeIDMismatch, Pointer: "/id",
			Message: fmt.Sprintf("the manifest's id is %q, not the requested %q", m.ID, id),
			Hint:    "open the Miniapp with the id its manifest declares, or fix the manifest's id (compared exactly, case included)"}})
	default:
		rep.ok(StageIdentity)
	}

	var client *ClientConfig
	switch {
	case source == nil:
		rep.skip(StageClient, "no client configuration was given, so its client_type, its allowed_origins and the oauth.auth_url a confidential client needs are unchecked")
	case !mv.clientIDOK:
		rep.skip(StageClient, "the manifest's oauth.client_id is missing or invalid: see the schema stage")
	default:
		client, err = r.clientStage(ctx, rep, m, mv.authDeclared, source)
		if err != nil {
			return nil, err
		}
	}

	start, auth := r.originsStage(rep, mv, manifestURL, client, source != nil)

	if rep.failed() {
		return nil, rep.rejection()
	}
	if client == nil {
		// CheckManifest: nothing failed, but the client was not checked.
		rep.Outcome = OutcomePassed
		return nil, nil
	}
	if start == nil {
		// A schema-valid manifest has a start_url, and a failed origin
		// stage is a rejection above.
		return nil, errors.New("resolver: no start_url after the origins stage passed")
	}
	app := &Miniapp{Manifest: m, ManifestURL: manifestURL, Client: client, Origin: origin.Of(manifestURL), StartURL: start, LoadURL: start, Report: rep}
	if client.Confidential() {
		app.AuthURL, app.LoadURL = auth, auth
	}
	rep.Outcome = OutcomeAccepted
	rep.Miniapp = &Summary{Name: m.Name, Origin: app.Origin.String(), ManifestURL: manifestURL.String(), StartURL: start.String(),
		LoadURL: app.LoadURL.String(), ClientID: m.OAuth.ClientID, ClientType: client.ClientType, AllowedOrigins: client.AllowedOrigins}
	if app.AuthURL != nil {
		rep.Miniapp.AuthURL = app.AuthURL.String()
	}
	return app, nil
}

// originsStage checks start_url and oauth.auth_url (docs/service.md §4.3 step 3), each
// when the schema left it usable. Without a client configuration (client
// nil) only the same-origin rules run; haveSource says whether one was to
// be had, for the note that says so.
func (r *Resolver) originsStage(rep *Report, mv manifestView, manifestURL *url.URL, client *ClientConfig, haveSource bool) (start, auth *url.URL) {
	switch {
	case manifestURL == nil:
		rep.skip(StageOrigins, "start_url and oauth.auth_url resolve against the manifest URL, and there is no usable one")
		return nil, nil
	case !mv.startOK && !mv.authOK:
		rep.skip(StageOrigins, "the manifest has no usable start_url or oauth.auth_url: see the schema stage")
		return nil, nil
	}
	mo := origin.Of(manifestURL)
	var reasons []Reason
	var notes []string
	if mv.startOK {
		var rs []Reason
		start, rs = checkMember(mo, manifestURL, client, "/start_url", mv.m.StartURL, CodeStartURLInvalid, CodeStartURLCrossOrigin, CodeStartURLNotAllowed)
		reasons = append(reasons, rs...)
	} else {
		notes = append(notes, "start_url not checked: it is missing or invalid: see the schema stage")
	}
	if mv.authOK {
		var rs []Reason
		auth, rs = checkMember(mo, manifestURL, client, "/oauth/auth_url", mv.m.OAuth.AuthURL, CodeAuthURLInvalid, CodeAuthURLCrossOrigin, CodeAuthURLNotAllowed)
		reasons = append(reasons, rs...)
	}
	switch {
	case client != nil:
	case haveSource:
		notes = append(notes, "allowed_origins not checked: the client configuration is unusable: see the client stage")
	default:
		notes = append(notes, "allowed_origins not checked: no client configuration was given")
	}
	if len(reasons) > 0 {
		rep.fail(reasons)
		sr := rep.stage(StageOrigins)
		sr.Notes = append(sr.Notes, notes...)
		return start, auth
	}
	if client == nil {
		// Only the same-origin rules ran: "ok" would claim allowed_origins
		// passed too, so the stage stays skipped and says what ran.
		rep.skip(StageOrigins, "only the same-origin rules of start_url and oauth.auth_url ran, and passed; "+strings.Join(notes, "; "))
		return start, auth
	}
	var found []string
	if start != nil {
		found = append(found, "start_url "+start.String())
	}
	if auth != nil {
		found = append(found, "auth_url "+auth.String())
	}
	rep.ok(StageOrigins, append(found, notes...)...)
	return start, auth
}

// clientStage fetches, parses and checks the client configuration. It
// returns nil and no error when the stage failed (the resolve goes on
// without allowed_origins), and an error only when the resolve ends: an
// undecided download, or an internal failure.
func (r *Resolver) clientStage(ctx context.Context, rep *Report, m *Manifest, authDeclared bool, source clientSource) (*ClientConfig, error) {
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
		if se.undecided {
			rep.skipAfter(StageClient, "the client configuration could not be had")
			return nil, rep.undecided(se)
		}
		if se.status != 0 {
			sr.Status = se.status
		}
		rep.fail([]Reason{se.reason})
		return nil, nil
	}
	sr.Status, sr.Cache, sr.Redirects = got.status, got.cache, got.redirects
	if rep.Offline {
		sr.Notes = append(sr.Notes, "offline: the client configuration was read from a file")
	}
	body := bytes.TrimPrefix(got.body, utf8BOM)
	v, reason := decodeJSON(StageClient, "client configuration", body)
	if reason != nil {
		rep.fail([]Reason{*reason})
		return nil, nil
	}
	if reasons := schemaReasons(r.schemas.client, StageClient, "client configuration", v); len(reasons) > 0 {
		rep.fail(reasons)
		return nil, nil
	}
	var c ClientConfig
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("resolver: decoding a schema-valid client configuration: %w", err)
	}
	for i, e := range c.AllowedOrigins {
		if _, err := origin.Parse(e); err != nil {
			sr.Notes = append(sr.Notes, fmt.Sprintf("allowed_origins[%d] matches nothing: %v", i, err))
		}
	}
	if c.Confidential() && !authDeclared {
		rep.fail([]Reason{{Stage: StageClient, Code: CodeAuthURLRequired, Pointer: "/oauth/auth_url",
			Message: fmt.Sprintf("the client %q is confidential, and the manifest has no oauth.auth_url", m.OAuth.ClientID),
			Hint:    "add oauth.auth_url to the manifest: the page on the Miniapp's origin that starts the authorization on its backend, such as \"/auth/start\"; or register a public client for this Miniapp"}})
		return &c, nil
	}
	sr.Outcome = OutcomeOK
	return &c, nil
}

// checkMember resolves a URL member of the manifest against the manifest
// URL as a browser does, and checks its origin against the manifest's origin
// and, when c is not nil, the client's allowed_origins (docs/service.md §4.3 step 3). Each failed check is a
// reason of its own.
func checkMember(mo origin.Origin, base *url.URL, c *ClientConfig, ptr, raw, codeInvalid, codeCross, codeNotAllowed string) (*url.URL, []Reason) {
	// c is nil when there is no client configuration: only the same-origin
	// rule runs.
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
	if c != nil && !origin.InList(o, c.AllowedOrigins) {
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

// downloadFailed ends the report for a failed download of the manifest.
func (r *Resolver) downloadFailed(rep *Report, se *stageError) error {
	if se.undecided {
		return rep.undecided(se)
	}
	if se.status != 0 {
		rep.stage(se.reason.Stage).Status = se.status
	}
	return rep.reject([]Reason{se.reason})
}
