// Signs in as a public OAuth client and shows the bank account the subject
// chose to share. The same code runs in Miniapp Host and in a plain browser
// tab:
//   - in the host, window.miniapp.authorize() asks the host: it shows its own
//     consent screen, redeems the code with PKCE and hands over the tokens;
//   - in a tab, the page runs the authorization code flow with PKCE itself:
//     it goes to the service's sign-in and consent pages, comes back here
//     with a code, and redeems it at the token endpoint (the service answers
//     CORS for the origins in this client's allowed_origins).
"use strict";

// What this Miniapp asks for: an OpenID Connect sign-in and read access to
// one bank account of the subject's choice (RFC 9396 authorization_details).
const REQUEST = {
  scope: "openid",
  authorization_details: [
    { type: "bank_account", actions: ["read"], subject: { type: "profile" }, selection: { max: 1 } },
  ],
};

// sessionStorage keys: the signed-in state (kept across reloads, gone with
// the tab) and a redirect sign-in in progress (its state and PKCE verifier).
const SESSION = "miniapp.session";
const PENDING = "miniapp.pending";

const $ = (id) => document.getElementById(id);
const inHost = () => Boolean(window.miniapp && window.miniapp.inHost);

function show(state, status) {
  document.body.dataset.state = state;
  $("status").textContent = status;
  $("signin").hidden = state === "signed-in";
  $("signout").hidden = state !== "signed-in";
  if (state !== "signed-in") $("account").hidden = true;
}

function fail(err) {
  const denied = err && err.code === "access_denied";
  show(denied ? "denied" : "error", denied ? "Access denied: nothing was shared." : "The sign-in failed.");
  $("error").hidden = false;
  $("error").textContent = err && err.code ? err.code + ": " + err.message : String(err && err.message || err);
}

function oauthError(code, description) {
  const e = new Error(description || code);
  e.code = code;
  return e;
}

async function getJSON(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(url + " answered " + r.status);
  return r.json();
}

// The manifest names the client; config.json names the authorization
// service (its issuer).
const manifestURL = () => new URL("miniapp.webmanifest", location.href).href;
const manifest = () => getJSON(manifestURL());
const config = () => getJSON(new URL("config.json", location.href).href);

// OpenID Connect discovery; the issuer must be the one asked for.
async function discovery(issuer) {
  const d = await getJSON(issuer.replace(/\/+$/, "") + "/.well-known/openid-configuration");
  if (d.issuer !== issuer) throw new Error("discovery names the issuer " + d.issuer + ", not " + issuer);
  return d;
}

// The scopes' resource is the service's {base_url}, whose grant endpoint
// is {base_url}/authorization.
const resourceOf = (d) => d.grant_endpoint.replace(/\/authorization$/, "");

function b64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// The ID token's claims, for display: it came from the token endpoint
// itself, and this page grants nothing on its word.
function claimsOf(idToken) {
  try {
    return JSON.parse(atob(idToken.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  } catch {
    return {};
  }
}

function signedIn(tok, via) {
  const s = { via, scope: tok.scope || "", authorization_details: tok.authorization_details || [], sub: claimsOf(tok.id_token || "").sub };
  sessionStorage.setItem(SESSION, JSON.stringify(s));
  render(s);
}

function render(s) {
  show("signed-in", (s.sub ? "Signed in as " + s.sub : "Signed in") + (s.via === "host" ? " through Miniapp Host." : " in this tab."));
  const dl = $("detail");
  dl.replaceChildren();
  const row = (k, v) => {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = k;
    dd.textContent = v;
    dl.append(dt, dd);
  };
  const acct = s.authorization_details.find((d) => d.type === "bank_account");
  if (acct) {
    row("accounts", (acct.identifiers || []).join(", ") || "none chosen");
    row("actions", (acct.actions || []).join(", "));
  } else {
    row("bank account", "not granted");
  }
  row("scope", s.scope);
  $("account").hidden = false;
}

async function signInWithHost() {
  signedIn(await window.miniapp.authorize(REQUEST), "host");
}

async function signInWithRedirect() {
  const [m, c] = await Promise.all([manifest(), config()]);
  const d = await discovery(c.issuer);
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
  // The redirect URI is start_url, resolved as a host resolves it; `dev`
  // registers it (docs/your-miniapp.md).
  const redirectURI = new URL(m.start_url, manifestURL()).href;
  sessionStorage.setItem(PENDING, JSON.stringify({ state, verifier, redirectURI }));
  const u = new URL(d.authorization_endpoint);
  u.search = new URLSearchParams({
    response_type: "code", client_id: m.oauth.client_id, redirect_uri: redirectURI, scope: REQUEST.scope,
    resource: resourceOf(d), authorization_details: JSON.stringify(REQUEST.authorization_details),
    state, code_challenge: challenge, code_challenge_method: "S256",
  });
  location.assign(u.href);
}

// finishRedirect reads the authorization response (RFC 6749 section 4.1.2,
// RFC 9207's iss) and redeems the code with the PKCE verifier.
async function finishRedirect(q) {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  // The code leaves the address bar and the history at once.
  history.replaceState(null, "", pending ? pending.redirectURI : location.pathname);
  if (!pending || q.get("state") !== pending.state) throw new Error("the response's state is not this tab's: sign in again");
  const [m, c] = await Promise.all([manifest(), config()]);
  const d = await discovery(c.issuer);
  if (q.get("iss") !== d.issuer) throw new Error("the response comes from " + q.get("iss") + ", not from " + d.issuer);
  if (q.get("error")) throw oauthError(q.get("error"), q.get("error_description"));
  const r = await fetch(d.token_endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code", code: q.get("code"), redirect_uri: pending.redirectURI,
      client_id: m.oauth.client_id, code_verifier: pending.verifier,
    }),
  });
  const tok = await r.json();
  if (!r.ok) throw oauthError(tok.error, tok.error_description);
  signedIn(tok, "redirect");
}

async function main() {
  const m = await manifest();
  document.title = $("title").textContent = m.name;
  const q = new URLSearchParams(location.search);
  if (q.has("code") || q.has("error")) return finishRedirect(q);
  const saved = JSON.parse(sessionStorage.getItem(SESSION) || "null");
  if (saved) return render(saved);
  show("signed-out", inHost()
    ? "Not signed in. Sign in shows Miniapp Host's consent screen."
    : "Not signed in. Sign in goes to the authorization service's sign-in page and comes back.");
}

$("signin").addEventListener("click", () => {
  $("error").hidden = true;
  (inHost() ? signInWithHost() : signInWithRedirect()).catch(fail);
});
$("signout").addEventListener("click", () => {
  sessionStorage.removeItem(SESSION);
  show("signed-out", "Signed out.");
});
main().catch(fail);
