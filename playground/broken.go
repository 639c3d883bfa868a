package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"time"

	"github.com/miniapp-host/miniapp-host/resolver"
)

// Kinds of launcher entries.
const (
	KindDemo      = "demo"      // a demo Miniapp that resolves and signs in
	KindBroken    = "broken"    // a deliberately broken demo Miniapp that the resolver rejects
	KindPublished = "published" // published on the dashboard (Config.Published)
)

// Entry is one Miniapp of the launcher's list.
type Entry struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Origin      string `json:"origin"`
	Kind        string `json:"kind"`
	Description string `json:"description,omitempty"`
	// Expect is the rejection a broken Miniapp must get; nil for others.
	Expect *Expectation `json:"expect,omitempty"`
}

// Expectation is the first reason a broken Miniapp's report must carry.
type Expectation struct {
	Stage   resolver.Stage `json:"stage"`
	Code    string         `json:"code"`
	Pointer string         `json:"pointer,omitempty"`
}

// The broken demo Miniapps (docs/playground.md), by id; their client ids are
// the same.
const (
	BrokenCrossOrigin   = "broken-cross-origin"   // start_url on another origin
	BrokenUnknownMember = "broken-unknown-member" // a member the manifest schema does not know
	BrokenUnregistered  = "broken-unregistered"   // a client_id the dashboard does not know
	BrokenNoAuthURL     = "broken-no-auth-url"    // a confidential client without oauth.auth_url
)

// BrokenKinds lists the broken Miniapps in the order Addrs.Broken gives
// their addresses.
func BrokenKinds() []string {
	return []string{BrokenCrossOrigin, BrokenUnknownMember, BrokenUnregistered, BrokenNoAuthURL}
}

// brokenSpec is what makes one broken Miniapp broken.
type brokenSpec struct {
	name, why string
	expect    Expectation
	// register says how its client is registered: "" not at all,
	// "public" or "confidential".
	register string
	// manifest edits the otherwise valid manifest; other is another
	// Miniapp's origin (the public demo's).
	manifest func(m map[string]any, other string)
	// extraOrigin adds other to the client's allowed_origins, so that
	// the only fault left is the one the Miniapp is about.
	extraOrigin bool
}

var brokenSpecs = map[string]brokenSpec{
	BrokenCrossOrigin: {
		name: "Broken: start_url on another origin",
		why: "Its start_url points at the public demo's origin. Even though the client lists that origin in allowed_origins, " +
			"a start_url must be on the manifest's own origin: the manifest's origin is the Miniapp's identity.",
		expect:   Expectation{Stage: resolver.StageOrigins, Code: resolver.CodeStartURLCrossOrigin, Pointer: "/start_url"},
		register: "public", extraOrigin: true,
		manifest: func(m map[string]any, other string) { m["start_url"] = other + "/" },
	},
	BrokenUnknownMember: {
		name: "Broken: unknown manifest member",
		why:  `Its manifest carries "permissions", a member the manifest schema does not have (additionalProperties: false).`,
		expect: Expectation{Stage: resolver.StageSchema, Code: "schema-additional-properties",
			Pointer: "/permissions"},
		register: "public",
		manifest: func(m map[string]any, _ string) { m["permissions"] = []string{"bank_account"} },
	},
	BrokenUnregistered: {
		name:   "Broken: unregistered client",
		why:    "Its oauth.client_id is not registered on the dashboard, which answers 404 for it.",
		expect: Expectation{Stage: resolver.StageClient, Code: resolver.CodeNotRegistered, Pointer: "/oauth/client_id"},
	},
	BrokenNoAuthURL: {
		name: "Broken: confidential client without auth_url",
		why: "Its client is confidential, so its backend must start the sign-in at oauth.auth_url; " +
			"the manifest declares none.",
		expect:   Expectation{Stage: resolver.StageClient, Code: resolver.CodeAuthURLRequired, Pointer: "/oauth/auth_url"},
		register: "confidential",
	},
}

// brokenApp is one running broken Miniapp.
type brokenApp struct {
	entry Entry
	srv   *http.Server
}

func (b *brokenApp) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return b.srv.Shutdown(ctx)
}

// startBroken serves each broken Miniapp on its own loopback origin and
// registers the clients that must exist for its fault to be the only one.
func startBroken(ctx context.Context, w *world, addrs []string) ([]*brokenApp, error) {
	var apps []*brokenApp
	for i, id := range BrokenKinds() {
		addr := ""
		if i < len(addrs) {
			addr = addrs[i]
		}
		spec := brokenSpecs[id]
		ln, err := net.Listen("tcp", orFree(addr))
		if err != nil {
			for _, a := range apps {
				a.close()
			}
			return nil, fmt.Errorf("playground: listen for %s: %w", id, err)
		}
		origin := "http://" + ln.Addr().String()
		other := w.public.Origin
		m := map[string]any{"id": id, "name": spec.name, "short_name": "Broken", "start_url": "/",
			"display": "standalone", "oauth": map[string]any{"client_id": id}}
		if spec.manifest != nil {
			spec.manifest(m, other)
		}
		expect := spec.expect
		a := &brokenApp{entry: Entry{ID: id, Name: spec.name, Origin: origin, Kind: KindBroken, Description: spec.why, Expect: &expect}}
		a.srv = &http.Server{Handler: brokenHandler(m, spec), ReadHeaderTimeout: 5 * time.Second}
		go a.srv.Serve(ln)
		apps = append(apps, a)
		if spec.register != "" {
			var extra []string
			if spec.extraOrigin {
				extra = []string{other}
			}
			if err := w.register(ctx, id, spec.name, spec.register == "confidential", origin, extra...); err != nil {
				for _, a := range apps {
					a.close()
				}
				return nil, err
			}
		}
	}
	return apps, nil
}

var brokenPage = template.Must(template.New("broken").Parse(`<!doctype html><html><head><meta charset="utf-8"><title>{{.Name}}</title></head>
<body><h1>{{.Name}}</h1><p id="why">{{.Why}}</p>
<p>The resolver must reject it at stage <code>{{.Stage}}</code> with code <code id="code">{{.Code}}</code>.</p></body></html>`))

// brokenHandler serves a broken Miniapp: its manifest and a page that says
// what is wrong with it.
func brokenHandler(manifest map[string]any, spec brokenSpec) http.Handler {
	body, err := json.Marshal(manifest)
	if err != nil {
		panic(err) // a map of strings and slices of strings always marshals
	}
	mux := http.NewServeMux()
	// GET /miniapp.webmanifest: the broken manifest.
	mux.HandleFunc("GET "+resolver.ManifestPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/manifest+json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(body)
	})
	// GET /{$}: a page saying why it is broken, for a tab opened by hand.
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'")
		_ = brokenPage.Execute(w, map[string]any{"Name": spec.name, "Why": spec.why, "Stage": spec.expect.Stage,
			"Code": spec.expect.Code})
	})
	return mux
}
