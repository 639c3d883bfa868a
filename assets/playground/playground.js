// The playground's launcher and flow inspector. Everything shown comes from
// the playground's API or the automation channel and is written with
// textContent (never innerHTML), so no value can become markup.
"use strict";

(function () {
  // The automation token arrives in the URL's fragment (never sent to a
  // server); it is kept for this tab only and removed from the address bar.
  let token = "";
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("token")) {
    token = hash.get("token");
    sessionStorage.setItem("playground-token", token);
    history.replaceState(null, "", location.pathname);
  } else {
    token = sessionStorage.getItem("playground-token") || "";
  }

  const $ = (id) => document.getElementById(id);

  // el builds an element; attrs are set as attributes (class, data-*,
  // aria-*), children are nodes or strings (text nodes).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      e.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }

  // safeLink returns a link only for an absolute http(s) URL.
  function safeLink(text, raw) {
    let u;
    try { u = new URL(raw); } catch (_) { return null; }
    if (u.protocol !== "http:" && u.protocol !== "https:") return null;
    const a = el("a", { target: "_blank", rel: "noopener noreferrer" }, text);
    a.href = u.href;
    return a;
  }

  function fail(message) {
    const f = $("fatal");
    f.textContent = message;
    f.hidden = false;
  }

  async function api(method, path, body) {
    const init = { method, headers: { Authorization: "Bearer " + token } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    let data = null;
    try { data = await resp.json(); } catch (_) { /* not JSON */ }
    if (!resp.ok) {
      const err = new Error((data && data.error && data.error.message) || resp.statusText);
      err.code = data && data.error && data.error.code;
      err.status = resp.status;
      throw err;
    }
    return data;
  }

  // ---- Miniapps --------------------------------------------------------

  const entries = new Map(); // origin + " " + id -> entry

  function renderEntry(e) {
    entries.set(e.origin + " " + e.id, e);
    const li = el("li", { "data-kind": e.kind, "data-id": e.id },
      el("div", { class: "entry-name" }, e.name || e.id),
      el("div", { class: "entry-origin mono" }, e.origin + "  ·  " + e.id),
      e.description ? el("div", { class: "entry-desc" }, e.description) : null,
      e.expect ? el("div", { class: "expect" }, "Expected: stage " + e.expect.stage + ", code " + e.expect.code +
        (e.expect.pointer ? " at " + e.expect.pointer : "")) : null);
    const launch = el("button", { type: "button", class: "launch", "data-id": e.id }, "Launch");
    launch.addEventListener("click", () => launchMiniapp(e.origin, e.id));
    const reset = el("button", { type: "button", class: "secondary reset", "data-id": e.id }, "Reset storage");
    reset.addEventListener("click", () => resetStorage(e.origin, e.id, li));
    li.append(el("div", { class: "buttons" }, launch, reset));
    return li;
  }

  async function loadMiniapps() {
    const data = await api("GET", "/api/miniapps");
    const lists = { demo: $("list-demo"), broken: $("list-broken"), published: $("list-published") };
    for (const l of Object.values(lists)) l.replaceChildren();
    for (const e of data.miniapps) {
      const list = lists[e.kind];
      if (list) list.append(renderEntry(e));
    }
    const note = $("published-note");
    if (!data.published_source) {
      note.textContent = "Not connected yet: the dashboard has no list of published Miniapps to read. Open one by origin and id below.";
    } else if (data.published_error) {
      note.textContent = data.published_error;
    } else if (!lists.published.children.length) {
      note.textContent = "No Miniapp is published on the dashboard.";
    } else {
      note.textContent = "";
    }
  }

  // ---- Launches and reports -------------------------------------------

  function renderReason(r) {
    return el("div", { class: "reason", "data-code": r.code },
      el("span", { class: "code mono" }, r.code),
      r.pointer ? el("span", { class: "mono pointer" }, " at " + r.pointer) : null,
      el("div", { class: "message" }, r.message),
      r.hint ? el("div", { class: "hint" }, r.hint) : null);
  }

  function renderReport(res) {
    const rep = res.report;
    const entry = entries.get(rep.origin + " " + rep.id);
    const li = el("li", { class: "launch", "data-id": rep.id, "data-outcome": rep.outcome },
      el("div", { class: "launch-head" },
        el("span", { class: "title" }, (rep.miniapp && rep.miniapp.name) || (entry && entry.name) || rep.id),
        el("span", { class: "badge", "data-outcome": rep.outcome }, rep.outcome),
        el("span", { class: "mono muted" }, rep.origin + " · " + rep.id)));
    const table = el("table", { class: "stages" });
    for (const s of rep.stages) {
      const detail = el("td", { class: "stage-detail" });
      if (s.url) detail.append(el("div", { class: "note mono" }, "GET " + s.url + (s.status ? " → " + s.status : "") +
        (s.cache ? " (" + s.cache + ")" : "") + (s.redirects ? ", " + s.redirects + " redirect(s)" : "")));
      for (const n of s.notes || []) detail.append(el("div", { class: "note" }, n));
      for (const r of s.reasons || []) detail.append(renderReason(r));
      table.append(el("tr", { "data-stage": s.stage, "data-outcome": s.outcome },
        el("td", { class: "stage-name" }, s.stage),
        el("td", { class: "stage-outcome" }, el("span", { class: "badge", "data-outcome": s.outcome }, s.outcome)),
        detail));
    }
    li.append(table);
    const w = res.window;
    const win = el("div", { class: "window", "data-opened": String(!!w.opened), "data-available": String(!!w.available) },
      el("span", { class: "window-message" }, w.message));
    if (w.tab_url) {
      const a = safeLink("Open in a browser tab", w.tab_url);
      if (a) {
        a.classList.add("tab-link");
        win.append(" ", a);
      }
    }
    li.append(win);
    return li;
  }

  async function launchMiniapp(origin, id) {
    try {
      const res = await api("POST", "/api/launch", { origin, id });
      $("launches-empty").hidden = true;
      $("launches").prepend(renderReport(res));
    } catch (e) {
      const li = el("li", { class: "launch", "data-outcome": "error" },
        el("div", { class: "launch-head" }, el("span", { class: "title" }, id),
          el("span", { class: "badge", "data-outcome": "failed" }, "error")),
        el("div", { class: "window" }, e.message));
      $("launches-empty").hidden = true;
      $("launches").prepend(li);
    }
  }

  async function resetStorage(origin, id, li) {
    let text;
    try {
      text = (await api("POST", "/api/reset", { origin, id })).message;
    } catch (e) {
      text = e.code === "no_window"
        ? "Reset storage is unavailable: this process has no window. In a browser tab, clear the site data of " + origin + " instead."
        : "Reset failed: " + e.message;
    }
    let out = li.querySelector(".reset-result");
    if (!out) {
      out = el("div", { class: "note reset-result" });
      li.append(out);
    }
    out.textContent = text;
  }

  // ---- Session, subjects ----------------------------------------------

  async function loadSession() {
    const s = await api("GET", "/api/session");
    const ws = $("window-status");
    ws.textContent = s.window.message;
    ws.hidden = s.window.available;
    const dl = $("services");
    dl.replaceChildren();
    const rows = [["launcher", s.launcher_origin], ["automation channel", s.automation_url]];
    for (const [k, v] of Object.entries(s.services)) rows.push([k, v]);
    for (const [k, v] of rows) dl.append(el("dt", {}, k), el("dd", { class: "mono" }, v));
    return s;
  }

  async function loadSubjects() {
    const data = await api("GET", "/api/subjects");
    const sel = $("subject");
    sel.replaceChildren();
    for (const s of data.subjects) {
      const o = el("option", {}, s.name + " (" + s.id + ")");
      o.value = s.id;
      o.selected = s.id === data.current;
      sel.append(o);
    }
  }

  $("subject").addEventListener("change", async (ev) => {
    try {
      await api("POST", "/api/subject", { subject: ev.target.value });
    } catch (e) {
      fail("Could not switch the subject: " + e.message);
    }
  });

  $("open-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target;
    launchMiniapp(f.elements.origin.value.trim(), f.elements.id.value.trim());
  });

  // ---- Flow inspector ---------------------------------------------------

  const seen = new Set();

  function list(v) { return Array.isArray(v) ? v.join(" ") : ""; }
  function types(details) {
    return Array.isArray(details) ? details.map((d) => d && d.type).filter(Boolean).join(", ") : "";
  }

  // summary is one line per event kind (docs/automation.md, docs/playground.md).
  function summary(kind, d) {
    switch (kind) {
      case "resolve.stage":
        return d.id + " @ " + d.origin + ": " + d.stage + (d.ok ? " passed" : " failed" +
          (d.code ? " — " + d.code : "") + (d.pointer ? " at " + d.pointer : "") + (d.hint ? ". Hint: " + d.hint : ""));
      case "navigation":
        return d.decision + " " + d.url + " — rule " + d.rule;
      case "consent.shown":
        return "client " + d.client_id + " asks" + (d.scopes ? " scopes " + list(d.scopes) : "") +
          (d.authorization_details ? " details " + types(d.authorization_details) : "") +
          (d.org_id ? " for " + d.org_id : "") + (d.accounts ? "; accounts " + list(d.accounts) : "");
      case "consent.decided":
        return d.decision + (d.account ? " with account " + d.account : "");
      case "code.issued":
        return "code for " + d.client_id + " → " + d.redirect_uri + " (fingerprint " + d.fingerprint + ")";
      case "token.issued":
        return d.token_type + " token for " + d.client_id + (d.scope ? " scope " + d.scope : "") +
          (d.expires_in ? ", expires in " + d.expires_in + " s" : "") + " (fingerprint " + d.fingerprint + ")";
      case "token.claims": {
        if (d.error) return d.error;
        const c = d.claims || {};
        return "sub " + c.sub + ", aud " + list([].concat(c.aud || [])) + (c.scope ? ", scope " + c.scope : "") +
          (c.org_id ? ", org " + c.org_id : "") + (c.exp ? ", exp " + new Date(c.exp * 1000).toISOString() : "");
      }
      case "grant": {
        if (d.error) return "grant of " + d.fingerprint + ": " + d.error;
        const g = d.grant || {};
        if (d.status !== 200) return "GET /authorization → " + d.status + " " + (g.code || "");
        return "GET /authorization → 200: subject " + g.subject + ", scopes " + list(g.scopes) +
          (g.orgId ? ", org " + g.orgId : "") + (g.authorizationDetails && g.authorizationDetails.length ? ", details " + types(g.authorizationDetails) : "");
      }
      case "cookies.synced":
        return d.origin + ": " + list(d.names);
      case "bridge.call":
        return d.method + " " + d.decision + (d.code ? " (" + d.code + ")" : "");
      default:
        return "";
    }
  }

  function addEvent(env) {
    if (!env || env.type !== "event" || seen.has(env.seq)) return;
    seen.add(env.seq);
    const d = env.data || {};
    const attrs = { "data-kind": env.kind, "data-seq": env.seq };
    if (typeof d.ok === "boolean") attrs["data-ok"] = String(d.ok);
    if (typeof d.decision === "string") attrs["data-decision"] = d.decision;
    const t = new Date(env.time);
    const li = el("li", attrs,
      el("div", { class: "ev-head" },
        el("span", { class: "ev-seq" }, "#" + env.seq),
        el("span", { class: "ev-time mono" }, isNaN(t) ? "" : t.toISOString().slice(11, 23)),
        el("span", { class: "ev-kind" }, env.kind)),
      el("div", { class: "ev-summary" }, summary(env.kind, d)),
      el("details", { class: "ev-detail" }, el("summary", {}, "data"), el("pre", {}, JSON.stringify(d, null, 2))));
    // Newest first; events of a backfill may arrive out of order.
    const tl = $("timeline");
    let before = null;
    for (const c of tl.children) {
      if (Number(c.getAttribute("data-seq")) < env.seq) { before = c; break; }
    }
    tl.insertBefore(li, before);
  }

  $("clear-timeline").addEventListener("click", () => $("timeline").replaceChildren());

  let retry = 500;
  function connect(url) {
    const state = $("channel");
    let ws;
    try {
      ws = new WebSocket(url, ["miniapp-automation.v1", "token." + token]);
    } catch (e) {
      state.dataset.state = "closed";
      state.textContent = "automation channel: " + e.message;
      return;
    }
    ws.addEventListener("open", async () => {
      retry = 500;
      state.dataset.state = "open";
      state.textContent = "automation channel: connected";
      // Backfill what happened before this connection; seq dedups.
      try {
        for (const env of (await api("GET", "/api/events")).events) addEvent(env);
      } catch (_) { /* the live stream still works */ }
    });
    ws.addEventListener("message", (m) => {
      let env;
      try { env = JSON.parse(m.data); } catch (_) { return; }
      addEvent(env);
    });
    ws.addEventListener("close", () => {
      state.dataset.state = "closed";
      state.textContent = "automation channel: disconnected, retrying";
      setTimeout(() => connect(url), retry);
      retry = Math.min(retry * 2, 10000);
    });
  }

  async function main() {
    if (!token) {
      fail("This page needs the automation token: open the launcher URL that `miniapp-host playground` printed (it ends in #token=…).");
      return;
    }
    try {
      const s = await loadSession();
      await Promise.all([loadMiniapps(), loadSubjects()]);
      connect(s.automation_url);
      document.body.dataset.ready = "true";
    } catch (e) {
      fail("The playground did not answer: " + e.message);
    }
  }
  main();
})();
