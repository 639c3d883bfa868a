// The launcher's Server events panel (docs/playground.md, "Server events"):
// the reference server's audit events, newest last, listed and then followed
// through the launcher's API (GET /api/server-events and its stream), which
// calls the dashboard with the playground's operator key: this page never
// has the key. Every value is written with textContent.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  // The automation token, in the fragment of the launcher URL or kept for
  // this tab; this script runs before playground.js, which keeps it and
  // cleans the address bar (the query with it).
  const token = new URLSearchParams(location.hash.slice(1)).get("token") || sessionStorage.getItem("playground-token") || "";
  const search = new URLSearchParams(location.search);

  // keep bounds the list: the oldest rows go beyond it (a row is reused
  // for the next event, as the inspector does). ?events-keep=N lowers it.
  const keep = (() => {
    const n = Number(search.get("events-keep"));
    return Number.isInteger(n) && n > 0 ? n : 500;
  })();

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
    }
    for (const c of children) if (c !== undefined && c !== null && c !== false) e.append(c);
    return e;
  }
  const str = (v) => (v === undefined || v === null ? "" : typeof v === "string" ? v : JSON.stringify(v));
  function setText(node, text) { if (node.textContent !== text) node.textContent = text; }

  const list = $("sev-list");
  const status = $("sev-status");
  const state = {
    rows: [],        // the rows shown, oldest first
    pending: [],     // events that came while paused, oldest first
    last: 0,         // the id of the last event received: the stream goes on after it
    seen: 0,         // events received since the filter was set
    cleared: 0,      // events cleared away since
    paused: false,
    abort: null,     // ends the current list and stream
    retry: 500,
    error: "",
  };

  function filter() {
    const q = new URLSearchParams();
    for (const [name, id] of [["client", "sev-client"], ["subject", "sev-subject"], ["kind", "sev-kind"]]) {
      const v = $(id).value.trim();
      if (v) q.set(name, v);
    }
    return q;
  }

  function showStatus(kind, text) {
    status.dataset.state = kind;
    setText(status, text);
  }

  function updateStatus() {
    if (state.error) return;
    const f = filter();
    const n = state.rows.length;
    let text = n + " event" + (n === 1 ? "" : "s") + (f.toString() ? " matching " + [...f].map(([k, v]) => k + " " + v).join(", ") : "");
    if (state.seen - state.cleared - state.pending.length > n) text += " (the latest " + keep + " kept)";
    if (state.paused) {
      showStatus("paused", "paused: " + state.pending.length + " new not drawn; " + text);
      return;
    }
    showStatus(state.live ? "live" : "connecting", (state.live ? "live: " : "connecting: ") + text);
  }

  // ---- rows ----------------------------------------------------------

  const pool = [];
  function takeRow() {
    const li = pool.pop();
    if (li) return li;
    const parts = {
      time: el("span", { class: "sev-time mono" }),
      kind: el("span", { class: "sev-kind" }),
      outcome: el("span", { class: "badge" }),
      who: el("div", { class: "sev-who mono" }),
      detail: el("div", { class: "sev-detail", hidden: "" }),
    };
    const row = el("li", { tabindex: "0", "aria-expanded": "false" },
      el("div", { class: "sev-head" }, parts.time, parts.kind, parts.outcome), parts.who, parts.detail);
    row._parts = parts;
    return row;
  }

  function release(li) {
    li.remove();
    li._ev = null;
    const p = li._parts;
    p.detail.replaceChildren();
    p.detail.hidden = true;
    li.setAttribute("aria-expanded", "false");
    delete li.dataset.flow;
    if (pool.length < 64) pool.push(li);
  }

  function fillRow(li, ev) {
    const p = li._parts;
    li._ev = ev;
    li.dataset.id = str(ev.id);
    li.dataset.kind = str(ev.kind);
    li.dataset.client = str(ev.client_id);
    li.dataset.subject = str(ev.subject);
    li.dataset.outcome = str(ev.outcome);
    const t = new Date(ev.time);
    setText(p.time, isNaN(t) ? str(ev.time) : t.toISOString().slice(11, 23));
    setText(p.kind, str(ev.kind));
    p.outcome.dataset.outcome = str(ev.outcome);
    p.outcome.hidden = !ev.outcome;
    setText(p.outcome, str(ev.outcome));
    const who = [ev.client_id ? "client " + str(ev.client_id) : "", ev.subject ? "subject " + str(ev.subject) : ""].filter(Boolean);
    if (!who.length && ev.actor) who.push("by " + str(ev.actor));
    if (ev.kind === "request.refused" && ev.refusal) who.push(str(ev.refusal.error) + (ev.refusal.field ? " at " + str(ev.refusal.field) : ""));
    setText(p.who, who.join(" · "));
  }

  function dl(rows) {
    const d = el("dl", { class: "kv" });
    for (const [k, v] of rows) {
      if (v === undefined || v === null || v === "") continue;
      d.append(el("dt", {}, k), el("dd", { class: "mono", "data-key": k }, str(v)));
    }
    return d;
  }

  // expand draws what a row holds beyond its head: a refusal's rule,
  // field, sent and expected first, then who, the grant, the trace, the
  // instance and the detail map; and the inspector's flow of the event.
  function expand(li) {
    const ev = li._ev;
    const p = li._parts;
    if (!p.detail.firstChild) {
      const r = ev.refusal;
      if (r) {
        p.detail.append(el("div", { class: "sev-refusal" }, dl([["error", r.error], ["rule", r.rule], ["field", r.field],
          ["sent", r.sent], ["expected", r.expected]])));
      }
      const detail = ev.detail && typeof ev.detail === "object" ? Object.entries(ev.detail) : [];
      p.detail.append(dl([["actor", ev.actor], ["grant", ev.grant_id], ["trace", ev.trace_id], ["instance", ev.instance],
        ["event", "#" + str(ev.id) + " " + str(ev.time)], ...detail]));
      p.flow = el("div", { class: "sev-flow" });
      p.detail.append(p.flow);
    }
    p.detail.hidden = false;
    li.setAttribute("aria-expanded", "true");
    selectFlow(li);
  }

  // selectFlow asks the inspector (playground.js) for the flow of the
  // event: the one its trace id or grant id names, else the flow of its
  // client whose span holds its time. The inspector selects it.
  function selectFlow(li) {
    const ev = li._ev;
    const p = li._parts;
    if (!ev.client_id && !ev.grant_id && !ev.trace_id) {
      setText(p.flow, "");
      return;
    }
    const q = { client_id: ev.client_id || "", grant_id: ev.grant_id || "", trace_id: ev.trace_id || "", time: ev.time, flow: "", hidden: false };
    document.dispatchEvent(new CustomEvent("miniapp:select-flow", { detail: q }));
    p.flow.dataset.found = String(!!q.flow);
    if (q.flow) {
      li.dataset.flow = q.flow;
      setText(p.flow, "Flow " + q.flow + " selected in the inspector" + (q.hidden ? " (its filter hides it)" : ""));
    } else {
      delete li.dataset.flow;
      setText(p.flow, "No flow of the inspector matches (the inspector shows the window's flows; a sign-in in a browser tab has none).");
    }
  }

  list.addEventListener("click", (e) => {
    if (e.target.closest(".sev-detail")) return; // selecting text in the details
    const li = e.target.closest("li");
    if (!li || !li._ev) return;
    if (li.getAttribute("aria-expanded") === "true") {
      li._parts.detail.hidden = true;
      li.setAttribute("aria-expanded", "false");
      return;
    }
    expand(li);
  });
  list.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" && e.key !== " ") return;
    const li = e.target.closest("li");
    if (!li || !li._ev || e.target !== li) return;
    e.preventDefault();
    li.click();
  });

  // draw appends events, newest last, keeping the latest `keep`, and
  // follows the bottom when the list was scrolled there.
  function draw(events) {
    if (!events.length) return;
    const body = list.parentElement;
    const atBottom = body.scrollHeight - body.scrollTop - body.clientHeight < 24;
    for (const ev of events) {
      if (state.rows.length >= keep) release(state.rows.shift());
      const li = takeRow();
      fillRow(li, ev);
      list.append(li);
      state.rows.push(li);
    }
    $("sev-empty").hidden = true;
    if (atBottom) body.scrollTop = body.scrollHeight;
  }

  function receive(events) {
    const fresh = events.filter((ev) => ev && typeof ev.id === "number" && ev.id > state.last);
    if (!fresh.length) return;
    state.last = fresh[fresh.length - 1].id;
    state.seen += fresh.length;
    if (state.paused) {
      state.pending.push(...fresh);
      if (state.pending.length > keep) state.pending.splice(0, state.pending.length - keep);
    } else {
      draw(fresh);
    }
    updateStatus();
  }

  // ---- the API ---------------------------------------------------------

  async function apiError(resp) {
    let data = null;
    try { data = await resp.json(); } catch (_) { /* not JSON */ }
    const e = (data && data.error) || {};
    const err = new Error((e.code ? e.code + ": " : "") + (e.message || resp.status + " " + resp.statusText));
    err.status = resp.status;
    err.field = e.field || "";
    return err;
  }

  async function get(path, signal) {
    const resp = await fetch(path, { headers: { Authorization: "Bearer " + token }, signal });
    if (!resp.ok) throw await apiError(resp);
    return resp;
  }

  // follow reads the stream (server-sent events, read with fetch: the
  // API wants the token in a header, which EventSource cannot send) until
  // it ends, handing each audit event to receive.
  async function follow(q, signal) {
    const sq = new URLSearchParams(q);
    sq.set("after", String(state.last));
    const resp = await get("/api/server-events/stream?" + sq, signal);
    state.live = true;
    state.retry = 500;
    state.error = "";
    updateStatus();
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = "", data = [], type = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done || signal.aborted) return;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line === "") {
          if (data.length && (type === "" || type === "audit")) {
            let ev = null;
            try { ev = JSON.parse(data.join("\n")); } catch (_) { /* not an event */ }
            if (ev) receive([ev]);
          }
          data = [];
          type = "";
          continue;
        }
        if (line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (field === "data") data.push(val);
        else if (field === "event") type = val;
      }
    }
  }

  // start lists the newest events of the filter, then follows them; a
  // stream that ends is followed again after the last event received.
  async function start() {
    if (state.abort) state.abort.abort();
    const ctl = new AbortController();
    state.abort = ctl;
    for (const li of state.rows) release(li);
    state.rows = [];
    state.pending = [];
    state.last = 0;
    state.seen = 0;
    state.cleared = 0;
    state.live = false;
    state.error = "";
    $("sev-empty").hidden = false;
    const q = filter();
    updateStatus();
    let listed = false;
    while (!ctl.signal.aborted) {
      try {
        if (!listed) {
          const lq = new URLSearchParams(q);
          lq.set("limit", "100");
          const page = await (await get("/api/server-events?" + lq, ctl.signal)).json();
          if (ctl.signal.aborted) return;
          state.error = "";
          receive(page.events || []);
          if (typeof page.next_after === "number" && page.next_after > state.last) state.last = page.next_after;
          listed = true;
        }
        await follow(q, ctl.signal);
        if (ctl.signal.aborted) return;
        state.live = false;
        updateStatus();
      } catch (e) {
        if (ctl.signal.aborted) return;
        state.live = false;
        if (failed(e, ctl)) return;
      }
      await new Promise((r) => setTimeout(r, state.retry));
      state.retry = Math.min(state.retry * 2, 10000);
    }
  }

  // failed shows why the list or the stream failed; it reports whether to
  // give up: a refused filter (4xx but too many followers) stays refused
  // until the filter changes.
  function failed(e, ctl) {
    const final = e.status >= 400 && e.status < 500 && e.status !== 429;
    state.error = e.message;
    showStatus("error", (final ? "refused: " : "") + e.message + (final ? "" : "; trying again"));
    if (final) ctl.abort();
    return final;
  }

  // ---- controls --------------------------------------------------------

  let typing = null;
  $("sev-filter").addEventListener("submit", (e) => { e.preventDefault(); start(); });
  $("sev-kind").addEventListener("change", () => start());
  for (const id of ["sev-client", "sev-subject"]) {
    $(id).addEventListener("change", () => { clearTimeout(typing); start(); });
    $(id).addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(start, 400); });
  }
  $("sev-pause").addEventListener("click", () => {
    state.paused = !state.paused;
    const b = $("sev-pause");
    b.setAttribute("aria-pressed", String(state.paused));
    setText(b, state.paused ? "Resume" : "Pause");
    if (!state.paused) {
      const evs = state.pending;
      state.pending = [];
      draw(evs);
    }
    updateStatus();
  });
  $("sev-clear").addEventListener("click", () => {
    state.cleared = state.seen;
    for (const li of state.rows) release(li);
    state.rows = [];
    state.pending = [];
    $("sev-empty").hidden = false;
    updateStatus();
  });

  if (token) start();
})();
