package demoapps

import (
	"encoding/json"
	"html/template"
	"image/color"
	"net/http"
)

// StartPublic serves the public demo on addr ("" for any loopback port).
// Its start page signs in through the host's bridge (button #bridge-signin)
// or by navigating to the service itself (button #signin), with PKCE made
// in the page; /callback shows the authorization response it received and
// stops there: the demo shows the host's catching of the navigation. The
// Miniapp `miniapp-host new` writes goes on and redeems its code from the
// page, which the token endpoint allows by CORS for the client's allowed
// origins (docs/your-miniapp.md).
func StartPublic(cfg Config, addr string) (*App, error) {
	return start(addr, func(origin string) http.Handler {
		conf, _ := json.Marshal(map[string]string{
			"client_id": cfg.ClientID, "authorize": cfg.AuthURL, "redirect_uri": origin + "/callback",
			"scope": cfg.Scope, "resource": cfg.Resource, "authorization_details": cfg.AuthorizationDetails,
		})
		data := struct {
			Name   string
			Config template.JS
		}{cfg.Name, template.JS(conf)}
		mux := http.NewServeMux()
		// GET /miniapp.webmanifest
		mux.HandleFunc("GET /miniapp.webmanifest", manifest(cfg, ""))
		serveIcons(mux, "P", color.RGBA{0x1b, 0x7f, 0x3b, 0xff})
		// GET /{$}: the start page.
		mux.HandleFunc("GET /{$}", page(publicHome, data))
		// GET /callback: the redirect_uri of way 3.
		mux.HandleFunc("GET /callback", page(publicCallback, data))
		return mux
	})
}

func page(t *template.Template, data any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = t.Execute(w, data)
	}
}

var publicHome = template.Must(template.New("home").Parse(`<!doctype html><html><head><meta charset="utf-8"><title>{{.Name}}</title>` + style + `</head>
<body><h1>{{.Name}}</h1>
<p id="status">Not signed in.</p>
<button id="bridge-signin">Sign in with the host</button>
<button id="signin">Sign in (navigate)</button>
<pre id="result"></pre>
<script>
"use strict";
const conf = {{.Config}};
const show = (state, text) => { document.body.dataset.state = state; document.getElementById("result").textContent = text; };
function b64url(bytes) { return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""); }
document.getElementById("bridge-signin").addEventListener("click", async () => {
  if (!window.miniapp || !window.miniapp.inHost) { show("error", "not in a host"); return; }
  const req = { scope: conf.scope };
  if (conf.authorization_details) req.authorization_details = JSON.parse(conf.authorization_details);
  try {
    const tok = await window.miniapp.authorize(req);
    document.getElementById("status").textContent = "Signed in through the host.";
    show("signed-in", JSON.stringify({ token_type: tok.token_type, scope: tok.scope, has_access_token: !!tok.access_token }));
  } catch (e) {
    show(e.code === "access_denied" ? "denied" : "error", e.code + ": " + e.message);
  }
});
document.getElementById("signin").addEventListener("click", async () => {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem("demo_state", state);
  sessionStorage.setItem("demo_verifier", verifier);
  const u = new URL(conf.authorize);
  u.search = new URLSearchParams({ response_type: "code", client_id: conf.client_id, redirect_uri: conf.redirect_uri,
    scope: conf.scope, state: state, code_challenge: challenge, code_challenge_method: "S256" });
  if (conf.resource) u.searchParams.set("resource", conf.resource);
  if (conf.authorization_details) u.searchParams.set("authorization_details", conf.authorization_details);
  location.href = u.toString();
});
</script></body></html>`))

var publicCallback = template.Must(template.New("callback").Parse(`<!doctype html><html><head><meta charset="utf-8"><title>{{.Name}}</title>` + style + `</head>
<body><h1>{{.Name}}</h1><p id="status"></p><pre id="result"></pre>
<script>
"use strict";
const q = new URLSearchParams(location.search);
const ok = q.get("state") !== null && q.get("state") === sessionStorage.getItem("demo_state");
let state;
if (!ok) state = "state-mismatch";
else if (q.get("error")) state = q.get("error") === "access_denied" ? "denied" : "error";
else if (q.get("code")) state = "code";
else state = "error";
document.body.dataset.state = state;
document.getElementById("status").textContent = { "code": "Authorization code received.", "denied": "Access denied.", "state-mismatch": "The state does not match." }[state] || "Error.";
document.getElementById("result").textContent = JSON.stringify({ state_ok: ok, iss: q.get("iss"), error: q.get("error"), has_code: q.has("code") });
</script></body></html>`))
