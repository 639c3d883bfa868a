// The playground's launcher and flow inspector. Everything shown comes from
// the playground's API or the automation channel and is written with
// textContent (never innerHTML), so no value can become markup.
"use strict";

(function () {
  // The automation token arrives in the URL's fragment (never sent to a
  // server); it is kept for this tab only and removed from the address bar.
  let token = "";
  // Read before the address bar is cleaned below (keepEvents).
  const search = new URLSearchParams(location.search);
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
      if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      // A string is appended as text the engine makes itself: no
      // JavaScript wrapper of a text node is made (see setText).
      e.append(c);
    }
    return e;
  }

  // fill replaces node's children, skipping null and undefined (which
  // replaceChildren would write as text).
  function fill(node, ...children) {
    node.replaceChildren(...children.filter((c) => c !== undefined && c !== null && c !== false));
  }

  // str turns any JSON value into text for textContent.
  function str(v) {
    if (v === undefined || v === null) return "";
    return typeof v === "string" ? v : JSON.stringify(v);
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
    notice("fatal", message);
  }

  async function apiFetch(method, path, body) {
    const init = { method, headers: { Authorization: "Bearer " + token } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(path, init);
  }

  // apiError reads the API's {"error":{"code","message"}} from a failed
  // answer; anything else becomes its status line.
  async function apiError(resp) {
    let data = null;
    try { data = await resp.json(); } catch (_) { /* not JSON */ }
    const err = new Error((data && data.error && data.error.message) || (resp.status + " " + resp.statusText));
    err.code = (data && data.error && data.error.code) || "";
    err.status = resp.status;
    err.body = data;
    return err;
  }

  async function api(method, path, body) {
    const resp = await apiFetch(method, path, body);
    if (!resp.ok) throw await apiError(resp);
    return resp.json();
  }

  // download saves text as a file the browser offers to the user.
  function download(name, text, type) {
    const url = URL.createObjectURL(new Blob([text], { type }));
    const a = el("a", { download: name });
    a.href = url;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  // copyText puts text on the clipboard, or selects it for the user to
  // copy when the page may not write the clipboard.
  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (_) {
      const ta = el("textarea", { readonly: "", "aria-hidden": "true" });
      ta.value = text;
      ta.style.position = "fixed";
      ta.style.opacity = "0";
      document.body.append(ta);
      ta.select();
      let ok = false;
      try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
      ta.remove();
      return ok;
    }
  }

  function dl(rows) {
    const d = el("dl", { class: "kv" });
    for (const [k, v] of rows) {
      if (v === undefined || v === null || v === "") continue;
      d.append(el("dt", {}, k), typeof v === "object" && v instanceof Node ? el("dd", {}, v) : el("dd", { class: "mono" }, str(v)));
    }
    return d;
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
      note.textContent = "This playground reads no list of published Miniapps. Open one by origin and id above.";
    } else if (data.published_error) {
      note.textContent = "The dashboard's list could not be read: " + data.published_error;
    } else if (!lists.published.children.length) {
      note.textContent = "No Miniapp is published on the dashboard yet: submit one (miniapp-host miniapp submit) and approve it " +
        "(miniapp-host review approve); it appears here when the page is reloaded.";
    } else {
      note.textContent = "Approved on the dashboard (GET /api/miniapps of the dashboard).";
    }
  }

  // ---- Launches, reports and manifests ----------------------------------

  function renderReason(r) {
    return el("div", { class: "reason", "data-code": r.code },
      el("span", { class: "code mono" }, str(r.code)),
      r.pointer ? el("span", { class: "mono pointer" }, " at " + str(r.pointer)) : null,
      r.message ? el("div", { class: "message" }, str(r.message)) : null,
      r.hint ? el("div", { class: "hint" }, str(r.hint)) : null);
  }

  function stageTable(rep) {
    const table = el("table", { class: "stages" });
    for (const s of rep.stages || []) {
      const detail = el("td", { class: "stage-detail" });
      if (s.url) detail.append(el("div", { class: "note mono" }, "GET " + s.url + (s.status ? " → " + s.status : "") +
        (s.cache ? " (" + s.cache + ")" : "") + (s.redirects ? ", " + s.redirects + " redirect(s)" : "")));
      for (const n of s.notes || []) detail.append(el("div", { class: "note" }, str(n)));
      for (const r of s.reasons || []) detail.append(renderReason(r));
      table.append(el("tr", { "data-stage": s.stage, "data-outcome": s.outcome },
        el("td", { class: "stage-name" }, str(s.stage)),
        el("td", { class: "stage-outcome" }, el("span", { class: "badge", "data-outcome": s.outcome }, str(s.outcome))),
        detail));
    }
    return table;
  }

  // loadIcon fetches an icon through the launcher's API (the page may load
  // images from its own origin only) and draws it as a data: URL.
  async function loadIcon(img, path, fallback) {
    try {
      const resp = await apiFetch("GET", path);
      if (!resp.ok) throw await apiError(resp);
      const blob = await resp.blob();
      if (!blob.type.startsWith("image/")) throw new Error("not an image: " + blob.type);
      const url = await new Promise((resolve, reject) => {
        const r = new FileReader();
        r.onload = () => resolve(r.result);
        r.onerror = () => reject(r.error);
        r.readAsDataURL(blob);
      });
      img.src = url;
      img.dataset.loaded = "true";
    } catch (e) {
      img.dataset.loaded = "false";
      img.replaceWith(el("span", { class: "placeholder", role: "img", "aria-label": "icon not loaded" }));
      fallback.textContent = "not loaded: " + e.message;
    }
  }

  function renderIcon(ic) {
    const err = el("span", { class: "error" }, ic.error || "");
    const box = el("div", { class: "icon", "data-src": ic.src },
      null,
      el("span", { class: "mono" }, ic.src),
      ic.sizes || ic.type || ic.purpose ? el("span", {}, [ic.sizes, ic.type, ic.purpose].filter(Boolean).join(" · ")) : null,
      err);
    if (ic.path) {
      const img = el("img", { alt: "icon " + ic.src, width: 48, height: 48 });
      box.prepend(img);
      loadIcon(img, ic.path, err);
    } else {
      box.prepend(el("span", { class: "placeholder", role: "img", "aria-label": "icon not loaded" }));
    }
    return box;
  }

  function colour(v) {
    if (!v) return null;
    const sw = el("span", { class: "swatch", "aria-hidden": "true" });
    // Through the CSSOM, and only as a colour: an invalid value is ignored.
    sw.style.backgroundColor = v;
    return el("span", {}, sw, el("span", { class: "mono" }, str(v)));
  }

  function list(v) { return Array.isArray(v) ? v.map(str).join(" ") : ""; }
  function lines(v) {
    if (!Array.isArray(v) || !v.length) return "none";
    const d = el("div", {});
    for (const x of v) d.append(el("div", { class: "mono" }, str(x)));
    return d;
  }

  function renderManifestPanel(res) {
    const rep = res.report;
    const m = res.manifest;
    const p = el("div", { class: "manifest-panel" });
    if (!m) {
      const failed = (rep.stages || []).find((s) => s.outcome === "failed" || s.outcome === "undecided");
      p.append(el("p", { class: "note" }, "No manifest to show: the resolver did not accept one" +
        (failed ? " (stage " + failed.stage + " " + failed.outcome + ")" : "") + ". The checks below say why."));
    } else {
      const icons = res.icons || [];
      const head = el("div", { class: "app-id" });
      const firstServed = icons.find((i) => i.path);
      if (firstServed) {
        const img = el("img", { alt: "", width: 40, height: 40 });
        head.append(el("span", { class: "icon" }, img));
        loadIcon(img, firstServed.path, el("span"));
      }
      head.append(el("div", {}, el("div", { class: "name" }, str(m.name)), el("div", { class: "note mono" }, rep.origin + " · " + str(m.id))));
      p.append(head);
      const box = el("div", { class: "icons" });
      for (const ic of icons) box.append(renderIcon(ic));
      p.append(el("section", { class: "icons-section" }, el("h4", {}, "Icons"), icons.length ? box :
        el("p", { class: "note" }, "The manifest declares no icons.")));
      p.append(el("section", {}, el("h4", {}, "Manifest"), dl([
        ["id", m.id], ["name", m.name], ["short_name", m.short_name], ["description", m.description],
        ["start_url", m.start_url], ["scope", m.scope], ["display", m.display],
        ["theme_color", colour(m.theme_color)], ["background_color", colour(m.background_color)],
        ["oauth.client_id", m.oauth && m.oauth.client_id], ["oauth.auth_url", m.oauth && m.oauth.auth_url],
        ["manifest URL", rep.miniapp && rep.miniapp.manifest_url], ["loads first", rep.miniapp && rep.miniapp.load_url],
      ]), el("details", {}, el("summary", {}, "JSON"), el("pre", { class: "json" }, JSON.stringify(m, null, 2)))));
    }
    if (res.client) {
      const c = res.client;
      p.append(el("section", { class: "client-section" }, el("h4", {}, "Client configuration"), dl([
        ["client_type", c.client_type], ["redirect_uris", lines(c.redirect_uris)], ["allowed_origins", lines(c.allowed_origins)],
      ])));
    }
    const checks = el("ul", { class: "checks" });
    for (const s of rep.stages || []) {
      const what = (s.reasons || []).map((r) => r.code + (r.pointer ? " at " + r.pointer : "")).join("; ") ||
        (s.url ? "GET " + s.url + (s.status ? " → " + s.status : "") : (s.notes || []).join(" "));
      checks.append(el("li", { "data-stage": s.stage, "data-outcome": s.outcome },
        el("span", { class: "stage-name" }, str(s.stage)),
        el("span", { class: "badge", "data-outcome": s.outcome }, str(s.outcome)),
        el("span", { class: "note" }, what)));
    }
    p.append(el("section", {}, el("h4", {}, "Checks"), checks));
    return p;
  }

  // renderReport draws one launch: its head with the Report and Manifest
  // tabs, the stages with every reason, and what became of the window.
  function renderReport(res, tag) {
    const rep = res.report;
    const entry = entries.get(rep.origin + " " + rep.id);
    const tabReport = el("button", { type: "button", role: "tab", "aria-selected": "true", class: "tab-report" }, "Report");
    const tabManifest = el("button", { type: "button", role: "tab", "aria-selected": "false", class: "tab-manifest" }, "Manifest");
    const li = el(tag || "li", { class: "launch", "data-id": rep.id, "data-outcome": rep.outcome, "data-launch": res.launch },
      el("div", { class: "launch-head" },
        el("span", { class: "title" }, str((rep.miniapp && rep.miniapp.name) || (entry && entry.name) || rep.id)),
        el("span", { class: "badge", "data-outcome": rep.outcome }, str(rep.outcome)),
        el("span", { class: "mono muted" }, rep.origin + " · " + rep.id + (res.launch ? " · " + res.launch : "")),
        el("span", { class: "tabs", role: "tablist" }, tabReport, tabManifest)));
    const reportPanel = el("div", { class: "report-panel", role: "tabpanel" }, stageTable(rep));
    const w = res.window;
    const win = el("div", { class: "window", "data-opened": String(!!w.opened), "data-available": String(!!w.available) },
      el("span", { class: "window-message" }, str(w.message)));
    if (w.tab_url) {
      const a = safeLink("Open in a browser tab", w.tab_url);
      if (a) {
        a.classList.add("tab-link");
        win.append(" ", a);
      }
    }
    reportPanel.append(win);
    let manifestPanel = null;
    li.append(reportPanel);
    const show = (manifest) => {
      tabReport.setAttribute("aria-selected", String(!manifest));
      tabManifest.setAttribute("aria-selected", String(manifest));
      if (manifest && !manifestPanel) {
        manifestPanel = renderManifestPanel(res);
        manifestPanel.setAttribute("role", "tabpanel");
        li.append(manifestPanel);
      }
      reportPanel.hidden = manifest;
      if (manifestPanel) manifestPanel.hidden = !manifest;
    };
    tabReport.addEventListener("click", () => show(false));
    tabManifest.addEventListener("click", () => show(true));
    return li;
  }

  function renderLaunchError(id, e) {
    return el("li", { class: "launch", "data-outcome": "error" },
      el("div", { class: "launch-head" }, el("span", { class: "title" }, id),
        el("span", { class: "badge", "data-outcome": "failed" }, "error")),
      el("div", { class: "window" }, e.message));
  }

  // launchMiniapp launches and shows the report in the Launches pane and,
  // for a launch from the form, next to the form too.
  async function launchMiniapp(origin, id, fromForm) {
    const fb = $("open-feedback");
    if (fromForm) fb.replaceChildren(el("p", { class: "muted" }, "Resolving " + id + " at " + origin + "…"));
    try {
      const res = await api("POST", "/api/launch", { origin, id });
      lastLaunch = { origin, id };
      $("launches-empty").hidden = true;
      $("launches").prepend(renderReport(res));
      if (fromForm) fb.replaceChildren(renderReport(res, "div"));
    } catch (e) {
      $("launches-empty").hidden = true;
      $("launches").prepend(renderLaunchError(id, e));
      if (fromForm) {
        fb.replaceChildren(el("div", { class: "launch-error", role: "alert" },
          el("strong", {}, "Not launched: "), (e.code ? e.code + ": " : "") + e.message));
      }
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

  // Each notice under the header can be put away, so that it does not
  // keep the panes' room at small window sizes.
  for (const n of document.querySelectorAll("#notices .notice")) {
    const text = el("span", { class: "notice-text" });
    const close = el("button", { type: "button", class: "notice-close", "aria-label": "Dismiss", title: "Dismiss" }, "×");
    close.addEventListener("click", () => { n.hidden = true; });
    n.append(text, close);
  }
  // notice writes text into the notice id and shows it.
  function notice(id, text) {
    const n = $(id);
    n.querySelector(".notice-text").textContent = text;
    n.hidden = false;
  }

  // ---- Session, subjects, Web Inspector --------------------------------

  // traceUI is the trace UI's address with {trace_id} (GET /api/session's
  // trace_ui, from --trace-ui): each flow's trace id links there.
  let traceUI = "";

  async function loadSession() {
    const s = await api("GET", "/api/session");
    traceUI = typeof s.trace_ui === "string" ? s.trace_ui : "";
    if (s.window.available) $("window-status").hidden = true;
    else notice("window-status", s.window.message);
    const d = $("services");
    d.replaceChildren();
    const rows = [["launcher", s.launcher_origin], ["automation channel", s.automation_url]];
    for (const [k, v] of Object.entries(s.services)) rows.push([k, v]);
    for (const [k, v] of rows) d.append(el("dt", {}, k), el("dd", { class: "mono" }, str(v)));
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
      loadConnected();
    } catch (e) {
      fail("Could not switch the subject: " + e.message);
    }
  });

  $("open-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target;
    launchMiniapp(f.elements.origin.value.trim(), f.elements.id.value.trim(), true);
  });

  // The Web Inspector opens in the window, on the Miniapp's view; the
  // answer (or the API's JSON error) is shown under the header.
  $("devtools").addEventListener("click", async () => {
    const out = $("devtools-status");
    out.classList.remove("error");
    let text;
    try {
      const resp = await apiFetch("POST", "/api/devtools", {});
      if (resp.ok) {
        const data = await resp.json().catch(() => ({}));
        text = "Web Inspector: " + (data.message || "opened in the window.");
      } else {
        const err = await apiError(resp);
        out.classList.add("error");
        text = "Web Inspector: " + resp.status + " " + JSON.stringify(err.body || { error: { code: err.code, message: err.message } });
      }
    } catch (e) {
      out.classList.add("error");
      text = "Web Inspector: " + e.message;
    }
    notice("devtools-status", text);
  });

  // ---- Devices and launch profiles --------------------------------------

  // The device bar shows the Miniapp as another device in place (POST
  // /api/device, the automation channel's device.set); only a new user
  // agent loads the page again.
  async function loadDevices() {
    const data = await api("GET", "/api/devices");
    const sel = $("device");
    sel.replaceChildren();
    for (const d of data.presets) {
      const o = el("option", {}, d.width ? d.title + " " + d.width + "×" + d.height : d.title);
      o.value = d.name;
      o.selected = d.name === "desktop";
      sel.append(o);
    }
    const c = data.current;
    if (c) showDevice({ device: c.device, orientation: c.landscape ? "landscape" : "", theme: c.theme, locale: c.locale, zoom: c.zoom });
  }

  function deviceOf(form) {
    const f = form.elements;
    return { device: f.device.value, landscape: f.landscape.checked, theme: f.theme.value,
      locale: f.locale.value.trim(), zoom: Number(f.zoom.value) };
  }

  async function applyDevice() {
    const n = $("device-status");
    n.classList.remove("error");
    try {
      const res = await api("POST", "/api/device", deviceOf($("device-bar")));
      const v = res.viewport || {};
      notice("device-status", "Device: " + str(v.device) + (v.width ? " " + v.width + "×" + v.height + " " + str(v.orientation) : "") +
        (res.reloaded ? " (a new user agent: the page loaded again)" : ""));
    } catch (e) {
      n.classList.add("error");
      notice("device-status", "Device: " + (e.code ? e.code + ": " : "") + e.message);
    }
  }
  $("device-bar").addEventListener("change", applyDevice);
  $("device-bar").addEventListener("submit", (ev) => { ev.preventDefault(); applyDevice(); });

  // showDevice keeps the device bar saying what the window shows, whoever
  // changed it (the bar, the automation channel, a launch profile).
  function showDevice(d) {
    const f = $("device-bar").elements;
    const name = str(d.device) || "desktop";
    if (![...f.device.options].some((o) => o.value === name)) {
      const o = el("option", {}, name);
      o.value = name;
      f.device.append(o);
    }
    f.device.value = name;
    f.landscape.checked = d.orientation === "landscape";
    f.theme.value = d.theme === "dark" ? "dark" : "light";
    f.locale.value = str(d.locale);
    f.zoom.value = String(d.zoom || 0);
  }

  let lastLaunch = null; // {origin, id} of the Miniapp launched last

  function renderProfile(p) {
    const what = p.dir ? "folder " + p.dir : p.id + " at " + p.origin;
    const dev = [p.device || "desktop", p.landscape ? "landscape" : "", p.theme || "", p.locale || ""].filter(Boolean).join(", ");
    const li = el("li", { "data-kind": "profile", "data-name": p.name },
      el("strong", {}, p.name), " ", el("span", { class: "muted" }, what + (p.start ? " " + p.start : "") + " · " + dev +
        (p.subject ? " · as " + p.subject : "")));
    const launch = el("button", { type: "button" }, "Launch");
    launch.addEventListener("click", async () => {
      try {
        const res = await api("POST", "/api/profiles/" + encodeURIComponent(p.name) + "/launch", {});
        $("launches-empty").hidden = true;
        $("launches").prepend(renderReport(res));
        const f = $("device-bar").elements;
        f.device.value = p.device || "desktop";
        f.landscape.checked = !!p.landscape;
        f.theme.value = p.theme || "light";
        f.locale.value = p.locale || "";
      } catch (e) {
        $("profile-feedback").replaceChildren(el("p", { class: "launch-error", role: "alert" }, e.message));
      }
    });
    const del = el("button", { type: "button", class: "secondary" }, "Delete");
    del.addEventListener("click", async () => {
      try {
        await api("DELETE", "/api/profiles/" + encodeURIComponent(p.name), {});
        loadProfiles();
      } catch (e) {
        $("profile-feedback").replaceChildren(el("p", { class: "launch-error", role: "alert" }, e.message));
      }
    });
    li.append(" ", launch, " ", del);
    return li;
  }

  async function loadProfiles() {
    const data = await api("GET", "/api/profiles");
    $("profiles-file").textContent = str(data.file);
    fill($("profiles"), ...data.profiles.map(renderProfile));
    fill($("profile-problems"), ...data.problems.map((t) => el("li", { class: "error" }, t)));
  }

  $("profile-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    const out = $("profile-feedback");
    if (!lastLaunch) {
      out.replaceChildren(el("p", { class: "muted" }, "Launch a Miniapp first: its launch is what a profile saves."));
      return;
    }
    const d = deviceOf($("device-bar"));
    const body = { name: f.name.value.trim(), origin: lastLaunch.origin, id: lastLaunch.id, start: f.start.value.trim(),
      subject: $("subject").value, device: d.device === "desktop" ? "" : d.device, landscape: d.landscape,
      theme: d.theme === "light" ? "" : d.theme, locale: d.locale };
    try {
      const res = await api("POST", "/api/profiles", body);
      out.replaceChildren(el("p", { class: "muted" }, res.message));
      loadProfiles();
    } catch (e) {
      out.replaceChildren(el("p", { class: "launch-error", role: "alert" }, e.message));
    }
  });

  // ---- Pending reviews --------------------------------------------------

  // The submissions waiting on the playground's dashboard (scope policies,
  // Resource Servers, published Miniapps), approved or rejected through the
  // launcher's API with the playground's operator key (docs/playground.md,
  // "Pending reviews"). A decision stays on its entry until Refresh.
  const reviewKinds = { policy: "Scope policy", resource_server: "Resource Server", miniapp: "Miniapp" };

  function renderReview(r) {
    const li = el("li", { "data-kind": "review", "data-id": r.id, "data-review-kind": r.kind },
      el("div", { class: "entry-name" }, (reviewKinds[r.kind] || r.kind) + " " + r.id),
      el("div", { class: "entry-origin mono" }, "project " + r.project_id + "  ·  submitted " + r.created_at),
      r.summary ? el("div", { class: "entry-desc" }, r.summary) : null);
    const reason = el("input", { type: "text", class: "reason", placeholder: "Reason (required to reject)",
      "aria-label": "Reason for " + r.id, autocomplete: "off", spellcheck: "false" });
    const outcome = el("div", { class: "review-outcome", "aria-live": "polite" });
    const approve = el("button", { type: "button", class: "approve" }, "Approve");
    const reject = el("button", { type: "button", class: "secondary reject" }, "Reject");
    async function decide(action) {
      outcome.classList.remove("error");
      try {
        const d = await api("POST", "/api/reviews/" + encodeURIComponent(r.kind) + "/" + encodeURIComponent(r.id) + "/" + action,
          { reason: reason.value });
        li.dataset.outcome = str(d.status);
        outcome.textContent = str(d.status) + (d.assigned_id ? ", assigned id " + str(d.assigned_id) : "") +
          (d.reason ? ": " + str(d.reason) : "");
        approve.disabled = reject.disabled = reason.disabled = true;
        // An approved Miniapp joins the published ones.
        if (r.kind === "miniapp" && action === "approve") loadMiniapps().catch(() => {});
      } catch (e) {
        outcome.classList.add("error");
        outcome.textContent = (action === "approve" ? "Approve" : "Reject") + ": " + e.message;
      }
    }
    approve.addEventListener("click", () => decide("approve"));
    reject.addEventListener("click", () => decide("reject"));
    li.append(reason, el("div", { class: "buttons" }, approve, reject), outcome);
    return li;
  }

  async function loadReviews() {
    const list = $("reviews");
    const note = $("reviews-note");
    list.dataset.loaded = "false";
    try {
      const data = await api("GET", "/api/reviews");
      fill(list, ...data.reviews.map(renderReview));
      note.textContent = data.reviews.length ? "" : "Nothing waits for review. A project submits with miniapp-host policy request, " +
        "rs declare or miniapp submit --dashboard " + str(data.dashboard_url) + "; press Refresh to see it here.";
    } catch (e) {
      list.replaceChildren();
      note.textContent = "The pending reviews could not be read: " + e.message;
    }
    list.dataset.loaded = "true";
  }
  $("reviews-refresh").addEventListener("click", loadReviews);
  if (token) loadReviews();

  // ---- Connected Miniapps -----------------------------------------------

  // The current subject's grants, through the server's Connected Miniapps
  // API (docs/playground.md, "Connected Miniapps"): one entry per client,
  // named once, with its grants (one per approval), newest first; each
  // grant with its permissions and their meanings, a Revoke button for each
  // permission that can be revoked alone and one for the whole grant.
  // After a revocation the list is read again.
  function renderGrant(g) {
    const outcome = el("div", { class: "review-outcome", "aria-live": "polite" });
    async function revoke(entry) {
      outcome.classList.remove("error");
      try {
        const d = await api("POST", "/api/connected/revoke", { grant_id: g.id, entry: entry });
        outcome.textContent = "revoked " + (d.revoked || []).map(str).join(", ");
        await loadConnected();
      } catch (e) {
        outcome.classList.add("error");
        outcome.textContent = "Revoke: " + e.message;
      }
    }
    const perms = el("ul", { class: "held" }, ...(g.entries || []).map((p) => {
      const li = el("li", { "data-entry": p.entry },
        el("span", { class: "entry-desc" }, str(p.meaning) || "A permission the catalog no longer describes"), " ",
        el("span", { class: "mono muted" }, str(p.name)));
      if (p.revocable) {
        const b = el("button", { type: "button", class: "secondary revoke" }, "Revoke");
        b.addEventListener("click", () => revoke(p.entry));
        li.append(" ", b);
      }
      return li;
    }));
    const all = el("button", { type: "button", class: "revoke-grant" }, "Revoke grant");
    all.addEventListener("click", () => revoke(""));
    return el("li", { "data-kind": "grant", "data-id": g.id, "data-client": g.client_id },
      el("div", { class: "entry-origin mono" }, "granted " + str(g.granted_at) +
        "  ·  " + (g.last_used_at ? "last used " + str(g.last_used_at) : "not used yet") + (g.org_id ? "  ·  " + str(g.org_id) : "") +
        "  ·  grant " + str(g.id)),
      perms, el("div", { class: "buttons" }, all), outcome);
  }

  function renderClient(c) {
    const grants = c.grants || [];
    return el("li", { "data-kind": "client", "data-client": c.id },
      el("div", { class: "entry-name" }, str(c.name) + " "),
      el("div", { class: "entry-origin mono" }, str(c.id) + "  ·  " + grants.length + (grants.length === 1 ? " grant" : " grants, one per approval")),
      el("ul", { class: "grants" }, ...grants.map(renderGrant)));
  }

  async function loadConnected() {
    const list = $("connected");
    const note = $("connected-note");
    list.dataset.loaded = "false";
    try {
      const data = await api("GET", "/api/connected");
      $("connected-page").href = str(data.page_url);
      const clients = (data.clients || []).filter((c) => (c.grants || []).length);
      const grants = clients.flatMap((c) => c.grants);
      fill(list, ...clients.map(renderClient));
      note.textContent = grants.length ? "" : "No Miniapp holds a grant of " + str(data.subject) + ". Launch a demo and sign in; press Refresh to see it here.";
    } catch (e) {
      list.replaceChildren();
      note.textContent = "The grants could not be read: " + e.message;
    }
    list.dataset.loaded = "true";
  }
  $("connected-refresh").addEventListener("click", loadConnected);
  if (token) loadConnected();

  // ---- Explain a request ------------------------------------------------

  // The dry run of an authorization request through the launcher's API
  // (POST /api/explain, the embedded server's POST /api/dev/explain;
  // docs/playground.md, "Explain a request"): each check on its own line
  // with its rule and values, then the consent screen, the grant and the
  // token claims. Every value is written as text.
  const outcomeWords = { pass: "PASS", fail: "REFUSED", ask: "ASK", deferred: "DEFERRED", skipped: "SKIPPED" };

  function renderExplainCheck(c) {
    const vals = Object.entries(c.values || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => k + "=" + str(v)).join("  ");
    return el("li", { "data-name": str(c.name), "data-check": str(c.check), "data-outcome": str(c.outcome) },
      el("div", { class: "entry-name" }, (outcomeWords[c.outcome] || str(c.outcome)) + " " + str(c.name) + " (" + str(c.check).replace(/_/g, " ") + ")" +
        (c.code ? " " + str(c.code) : "")),
      c.message ? el("div", { class: "entry-desc check-message" }, str(c.message)) : null,
      el("div", { class: "muted check-rule" }, "rule: " + str(c.rule)),
      vals ? el("div", { class: "mono check-values" }, vals) : null);
  }

  function renderExplanation(r) {
    const out = [];
    const head = r.refused_by ? "Refused by " + str(r.refused_by.name) + " (" + str(r.refused_by.check).replace(/_/g, " ") + " check, " + str(r.refused_by.code) + ")"
      : "Every check passes" + (r.consent_remembered ? ": no consent screen, the subject consented to all of it before" : "");
    out.push(el("p", { class: "explain-verdict", "data-verdict": str(r.verdict) }, head));
    out.push(el("ul", { class: "entries explain-checks" }, ...(r.checks || []).map(renderExplainCheck)));
    const m = r.consent;
    if (m) {
      const who = str(m.client && m.client.name) + " (client " + str(m.client && m.client.id) + ", project " + str(m.project && m.project.id) + ") asks " +
        str(m.subject && m.subject.name) + " (" + str(m.subject && m.subject.id) + ")" + (m.company ? " for Company " + str(m.company.name) + " (" + str(m.company.id) + ")" : "");
      out.push(el("h3", {}, "Consent screen"), el("p", { class: "explain-who" }, who),
        el("ul", { class: "held explain-permissions" }, ...(m.permissions || []).map((p) => el("li", {},
          el("span", { class: "entry-desc" }, str(p.meaning)), " ", el("span", { class: "mono muted" }, (p.kind === "detail" ? "detail " + str(p.index) + " " : "") + str(p.name)),
          (p.actions || []).length ? el("div", { class: "muted" }, "actions: " + p.actions.map((a) => str(a.name) + " (" + str(a.meaning) + ")").join(", ")) : null,
          p.limits ? el("div", { class: "mono muted" }, "limits: " + str(p.limits)) : null))));
      if ((m.accounts || []).length) {
        out.push(el("div", { class: "muted" }, "Accounts to pick: " + m.accounts.map((a) => str(a.name) + " " + str(a.number) + " (" + str(a.owner) + ")").join(", ")));
      }
    }
    if (r.grant) out.push(el("h3", {}, "Grant"), el("pre", { class: "mono explain-grant" }, JSON.stringify(r.grant, null, 2)));
    if (r.tokens) out.push(el("h3", {}, "Token claims"), el("pre", { class: "mono explain-tokens" }, JSON.stringify(r.tokens, null, 2)));
    return out;
  }

  $("explain-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    const out = $("explain-report");
    out.dataset.state = "running";
    const body = { subject: f.subject.value };
    const url = f.authorize_url.value.trim();
    if (url) {
      body.authorize_url = url;
    } else {
      body.client_id = f.client_id.value.trim();
      if (f.scope.value.trim()) body.scope = f.scope.value.trim();
      // Sent as the text typed: the server says what is wrong with it.
      if (f.authorization_details.value.trim()) body.authorization_details = f.authorization_details.value.trim();
      if (f.org_id.value.trim()) body.org_id = f.org_id.value.trim();
    }
    try {
      const r = await api("POST", "/api/explain", body);
      fill(out, ...renderExplanation(r));
      out.dataset.state = "done";
    } catch (e) {
      fill(out, el("p", { class: "launch-error", role: "alert" }, "Explain: " + e.message));
      out.dataset.state = "error";
    }
  });

  // The panel's choices: the subjects, and as suggested clients the ids
  // of the listed Miniapps, which are their client_ids for the demo and
  // broken ones (any client_id may be typed).
  async function loadExplainChoices() {
    const [subs, apps] = await Promise.all([api("GET", "/api/subjects"), api("GET", "/api/miniapps")]);
    const sel = $("explain-subject");
    sel.replaceChildren(...subs.subjects.map((s) => {
      const o = el("option", {}, s.name + " (" + s.id + ")");
      o.value = s.id;
      o.selected = s.id === subs.current;
      return o;
    }));
    const ids = [...new Set((apps.miniapps || []).map((m) => m.id).filter((id) => id))];
    $("explain-clients").replaceChildren(...ids.map((id) => { const o = el("option", {}); o.value = id; return o; }));
  }
  if (token) loadExplainChoices().catch((e) => fill($("explain-report"), el("p", { class: "muted" }, "The panel's choices could not be read: " + e.message)));

  // ---- Flow inspector ---------------------------------------------------
  //
  // The timeline groups events by launch (resolve.stage events name their
  // launch; what follows belongs to it until the next launch) and, within a
  // launch, by consent flow: the events that name a flow of the network log
  // ("flow": "f2") are grouped by that id, whenever they arrive; the page
  // never numbers flows of its own, so the id shown is the one of
  // GET /api/flows and of the HAR link. A flow's status is its outcome in
  // the network log: "running" until its flow.ended event (published once
  // the log holds the outcome) or GET /api/flows says otherwise.

  function types(details) {
    return Array.isArray(details) ? details.map((d) => d && d.type).filter(Boolean).map(str).join(", ") : "";
  }

  // summary is one line per event kind (docs/automation.md, docs/playground.md).
  function summary(kind, d) {
    switch (kind) {
      case "resolve.stage": {
        const n = Array.isArray(d.reasons) ? d.reasons.length : 0;
        return str(d.id) + " @ " + str(d.origin) + ": " + str(d.stage) + (d.ok ? " passed" : " failed" +
          (d.code ? " — " + str(d.code) : "") + (d.pointer ? " at " + str(d.pointer) : "") + (d.hint ? ". Hint: " + str(d.hint) : "") +
          (n > 1 ? " (and " + (n - 1) + " more reason" + (n > 2 ? "s" : "") + ")" : ""));
      }
      case "navigation":
        return str(d.decision) + " " + str(d.url) + " — rule " + str(d.rule);
      case "consent.shown":
        return "client " + str(d.client_id) + " asks" + (d.scopes ? " scopes " + list(d.scopes) : "") +
          (d.authorization_details ? " details " + types(d.authorization_details) : "") +
          (d.org_id ? " for " + str(d.org_id) : "") + (d.accounts ? "; accounts " + list(d.accounts) : "") +
          (d.grant_management_action ? "; grant_management_action " + str(d.grant_management_action) +
            (d.grant_id ? " of grant " + str(d.grant_id) : "") : "") +
          (d.pushed ? " (the pushed request its request_uri named)" : "");
      case "consent.decided":
        // Per-entry decisions (docs/native-consent.md): what the approval
        // declined, and the automatic charges allowed less than asked.
        return str(d.decision) + (d.account ? " with account " + str(d.account) : "") +
          (d.declined_scopes && d.declined_scopes.length ? "; declined scopes " + list(d.declined_scopes) : "") +
          (d.declined_details && d.declined_details.length ? "; declined details " + list(d.declined_details.map((i) => "#" + i)) : "") +
          (Array.isArray(d.lowered_maximums) && d.lowered_maximums.length ? "; lowered maximum " +
            d.lowered_maximums.map((m) => "#" + str(m && m.index) + " to " + str(m && m.maximum) + " CLP").join(", ") : "");
      case "consent.refused":
        return str(d.action) + " refused (" + str(d.code) + "): " + str(d.message) + (d.account ? "; account " + str(d.account) : "");
      case "code.issued":
        return "code for " + str(d.client_id) + " → " + str(d.redirect_uri) + " (fingerprint " + str(d.fingerprint) + ")";
      case "token.issued":
        return str(d.token_type) + " token for " + str(d.client_id) + (d.scope ? " scope " + str(d.scope) : "") +
          (d.expires_in ? ", expires in " + str(d.expires_in) + " s" : "") + " (fingerprint " + str(d.fingerprint) + ")" +
          (d.grant_id ? "; grant " + str(d.grant_id) : "");
      case "grant.revoked":
        return str(d.subject) + " revoked " + (d.whole_grant ? "the whole grant " + str(d.grant_id) :
          list(d.revoked) + " of grant " + str(d.grant_id));
      case "token.claims": {
        if (d.error) return str(d.error);
        const c = d.claims || {};
        return "sub " + str(c.sub) + ", aud " + list([].concat(c.aud || [])) + (c.scope ? ", scope " + str(c.scope) : "") +
          (c.org_id ? ", org " + str(c.org_id) : "") + (typeof c.exp === "number" ? ", exp " + new Date(c.exp * 1000).toISOString() : "");
      }
      case "grant": {
        if (d.error) return "grant of " + str(d.fingerprint) + ": " + str(d.error);
        const g = d.grant || {};
        if (d.status !== 200) return "GET /authorization → " + str(d.status) + " " + str(g.code || "");
        return "GET /authorization → 200: subject " + str(g.subject) + ", scopes " + list(g.scopes) +
          (g.orgId ? ", org " + str(g.orgId) : "") + (g.authorizationDetails && g.authorizationDetails.length ? ", details " + types(g.authorizationDetails) : "");
      }
      case "cookies.synced":
        return str(d.origin) + ": " + list(d.names);
      case "bridge.call":
        return str(d.method) + " " + str(d.decision) + (d.code ? " (" + str(d.code) + ")" : "");
      case "bridge.refused":
        return str(d.count) + " message(s) refused: " + Object.entries(d.reasons || {}).map(([k, v]) => k + " " + str(v)).join(", ");
      case "ui.stalled":
        return "the window's UI loop has not run for " + str(d.seconds) + " s";
      case "ui.recovered":
        return "the window's UI loop runs again, after " + str(d.seconds) + " s";
      case "console":
        return str(d.message);
      case "network":
        return (d.injected ? "injected (" + str(d.injected) + "): " : "") + (d.kind === "par" ? "pushed authorization request: " : "") +
          str(d.method) + " " + str(d.url) + (d.status !== undefined ? " → " + str(d.status) : "") +
          (typeof d.duration_ms === "number" ? " in " + d.duration_ms + " ms" : "") + (d.dpop ? "; DPoP " + str(d.dpop) : "");
      case "flow.ended":
        return "flow " + str(d.flow) + " " + str(d.outcome) + (d.detail ? ": " + str(d.detail) : "");
      case "download":
        return d.error ? "download of " + str(d.filename) + " failed: " + str(d.error) : "saved " + str(d.path);
      case "service.clock":
        return d.offset_seconds ? "the service's clock is now " + str(d.offset) + " off real time: it reads " + str(d.now) + " (injected)" :
          "the service's clock is back at real time";
      default:
        return "";
    }
  }

  // levelOf sorts events for the level filter: console events carry their
  // own; a failure, refusal or denial is an error; a thing worth a look
  // (a grant not read, a refused message, a stall) a warning.
  function levelOf(kind, d) {
    if (kind === "console") {
      const l = String(d.level || "").toLowerCase();
      if (l === "error") return "error";
      if (l === "warn" || l === "warning") return "warn";
      return l === "debug" ? "debug" : "info";
    }
    if (kind === "network") {
      // No response is a failure unless the log notes what the entry is
      // (the caught authorization request, never sent).
      if (d.error || (typeof d.status === "number" && (d.status >= 400 || (d.status === 0 && !d.note)))) return "error";
      return "info";
    }
    if (kind === "flow.ended") {
      if (d.outcome === "error" || d.outcome === "denied") return "error";
      return d.outcome === "abandoned" ? "warn" : "info";
    }
    if (kind === "service.clock") return d.offset_seconds ? "warn" : "info";
    if (kind === "grant" || kind === "token.claims") {
      if (typeof d.status === "number" && d.status !== 200) return "error";
      return d.error ? "warn" : "info";
    }
    if (kind === "consent.refused") return "error";
    if (d.ok === false || d.decision === "blocked" || d.decision === "denied" || d.decision === "refused" || d.error) return "error";
    if (kind === "bridge.refused" || kind === "ui.stalled" || d.decision === "withheld") return "warn";
    return "info";
  }
  const levelRank = { debug: 0, info: 1, warn: 2, error: 3 };

  function claimsTable(c) {
    if (!c || typeof c !== "object") return null;
    const rows = [];
    for (const [k, v] of Object.entries(c)) {
      let text = str(v);
      if ((k === "exp" || k === "iat" || k === "nbf" || k === "auth_time") && typeof v === "number") {
        text += " (" + new Date(v * 1000).toISOString() + ")";
      }
      rows.push([k, text]);
    }
    return dl(rows);
  }

  // extra writes into box (an event row's, emptied) what an event shows
  // under its summary beyond one line. The kinds of every round (a
  // console message, a network entry) get one line of text, which makes no
  // element (see keepEvents); a failed stage, the claims and the grant,
  // a few per flow, get their tables.
  function extra(box, kind, d) {
    switch (kind) {
      case "resolve.stage":
        if (d.ok) return;
        for (const r of Array.isArray(d.reasons) && d.reasons.length ? d.reasons : [{ code: d.code, pointer: d.pointer, hint: d.hint }]) {
          if (r && r.code) box.append(renderReason(r));
        }
        break;
      case "token.claims":
        if (d.claims) box.append(claimsTable(d.claims));
        if (d.code_fingerprint) box.append(el("div", { class: "note" }, "exchanged for the code " + str(d.code_fingerprint)));
        break;
      case "grant":
        if (d.grant && typeof d.grant === "object") {
          const g = d.grant;
          box.append(dl([["subject", g.subject], ["scopes", list(g.scopes)], ["orgId", g.orgId],
            ["consumerInstallationId", g.consumerInstallationId],
            ["authorizationDetails", g.authorizationDetails && g.authorizationDetails.length ? JSON.stringify(g.authorizationDetails, null, 1) : ""],
            ["code", g.code], ["message", g.message]]));
        }
        if (d.error) {
          box.append(el("div", { class: "ev-why" }, "The grant endpoint was not asked: it answers only the token's own client, " +
            "authenticated with its secret, or a Resource Server in the token's audience. A public client (the bridge's " +
            "sign-in, or a page's own PKCE) has no secret. What is known comes from the token response."));
          if (d.scope || d.authorization_details) {
            box.append(dl([["scope (token response)", d.scope],
              ["authorization_details (token response)", d.authorization_details ? JSON.stringify(d.authorization_details, null, 1) : ""]]));
          }
        }
        break;
      case "console":
        setText(box, "level " + str(d.level || "log") + (d.source ? " · source " + str(d.source) : "") +
          (d.frame ? " · frame " + str(d.frame) : ""));
        break;
      case "network":
        // The summary has the method, URL, status and duration.
        setText(box, [d.source ? "from " + str(d.source) : "", d.kind ? str(d.kind) : "",
          typeof d.duration_ms !== "number" && d.duration ? "duration " + str(d.duration) : "",
          d.error ? "error " + str(d.error) : "", d.note ? str(d.note) : ""].filter(Boolean).join(" · "));
        break;
      default:
        break;
    }
  }

  function fmtDuration(ms) {
    if (!isFinite(ms)) return "";
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(2) + " s";
    return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
  }

  // keepEvents bounds the timeline: the page drops the oldest events (and
  // the launch groups and flows left empty) beyond it. The launcher stays
  // open for a working day; every event it kept was a list item with its
  // JSON and buttons in the launcher's web process, which grew by about 5
  // MB a round of the soak (BENCHMARKS.md, "Soak"). The count says how
  // many were dropped. A page may lower it with ?keep=N (tests).
  //
  // Dropping is not enough on its own: in WebKit a removed element made by
  // script lives until JavaScriptCore's next full collection (its wrapper
  // holds it, with its whole subtree), and this page allocates so little
  // JavaScript that such collections are rare; a page that made and dropped
  // some 40 elements per event kept growing by about 14 KB per event once
  // the bound was reached (BENCHMARKS.md, "Where the WebKit memory goes").
  // So the timeline makes no element per event once it is full: a dropped
  // event's row goes to rowPool and is filled again for the next event
  // (takeRow), text is set with setText (a text node of the engine's own,
  // freed at once), heads are updated in place, one listener on the
  // timeline serves every row's buttons, and an event's JSON is drawn only
  // when its "data" button is first pressed.
  const keepEvents = (() => {
    const n = Number(search.get("keep"));
    return Number.isInteger(n) && n > 0 ? n : 2000;
  })();

  const model = {
    events: [],       // the latest keepEvents envelopes, by seq
    dropped: 0,       // how many older events were dropped
    floor: 0,         // the highest seq dropped: an event at or below it is not filed again
    seen: new Set(),
    groups: [],       // launch groups, oldest first
    groupByKey: new Map(),
    flowById: new Map(),
    outcomes: new Map(), // flow id → {outcome, detail}, from flow.ended and GET /api/flows
    traces: new Map(), // flow id → its trace id, from GET /api/flows
    kinds: new Set(),
  };
  const rowPool = []; // rows of dropped events, emptied, for takeRow

  // setText sets a node's text without a text node made by script:
  // textContent's text node has no wrapper and goes when replaced.
  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function newGroup(key, title, sub) {
    const g = { key, title, sub, events: [], flows: [], flow: null, node: null, body: null, head: null };
    model.groups.push(g);
    model.groupByKey.set(key, g);
    g.parts = {
      title: el("span", { class: "title" }, title),
      badge: el("span", { class: "badge", hidden: "" }),
      sub: el("span", { class: "mono muted" }, sub + (key.startsWith("launch-") ? " · " + key : "")),
      duration: el("span", { class: "duration" }),
    };
    const head = el("div", { class: "group-head" }, g.parts.title, g.parts.badge, g.parts.sub, g.parts.duration);
    const body = el("div", { class: "group-body" });
    g.node = el("section", { class: "group", "data-launch": key }, head, body);
    g.head = head;
    g.body = body;
    $("timeline").prepend(g.node);
    return g;
  }

  function currentGroup() {
    if (model.groups.length) return model.groups[model.groups.length - 1];
    return newGroup("before-launch", "Before any launch", "events of the window and the channel");
  }

  function groupFor(env) {
    const d = env.data || {};
    if (env.kind === "resolve.stage") {
      let key = typeof d.launch === "string" && d.launch ? d.launch : "";
      if (!key) {
        // A launch that does not name itself (the host's own open): one
        // group per run of stages of the same Miniapp.
        const cur = model.groups[model.groups.length - 1];
        key = cur && cur.auto && cur.origin === d.origin && cur.id === d.id && cur.flows.length === 0 &&
          cur.events.every((e) => e.kind === "resolve.stage") ? cur.key : "resolve-" + env.seq;
      }
      let g = model.groupByKey.get(key);
      if (!g) {
        g = newGroup(key, str(d.id), str(d.origin));
        g.auto = !d.launch;
        g.origin = d.origin;
        g.id = d.id;
      }
      return g;
    }
    return currentGroup();
  }

  function newFlow(g, id) {
    const f = { id, group: g, events: [], clientID: "", status: "running" };
    const har = el("a", { class: "har", href: "/api/flows/" + encodeURIComponent(id) + "/har" }, "Export HAR");
    har.addEventListener("click", (ev) => { ev.preventDefault(); exportHAR(f); });
    f.parts = {
      title: el("span", { class: "title" }),
      badge: el("span", { class: "badge" }),
      duration: el("span", { class: "duration" }),
      har,
      harResult: el("span", { class: "har-result", hidden: "" }),
      trace: el("span", { class: "trace mono", hidden: "" }),
    };
    const head = el("div", { class: "flow-head" }, f.parts.title, f.parts.badge, f.parts.duration, f.parts.trace, har, f.parts.harResult);
    const evs = el("ol", { class: "events" });
    f.node = el("div", { class: "flow", "data-flow": id, "data-status": f.status }, head, evs);
    f.head = head;
    f.list = evs;
    g.flows.push(f);
    g.body.append(f.node);
    model.flowById.set(id, f);
    // The flow's trace id is in the log from its start: read it now.
    refreshOutcomes();
    return f;
  }

  // showTrace shows a flow's trace id (docs/playground.md, "Trace ids"),
  // a link to the trace UI when one is configured (an http or https
  // address only).
  function showTrace(f) {
    const id = model.traces.get(f.id);
    const p = f.parts;
    if (!id || p.trace.dataset.trace === id) return;
    p.trace.dataset.trace = id;
    p.trace.replaceChildren();
    let href = "";
    if (traceUI) {
      try {
        const u = new URL(traceUI.split("{trace_id}").join(encodeURIComponent(id)));
        if (u.protocol === "http:" || u.protocol === "https:") href = u.href;
      } catch (_) { /* no link */ }
    }
    const label = "trace " + id;
    p.trace.append(href ? el("a", { href, target: "_blank", rel: "noopener noreferrer", title: "this flow's trace in the trace UI" }, label) : label);
    p.trace.hidden = false;
  }

  // flowFor is the flow an event names, made in its launch group the first
  // time; null for an event of no flow.
  function flowFor(g, env) {
    const d = env.data || {};
    if (typeof d.flow !== "string" || !d.flow) return null;
    return model.flowById.get(d.flow) || newFlow(g, d.flow);
  }

  // updateFlow updates a flow's head, in place, after an event, or after
  // its outcome became known.
  function updateFlow(f, env) {
    const d = (env && env.data) || {};
    if (d.client_id && !f.clientID) f.clientID = str(d.client_id);
    if (env && env.kind === "flow.ended" && d.outcome) {
      model.outcomes.set(f.id, { outcome: str(d.outcome), detail: str(d.detail) });
      if (!model.traces.has(f.id)) refreshOutcomes(); // a trace id the first read missed
    }
    const known = model.outcomes.get(f.id);
    const status = known ? known.outcome : "running";
    f.status = status;
    f.node.dataset.status = status;
    const first = f.events[0], last = f.events[f.events.length - 1];
    const dur = new Date(last.time) - new Date(first.time);
    const p = f.parts;
    setText(p.title, "Flow " + f.id + (f.clientID ? " · " + f.clientID : ""));
    p.badge.dataset.outcome = status;
    if (known && known.detail) p.badge.title = known.detail; else p.badge.removeAttribute("title");
    setText(p.badge, status);
    setText(p.duration, f.events.length + " event" + (f.events.length > 1 ? "s" : "") + ", " + fmtDuration(dur));
    showTrace(f);
  }

  // refreshOutcomes reads every flow's outcome from GET /api/flows: the
  // flows whose flow.ended event the page did not see (it connected later
  // than the history kept) show the log's outcome all the same. An outcome
  // never changes once set, so an answer older than a live event cannot
  // undo it.
  async function refreshOutcomes() {
    let list;
    try { list = (await api("GET", "/api/flows")).flows || []; } catch (_) { return; }
    for (const x of list) {
      if (!x || typeof x.id !== "string") continue;
      if (typeof x.trace_id === "string" && /^[0-9a-f]{32}$/.test(x.trace_id)) model.traces.set(x.id, x.trace_id);
      if (x.outcome && x.outcome !== "running") model.outcomes.set(x.id, { outcome: str(x.outcome), detail: str(x.detail) });
      const f = model.flowById.get(x.id);
      if (f && f.events.length) updateFlow(f, null);
    }
  }

  // exportHAR downloads the flow's HAR from the playground's API; without
  // a network log (404) it shows the API's JSON error next to the link.
  async function exportHAR(f) {
    let msg = "";
    try {
      const resp = await apiFetch("GET", "/api/flows/" + encodeURIComponent(f.id) + "/har");
      if (resp.ok) {
        download("flow-" + f.id + ".har", await resp.text(), "application/json");
      } else {
        const err = await apiError(resp);
        msg = "HAR: " + resp.status + " " + JSON.stringify(err.body || { error: { code: err.code, message: err.message } });
      }
    } catch (e) {
      msg = "HAR: " + e.message;
    }
    setText(f.parts.harResult, msg);
    f.parts.harResult.hidden = !msg;
  }

  function updateGroup(g) {
    const first = g.events[0], last = g.events[g.events.length - 1];
    const failed = g.events.some((e) => e.kind === "resolve.stage" && e.data && e.data.ok === false);
    const stages = g.events.some((e) => e.kind === "resolve.stage");
    const p = g.parts;
    p.badge.hidden = !stages;
    p.badge.dataset.outcome = failed ? "rejected" : "accepted";
    setText(p.badge, stages ? (failed ? "rejected" : "resolved") : "");
    setText(p.duration, g.events.length + " event" + (g.events.length > 1 ? "s" : "") +
      (g.flows.length ? ", " + g.flows.length + " flow" + (g.flows.length > 1 ? "s" : "") : "") +
      ", " + fmtDuration(new Date(last.time) - new Date(first.time)));
  }

  // plain is an event as the channel sent it, without the page's links
  // to its drawing (which are circular).
  const plain = (env) => ({ type: "event", seq: env.seq, time: env.time, kind: env.kind, data: env.data });

  // takeRow is a row for an event: one of a dropped event (rowPool), or a
  // new one. Its parts stay the same elements for as long as the page is
  // open; fillRow writes an event into them.
  function takeRow() {
    const pooled = rowPool.pop();
    if (pooled) return pooled;
    const parts = {
      seq: el("span", { class: "ev-seq" }),
      time: el("span", { class: "ev-time mono" }),
      delta: el("span", { class: "duration", title: "since the previous step" }),
      kind: el("span", { class: "ev-kind" }),
      injected: el("span", { class: "badge injected", hidden: "" }, "injected"), // a development fault's answer
      toggle: el("button", { type: "button", class: "secondary small data-toggle", "aria-expanded": "false",
        title: "Show the event's data as JSON" }, "data"),
      copy: el("button", { type: "button", class: "secondary small copy", title: "Copy this event as JSON" }, "Copy"),
      summary: el("div", { class: "ev-summary" }),
      extra: el("div", { class: "ev-extra", hidden: "" }),
      pre: null,    // the event's JSON, drawn at the first press of "data"
      copied: null, // the answer of the last Copy
    };
    const li = el("li", {},
      el("div", { class: "ev-head" }, parts.seq, parts.time, parts.delta, parts.kind, parts.injected,
        el("span", { class: "ev-actions" }, parts.toggle, parts.copy)),
      parts.summary, parts.extra);
    li._parts = parts;
    return li;
  }

  // releaseRow empties a dropped event's row (its text, its JSON, what
  // its buttons said) and keeps it for the next event.
  function releaseRow(env) {
    const li = env._li;
    if (!li) return;
    env._li = null;
    li.remove();
    const p = li._parts;
    li._env = null;
    for (const k of ["seq", "time", "delta", "kind", "summary"]) setText(p[k], "");
    p.extra.replaceChildren();
    p.extra.hidden = true;
    if (p.pre) { p.pre.remove(); p.pre = null; }
    if (p.copied) { p.copied.remove(); p.copied = null; }
    p.toggle.setAttribute("aria-expanded", "false");
    if (rowPool.length < keepEvents) rowPool.push(li);
  }

  function renderEvent(env, prev) {
    const d = env.data || {};
    const li = takeRow();
    const p = li._parts;
    li._env = env;
    li.hidden = false;
    li.dataset.kind = env.kind;
    li.dataset.seq = env.seq;
    li.dataset.level = levelOf(env.kind, d);
    if (typeof d.ok === "boolean") li.dataset.ok = String(d.ok); else delete li.dataset.ok;
    if (typeof d.decision === "string") li.dataset.decision = d.decision; else delete li.dataset.decision;
    const t = new Date(env.time);
    const delta = prev ? new Date(env.time) - new Date(prev.time) : NaN;
    setText(p.seq, "#" + env.seq);
    setText(p.time, isNaN(t) ? "" : t.toISOString().slice(11, 23));
    setText(p.delta, isNaN(delta) ? "" : "+" + fmtDuration(delta));
    setText(p.kind, str(env.kind));
    p.injected.hidden = !d.injected;
    p.injected.title = d.injected ? str(d.injected) : "";
    setText(p.summary, summary(env.kind, d));
    extra(p.extra, env.kind, d);
    p.extra.hidden = !p.extra.firstChild;
    return li;
  }

  // One listener serves the buttons of every row: "data" shows the
  // event's JSON (drawn the first time), Copy copies the event as the
  // channel sent it.
  $("timeline").addEventListener("click", async (ev) => {
    const b = ev.target.closest && ev.target.closest("button.data-toggle, button.copy");
    const li = b && b.closest("li");
    const env = li && li._env;
    if (!env) return;
    const p = li._parts;
    if (b === p.toggle) {
      if (!p.pre) {
        p.pre = el("pre", { class: "json ev-data", hidden: "" }, JSON.stringify(env.data || {}, null, 2));
        li.append(p.pre);
      }
      p.pre.hidden = !p.pre.hidden;
      p.toggle.setAttribute("aria-expanded", String(!p.pre.hidden));
      return;
    }
    if (b !== p.copy) return;
    const ok = await copyText(JSON.stringify(plain(env), null, 2));
    if (li._env !== env) return; // the event was dropped meanwhile
    if (p.copied) p.copied.remove();
    p.copied = el("span", { class: "copied", role: "status", "data-ok": String(ok) }, ok ? "copied" : "copy failed: open “data” and select it");
    p.copy.before(p.copied);
  });

  // addEvent files one envelope into its launch and flow. Events of the
  // backfill may arrive after live ones: then the timeline is rebuilt in
  // seq order, so that grouping never depends on arrival order.
  // showClock keeps the inspector's note of the service's clock: shown
  // while the development clock is off real time (docs/dashboard.md,
  // "The clock"), so that an expiry it caused is not taken for a bug.
  function showClock(d) {
    const note = $("service-clock");
    note.hidden = !d.offset_seconds;
    setText(note, d.offset_seconds ? "Service clock " + (d.offset_seconds > 0 ? "+" : "") + str(d.offset) + " (injected): it reads " + str(d.now) : "");
  }

  function addEvent(env, rebuilding) {
    if (!env || env.type !== "event" || (!rebuilding && (model.seen.has(env.seq) || env.seq <= model.floor))) return;
    if (!env.data || typeof env.data !== "object") env.data = {};
    if (!rebuilding) {
      model.seen.add(env.seq);
      const last = model.events[model.events.length - 1];
      model.events.push(env);
      if (last && last.seq > env.seq) {
        model.events.sort((a, b) => a.seq - b.seq);
        rebuild();
        trim();
        return;
      }
    }
    if (env.kind === "service.clock") showClock(env.data);
    if (!model.kinds.has(env.kind)) {
      model.kinds.add(env.kind);
      const sel = $("filter-kind");
      const opts = [...sel.options].slice(1).map((o) => o.value).concat(env.kind).sort();
      const cur = sel.value;
      sel.replaceChildren(el("option", { value: "" }, "every kind"), ...opts.map((k) => el("option", { value: k }, k)));
      sel.value = cur;
    }
    let g = groupFor(env);
    const f = flowFor(g, env);
    // An event of a flow belongs to the launch its flow started in, even
    // when it arrives after another launch began (a late grant).
    if (f) g = f.group;
    // A step's duration is counted from the previous step of its flow, or
    // of its launch for an event outside any flow.
    const prev = f ? f.events[f.events.length - 1] : g.events[g.events.length - 1];
    if (f) f.events.push(env);
    g.events.push(env);
    const li = renderEvent(env, prev);
    env._li = li;
    env._group = g;
    env._flow = f;
    if (f) {
      f.list.append(li);
      updateFlow(f, env);
    } else {
      let run = g.body.lastElementChild;
      if (!run || run.tagName !== "OL") {
        run = el("ol", { class: "events" });
        g.body.append(run);
      }
      run.append(li);
    }
    updateGroup(g);
    applyFilterTo(env);
    if (!rebuilding) {
      trim();
      scheduleCount();
    }
  }

  // trim drops the oldest events beyond keepEvents: their list items, and
  // the flows and launch groups they leave empty.
  function trim() {
    const over = model.events.length - keepEvents;
    if (over <= 0) return;
    const gone = model.events.splice(0, over);
    const touched = new Set();
    for (const env of gone) {
      model.seen.delete(env.seq);
      if (env.seq > model.floor) model.floor = env.seq;
      model.dropped++;
      const g = env._group, f = env._flow;
      if (env._li) {
        const run = env._li.parentNode;
        releaseRow(env);
        // A run of events outside any flow, left empty.
        if (!f && run && !run.firstChild) run.remove();
      }
      if (f) {
        const i = f.events.indexOf(env);
        if (i >= 0) f.events.splice(i, 1);
        if (!f.events.length) {
          f.node.remove();
          model.flowById.delete(f.id);
          model.outcomes.delete(f.id);
          g.flows.splice(g.flows.indexOf(f), 1);
        } else touched.add(f);
      }
      if (g) {
        const i = g.events.indexOf(env);
        if (i >= 0) g.events.splice(i, 1);
        if (!g.events.length) {
          g.node.remove();
          model.groups.splice(model.groups.indexOf(g), 1);
          if (model.groupByKey.get(g.key) === g) model.groupByKey.delete(g.key);
        } else touched.add(g);
      }
      env._li = env._group = env._flow = null;
    }
    for (const x of touched) {
      if (!x.events.length) continue;
      if (x.group) updateFlow(x, null); else updateGroup(x);
    }
  }

  function rebuild() {
    for (const env of model.events) releaseRow(env);
    $("timeline").replaceChildren();
    model.groups = [];
    model.groupByKey.clear();
    model.flowById.clear();
    for (const env of model.events) addEvent(env, true);
    refreshFilter();
  }

  // ---- Filter, search, export -----------------------------------------

  function filterState() {
    return { kind: $("filter-kind").value, level: $("filter-level").value, text: $("filter-text").value.trim().toLowerCase() };
  }

  function visible(env, fs) {
    if (fs.kind && env.kind !== fs.kind) return false;
    if (fs.level && levelRank[levelOf(env.kind, env.data)] < levelRank[fs.level]) return false;
    if (fs.text) {
      if (env._text === undefined) env._text = (env.kind + " " + summary(env.kind, env.data) + " " + JSON.stringify(env.data)).toLowerCase();
      if (!env._text.includes(fs.text)) return false;
    }
    return true;
  }

  let fsCache = null;
  function applyFilterTo(env) {
    const fs = fsCache || filterState();
    env._li.hidden = !visible(env, fs);
    if (!env._li.hidden) {
      if (env._flow) env._flow.node.hidden = false;
      env._group.node.hidden = false;
      $("timeline-empty").hidden = true;
    } else {
      if (env._flow) env._flow.node.hidden = !env._flow.events.some((e) => e._li && !e._li.hidden);
      env._group.node.hidden = !env._group.events.some((e) => e._li && !e._li.hidden);
    }
  }

  function refreshFilter() {
    fsCache = filterState();
    for (const env of model.events) if (env._li) env._li.hidden = !visible(env, fsCache);
    for (const g of model.groups) {
      for (const f of g.flows) f.node.hidden = !f.events.some((e) => !e._li.hidden);
      for (const run of g.body.querySelectorAll(":scope > ol.events")) run.hidden = ![...run.children].some((li) => !li.hidden);
      g.node.hidden = !g.events.some((e) => !e._li.hidden);
    }
    fsCache = null;
    updateCount();
  }

  function updateCount() {
    const fs = filterState();
    const shown = model.events.filter((e) => e._li && !e._li.hidden).length;
    const total = model.events.length;
    $("timeline-empty").hidden = total > 0;
    $("timeline-count").textContent = total === 0 ? "" :
      (fs.kind || fs.level || fs.text ? shown + " of " + total + " events shown" : total + " events") +
      ", " + model.groups.length + " group" + (model.groups.length > 1 ? "s" : "") +
      (model.dropped ? " (the latest " + keepEvents + " kept: " + model.dropped + " older dropped)" : "");
  }
  let countPending = false;
  function scheduleCount() {
    if (countPending) return;
    countPending = true;
    requestAnimationFrame(() => { countPending = false; updateCount(); });
  }

  for (const id of ["filter-kind", "filter-level"]) $(id).addEventListener("change", refreshFilter);
  $("filter-text").addEventListener("input", refreshFilter);

  // exportTimeline downloads what the timeline shows: the groups and flows
  // as they are drawn, with only the events the filter lets through.
  function exportTimeline() {
    const fs = filterState();
    const shown = (e) => e._li && !e._li.hidden;
    const out = {
      exported_at: new Date().toISOString(),
      filter: { kind: fs.kind || null, level: fs.level || null, search: fs.text || null },
      groups: [],
    };
    for (const g of model.groups.slice().reverse()) {
      const evs = g.events.filter(shown);
      if (!evs.length) continue;
      out.groups.push({
        launch: g.key, title: g.title, origin: g.sub,
        events: evs.filter((e) => !e._flow).map(plain),
        flows: g.flows.map((f) => ({ f, evs: f.events.filter(shown) })).filter((x) => x.evs.length).map(({ f, evs: fe }) => ({
          id: f.id, client_id: f.clientID || null, status: f.status,
          started: f.events[0].time, ended: f.events[f.events.length - 1].time,
          duration_ms: new Date(f.events[f.events.length - 1].time) - new Date(f.events[0].time),
          events: fe.map(plain),
        })),
      });
    }
    download("miniapp-timeline-" + out.exported_at.replace(/[:.]/g, "-") + ".json", JSON.stringify(out, null, 2), "application/json");
    return out;
  }
  $("export-timeline").addEventListener("click", exportTimeline);

  $("clear-timeline").addEventListener("click", () => {
    for (const env of model.events) releaseRow(env);
    model.events = [];
    rebuild();
  });

  // The Server events panel (events.js) asks for the flow of a server
  // event: the flow whose trace it is (the host's traceparent reached the
  // server with it, docs/deploy.md "Traces"), or one of whose events names
  // its trace id or grant id, else the flow of its client whose span holds its time (within 5 s).
  // The flow found is selected (outlined, scrolled into view) and its id
  // written back into the request.
  document.addEventListener("miniapp:select-flow", (ev) => {
    const q = ev.detail || {};
    const flows = [...model.flowById.values()].filter((f) => f.events.length);
    const names = (key, v) => v && flows.find((f) => f.events.some((e) => e.data && (e.data[key] === v || (e.data.grant && e.data.grant[key] === v))));
    let f = (q.trace_id && flows.find((x) => model.traces.get(x.id) === q.trace_id)) ||
      names("trace_id", q.trace_id) || names("grant_id", q.grant_id);
    if (!f && q.client_id) {
      const t = new Date(q.time).getTime();
      let gap = 5000;
      for (const x of flows) {
        if (x.clientID !== q.client_id) continue;
        const a = new Date(x.events[0].time).getTime(), b = new Date(x.events[x.events.length - 1].time).getTime();
        const g = t < a ? a - t : t > b ? t - b : 0;
        if (g <= gap) { f = x; gap = g; }
      }
    }
    for (const n of document.querySelectorAll("#timeline .flow[data-selected]")) delete n.dataset.selected;
    if (!f) return;
    q.flow = f.id;
    q.hidden = f.node.hidden || f.group.node.hidden;
    f.node.dataset.selected = "true";
    f.node.scrollIntoView({ block: "nearest" });
  });

  // showDownload says under the header where the window wrote a file this
  // page (Export HAR, Export JSON) or the Miniapp downloaded: the window
  // saves downloads itself and reports each on the channel.
  function showDownload(d) {
    const n = $("download-status");
    n.classList.toggle("error", !!d.error);
    n.dataset.path = d.error ? "" : str(d.path);
    notice("download-status", d.error ? "Download of " + str(d.filename) + " failed: " + str(d.error) :
      "Saved to " + str(d.path) + (d.view && d.view !== "launcher" ? " (downloaded by the " + str(d.view) + ")" : ""));
  }

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
      await refreshOutcomes();
    });
    ws.addEventListener("message", (m) => {
      let env;
      try { env = JSON.parse(m.data); } catch (_) { return; }
      addEvent(env);
      if (env && env.type === "event" && env.kind === "download") showDownload(env.data || {});
      if (env && env.type === "event" && env.kind === "device.changed") showDevice(env.data || {});
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
      await Promise.all([loadMiniapps(), loadSubjects(), loadDevices(), loadProfiles()]);
      connect(s.automation_url);
      document.body.dataset.ready = "true";
    } catch (e) {
      fail("The playground did not answer: " + e.message);
    }
  }
  main();
})();
