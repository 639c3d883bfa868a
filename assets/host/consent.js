// The host's own screens: consent, rejection, error, crashed, blocked (a
// notice of blocked navigations). The host
// calls window.hostRender(screen) with JSON it encoded itself; everything
// shown is set with textContent, never parsed as HTML, because the consent
// model carries text chosen by whoever wrote the authorization request.
// Answers go to the host through the "host" message handler, which exists
// only in this view.
(function () {
  "use strict";
  var post = function (m) { window.webkit.messageHandlers.host.postMessage(JSON.stringify(m)); };
  var root = document.getElementById("root");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function name(x) {
    if (x === undefined || x === null) return "";
    if (typeof x !== "object") return String(x);
    return x.display_name || x.name || x.title || x.legal_name || x.id || x.identifier || x.client_id || "";
  }
  function clp(v) {
    var n = Number(v);
    if (!isFinite(n)) return String(v);
    try {
      return new Intl.NumberFormat("es-CL", { style: "currency", currency: "CLP" }).format(n) + " CLP";
    } catch (e) {
      return "$" + String(v) + " CLP";
    }
  }
  // then runs once the screen is on screen: two frames, the first lays
  // out, the second is painted.
  // renderSeq is the number the host gave the render on view; "shown"
  // repeats it, so that the host can tell a replaced screen's message.
  var renderSeq = 0;
  function shown(screen, then) {
    var seq = renderSeq;
    requestAnimationFrame(function () {
      requestAnimationFrame(function () {
        post({ action: "shown", screen: screen, seq: seq });
        if (then) then();
      });
    });
  }

  // Deliberate input (docs/host.md, "Consent takes deliberate input"):
  // Approve accepts input only once the screen has been on screen for
  // armMs, and only a click whose trusted pointer or key press began on
  // Approve after that. Input aimed at the Miniapp, or begun before the
  // screen was visible, never approves. Deny needs no arming.
  var armedAt = Infinity; // performance.now() from which Approve accepts input
  var pressedOn = null;   // the button a trusted press after arming began on
  var rearm = null;       // restarts the arming of the consent on screen
  function armed() { return performance.now() >= armedAt; }
  function notePress(ev) { pressedOn = ev.isTrusted && armed() ? ev.currentTarget : null; }
  function deliberate(ev) {
    var ok = ev.isTrusted && armed() && pressedOn === ev.currentTarget;
    pressedOn = null;
    return ok;
  }
  var decideNow = null; // the consent on screen's decision, for keys and hostPress
  // hostPresses records every trusted press on a consent screen: when,
  // since it was on screen, and whether Approve was armed. Only the host
  // reads it (the tests); the Miniapp's pages cannot reach this view.
  window.hostPresses = [];
  var shownAt = 0;
  // A press while the screen is not armed restarts the arming: a burst of
  // clicks aimed at the Miniapp never runs into an armed Approve.
  function onAnyPress(ev) {
    if (!ev.isTrusted || !rearm) return;
    var early = !armed();
    window.hostPresses.push({ at: Math.round(performance.now() - shownAt), armed: !early,
      target: ev.target && ev.target.id || "" });
    if (early) rearm();
  }
  document.addEventListener("pointerdown", onAnyPress, true);
  document.addEventListener("keydown", onAnyPress, true);
  function bar(buttons) {
    var b = el("div", "bar");
    buttons.forEach(function (x) { b.appendChild(x); });
    return b;
  }
  function button(text, cls, id, onclick) {
    var b = el("button", cls, text);
    b.id = id;
    b.addEventListener("click", onclick);
    return b;
  }

  // limits phrases a permission's limits (consent.Limits) for people.
  function limits(p) {
    var out = [], l = p.limits;
    if (!l) return out;
    if (l.minimum || l.maximum) out.push("Each charge from " + clp(l.minimum) + " to " + clp(l.maximum));
    if (l.budget && l.budget.amount) {
      var b = l.budget;
      var n = b.count || 1, unit = String(b.unit || "");
      var every = n === 1 ? unit.replace(/s$/, "") : n + " " + unit;
      out.push("Budget of " + clp(b.amount) + " every " + every +
        (b.time_zone ? " (" + b.time_zone + ")" : "") + "; accepted but not enforced");
    }
    if (l.selection) {
      var mn = l.selection.min || 1, mx = l.selection.max || mn;
      out.push("Accounts to select: " + (mn === mx ? mn : mn + " to " + mx));
    }
    if (l.identifiers && l.identifiers.length) out.push("Accounts named by the request: " + l.identifiers.join(", "));
    if (l.sources && l.sources.length) out.push("Paying sources: " + l.sources.join(", "));
    if (l.beneficiaries && l.beneficiaries.length) out.push("Beneficiaries: " + l.beneficiaries.join(", "));
    if (l.account_binding) {
      out.push("Binds an account named \u201c" + l.account_binding.suggested_name + "\u201d" + (l.account_binding.editable ? " (you may rename it)" : ""));
    }
    if (l.subject_identifier) out.push("For the profile " + l.subject_identifier);
    return out;
  }

  // consent renders a consent.Model (package consent).
  function consent(m, s) {
    m = m || {};
    root.textContent = "";
    armedAt = Infinity;
    var asker = name(m.client) || name(m.project) || "A Miniapp";
    root.appendChild(el("h1", "", asker + " asks for access"));
    root.appendChild(el("p", "sub", m.remembered ? "You allowed all of this before; approve to continue, or deny."
      : "Review what it may do, then approve or deny."));

    var who = el("dl", "card who");
    who.id = "who";
    var client = m.client || {};
    var company = m.company;
    [["Project", name(m.project)],
     ["Client", (client.name || "") + (client.id ? " (" + client.id + (client.type ? ", " + client.type : "") + ")" : "")],
     ["Miniapp", s.miniapp_origin || ""],
     ["Returns to", s.redirect_uri || ""],
     ["Signed in as", name(m.subject) + (m.subject && m.subject.email ? " \u00b7 " + m.subject.email : "")],
     ["Company", company ? company.name + (company.legal_id ? " \u00b7 " + company.legal_id : "") + (company.country ? " \u00b7 " + company.country : "") : ""]
    ].forEach(function (r) {
      if (!r[1]) return;
      who.appendChild(el("dt", "", r[0]));
      who.appendChild(el("dd", "", r[1]));
    });
    root.appendChild(who);

    // "ask" is the consent check while this screen asks: only "fail" refuses.
    var failed = (m.checks || []).filter(function (c) { return c && c.outcome === "fail"; });
    if (failed.length) {
      var r = el("section", "card refused");
      r.id = "refused";
      r.appendChild(el("h2", "", "Refused: this request can only be denied"));
      var ul = el("ul");
      failed.forEach(function (c) { ul.appendChild(el("li", "", c.name + (c.message ? ": " + c.message : ""))); });
      r.appendChild(ul);
      root.appendChild(r);
    }

    // Per-entry consent (docs/native-consent.md, "2. Post the decision"):
    // every entry but a fixed one (openid in an OpenID Connect request) has
    // a checkbox, checked by default; an automatic charge's maximum may be
    // lowered. The choices live in this state and change only by trusted
    // input once the screen is armed, or by hostPress; the checkboxes and
    // fields show the state.
    var perms = m.permissions || [];
    var declined = {};   // entry ("scope NAME", "detail N") -> true
    var maxOf = {};      // detail index -> the maximum typed ("" = as requested)
    var entries = [];    // {p, key, box, card, max}
    function entryKey(p) { return p.kind === "detail" && p.index !== undefined ? "detail " + p.index : "scope " + p.name; }
    function label(p) { return p.kind === "detail" ? (p.key || p.name) : p.name; }
    var choosers = {};   // account owner ("subject", "company") -> its fieldset
    function ownerOf(p) { return p.account_owner || "subject"; }
    var twoOwners = perms.some(function (p) { return p.needs_account && ownerOf(p) === "subject"; }) &&
      perms.some(function (p) { return p.needs_account && ownerOf(p) === "company"; });
    perms.forEach(function (p, i) {
      var key = entryKey(p);
      var c = el("section", "card perm");
      c.dataset.entry = key;
      var head = el("label", "grant");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.className = "grant";
      box.id = "grant-" + i;
      box.value = key;
      box.checked = true;
      if (p.fixed) box.disabled = true;
      head.appendChild(box);
      head.appendChild(el("h2", "", p.meaning || p.name));
      c.appendChild(head);
      c.appendChild(el("code", "", p.name + (p.provider ? " \u00b7 " + p.provider : "")));
      if (p.fixed) c.appendChild(el("div", "note", "Needed to sign you in: it cannot be declined."));
      if (p.company_scoped && company) c.appendChild(el("div", "limits", "For the company " + company.name + (company.legal_id ? " \u00b7 " + company.legal_id : "")));
      var acts = p.actions || [];
      if (acts.length) {
        var ul = el("ul");
        acts.forEach(function (a) { ul.appendChild(el("li", "", (a.meaning || a.name) + " (" + a.name + ")")); });
        c.appendChild(ul);
      }
      limits(p).forEach(function (l) { c.appendChild(el("div", "limits", l)); });
      var e = { p: p, key: key, box: box, card: c, max: null };
      if (p.kind === "detail" && p.limits && p.limits.maximum) {
        var row = el("label", "maxrow");
        row.appendChild(el("span", "", "Largest charge you allow (CLP, " + p.limits.minimum + " to " + p.limits.maximum + ")"));
        var inp = document.createElement("input");
        inp.type = "text";
        inp.inputMode = "numeric";
        inp.id = "maximum-" + p.index;
        inp.className = "maximum";
        inp.value = p.limits.maximum;
        inp.addEventListener("input", function (ev) {
          if (!ev.isTrusted || !armed()) { inp.value = maxOf[p.index] || p.limits.maximum; return; }
          maxOf[p.index] = inp.value.trim() === p.limits.maximum ? "" : inp.value.trim();
          update();
        });
        row.appendChild(inp);
        c.appendChild(row);
        e.max = inp;
      }
      // One account chooser per owner (docs/native-consent.md): a
      // bank_account detail binds an account of the subject, an automatic
      // charge one of the Company; with both, the Company's chooser
      // answers company_account.
      var owner = ownerOf(p);
      var accts = (m.accounts || []).filter(function (a) { return (a.owner || "subject") === owner; });
      if (p.needs_account && m.account_required && accts.length) {
        if (!choosers[owner]) {
          var fs = el("fieldset", "accounts");
          fs.id = Object.keys(choosers).length ? "accounts-" + owner : "accounts";
          fs.dataset.owner = owner;
          fs.appendChild(el("legend", "", twoOwners && owner === "company" ? "Company account to pay from" : "Account to share"));
          accts.forEach(function (a, k) {
            var lab = el("label", "acct");
            var input = document.createElement("input");
            input.type = "radio";
            input.name = twoOwners && owner === "company" ? "company_account" : "account";
            input.value = a.id;
            if (k === 0) input.checked = true;
            lab.appendChild(input);
            lab.appendChild(el("span", "", a.name + (a.number ? " \u00b7 " + a.number : "") + (a.currency ? " \u00b7 " + a.currency : "")));
            fs.appendChild(lab);
          });
          choosers[owner] = fs;
          c.appendChild(fs);
        } else {
          c.appendChild(el("div", "note", "Uses the account chosen above."));
        }
      }
      box.addEventListener("click", function (ev) {
        // Only a deliberate click, once armed, changes what is granted.
        if (!ev.isTrusted || !armed() || p.fixed) { ev.preventDefault(); return; }
        if (box.checked) delete declined[key]; else declined[key] = true;
        update();
      });
      entries.push(e);
      root.appendChild(c);
    });
    // What keeps Approve off is said beside it, in the bar that stays on
    // screen, whichever entry was changed.
    var warn = el("div", "warn");
    warn.id = "rules";
    warn.setAttribute("role", "alert");
    warn.hidden = true;

    function granted(key) { return !declined[key]; }
    // problems lists what keeps the choices from being approved: a rule
    // between entries (each permission's requires), a maximum that is not
    // an amount within the requested limits, nothing left to grant.
    function problems() {
      var out = [];
      entries.forEach(function (e) {
        if (!granted(e.key)) return;
        (e.p.requires || []).forEach(function (r) {
          if (!granted(r.kind === "detail" && r.index !== undefined ? "detail " + r.index : "scope " + r.name)) out.push(r.message);
        });
        var v = maxOf[e.p.index];
        if (e.max && v) {
          var l = e.p.limits;
          if (!/^[1-9][0-9]{0,14}$/.test(v)) out.push(label(e.p) + ": the largest charge must be an amount in whole CLP, digits only");
          else if (Number(v) < Number(l.minimum) || Number(v) > Number(l.maximum)) out.push(label(e.p) + ": the largest charge must be from " + l.minimum + " to " + l.maximum + " CLP");
        }
      });
      if (entries.length && entries.every(function (e) { return !granted(e.key); })) out.push("Nothing is left to grant: deny instead, or keep an entry.");
      return out;
    }
    function choices() {
      var d = { declined_scopes: [], declined_details: [], lowered_maximums: [] };
      entries.forEach(function (e) {
        if (!granted(e.key)) {
          if (e.p.kind === "detail") d.declined_details.push(e.p.index); else d.declined_scopes.push(e.p.name);
        } else if (e.max && maxOf[e.p.index]) {
          d.lowered_maximums.push({ index: e.p.index, maximum: maxOf[e.p.index] });
        }
      });
      d.needs_account = entries.some(function (e) { return e.p.needs_account && granted(e.key); });
      d.owners = {};
      entries.forEach(function (e) { if (e.p.needs_account && granted(e.key)) d.owners[ownerOf(e.p)] = true; });
      return d;
    }
    var blocked = [];
    function update() {
      entries.forEach(function (e) {
        e.box.checked = granted(e.key);
        e.card.classList.toggle("declined", !granted(e.key));
        if (e.max) {
          e.max.disabled = !granted(e.key);
          if (document.activeElement !== e.max) e.max.value = maxOf[e.p.index] || e.p.limits.maximum;
        }
      });
      var owners = choices().owners;
      Object.keys(choosers).forEach(function (o) { choosers[o].hidden = !owners[o]; });
      blocked = problems();
      warn.textContent = "";
      warn.hidden = blocked.length === 0;
      if (blocked.length) {
        warn.appendChild(el("strong", "", "Approve is off: "));
        blocked.forEach(function (t, k) { warn.appendChild(el("span", "", (k ? " \u00b7 " : "") + t)); });
      }
      if (approve) {
        // Off, but not with the disabled attribute (see inert): a press
        // on it still reaches the page.
        approve.dataset.blocked = blocked.length ? "true" : "false";
        inert(approve.dataset.inert === "true");
      }
    }

    var approve = null;
    function decide(action) {
      if (approve.dataset.decided) return;
      approve.dataset.decided = action;
      function chosen(name) {
        var r = document.querySelector("input[name=" + name + "]:checked");
        return r && !r.closest("fieldset").hidden ? r.value : "";
      }
      approve.disabled = deny.disabled = true;
      decideNow = null;
      if (action !== "approve") { post({ action: "deny" }); return; }
      var d = choices();
      post({ action: "approve", account: chosen("account"), company_account: chosen("company_account"),
        declined_scopes: d.declined_scopes, declined_details: d.declined_details, lowered_maximums: d.lowered_maximums });
    }
    approve = button("Approve", "primary", "approve", function (ev) {
      if (approve.dataset.inert !== "true" && approve.dataset.blocked !== "true" && deliberate(ev)) decide("approve");
    });
    approve.addEventListener("pointerdown", notePress);
    approve.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") notePress(ev);
    });
    var deny = button("Deny", "", "deny", function () { decide("deny"); });
    // Inert until armed: aria-disabled and styled so, but not the disabled
    // attribute, under which WebKit would hide the presses on it from the
    // page, and a press would not restart the arming.
    function inert(on) {
      approve.dataset.inert = on ? "true" : "false";
      if (on || approve.dataset.blocked === "true") approve.setAttribute("aria-disabled", "true"); else approve.removeAttribute("aria-disabled");
    }
    inert(true);
    approve.disabled = failed.length > 0;
    update();
    root.appendChild(bar([warn, deny, approve]));
    // setChoices replaces the choices with those of the automation
    // channel: it answers "" or what is wrong with them.
    function setChoices(c) {
      var nd = {}, nm = {};
      var i, k;
      for (i = 0; i < (c.declined_scopes || []).length; i++) {
        var s = c.declined_scopes[i];
        k = entries.filter(function (e) { return e.p.kind !== "detail" && e.p.name === s; })[0];
        if (!k) return "declined_scopes[" + i + "] " + JSON.stringify(s) + " is not a scope on the screen";
        if (k.p.fixed) return "declined_scopes[" + i + "] " + JSON.stringify(s) + " is the sign-in of an OpenID Connect request and cannot be declined";
        nd[k.key] = true;
      }
      for (i = 0; i < (c.declined_details || []).length; i++) {
        var x = c.declined_details[i];
        if (!entries.some(function (e) { return e.key === "detail " + x; })) return "declined_details[" + i + "] " + JSON.stringify(x) + " is not the index of a detail on the screen";
        nd["detail " + x] = true;
      }
      for (i = 0; i < (c.lowered_maximums || []).length; i++) {
        var lm = c.lowered_maximums[i] || {};
        if (!entries.some(function (e) { return e.max && e.p.index === lm.index; })) return "lowered_maximums[" + i + "].index " + JSON.stringify(lm.index) + " is not an automatic charge on the screen";
        nm[lm.index] = String(lm.maximum);
      }
      declined = nd;
      maxOf = nm;
      update();
      return "";
    }
    decideNow = function (action, c) {
      if (action === "approve" && c) {
        var bad = setChoices(c);
        if (bad) return "invalid " + bad;
      }
      if (action === "approve" && failed.length) return "disabled";
      if (action === "approve" && blocked.length) return "refused " + blocked.join("; ");
      if (action === "approve" && !armed()) return "wait " + Math.ceil(armedAt === Infinity ? armMs : armedAt - performance.now());
      decide(action);
      return "ok";
    };
    var armMs = Math.max(500, Number(s.arm_ms) || 1000);
    var timer = null;
    rearm = function () {
      inert(true);
      armedAt = performance.now() + armMs;
      clearTimeout(timer);
      timer = setTimeout(function () {
        if (!approve.dataset.decided) inert(false);
      }, armMs);
    };
    shown("consent", function () {
      shownAt = performance.now();
      rearm();
    });
  }

  // Escape denies the consent on screen; no key approves.
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && decideNow) decideNow("deny");
  });

  // hostPress is how the host itself (the automation channel, whose token
  // is its proof of intent) presses a button of the consent on screen:
  // arming, failed checks and the rules between entries apply, the pointer
  // rule does not. choices, when given, replaces the per-entry choices
  // ({declined_scopes, declined_details, lowered_maximums}); without it
  // the screen's own are kept. It answers "ok", "disabled" (a check
  // failed), "refused <why>" (the choices break a rule), "invalid <why>"
  // (a choice names no entry of the screen), "wait <ms>" (not armed yet),
  // "no-account", or "no-consent". The Miniapp's pages cannot reach it.
  window.hostPress = function (action, account, choices) {
    if (!decideNow) return "no-consent";
    if (account) {
      var r = Array.prototype.find.call(document.querySelectorAll("input[name=account], input[name=company_account]"), function (x) { return x.value === account; });
      if (!r) return "no-account";
      r.checked = true;
    }
    return decideNow(action, choices);
  };

  function message(s, buttons) {
    root.textContent = "";
    root.appendChild(el("h1", "", s.title || "Miniapp Host"));
    var c = el("div", "card");
    c.id = "message";
    String(s.text || "").split("\n").forEach(function (line) { c.appendChild(el("p", "", line)); });
    root.appendChild(c);
    if (buttons.length) root.appendChild(bar(buttons));
    shown(s.screen);
  }

  window.hostRender = function (s, seq) {
    renderSeq = seq || 0;
    decideNow = null;
    rearm = null;
    switch (s.screen) {
    case "consent": return consent(s.model, s);
    case "crashed":
      return message({ screen: "crashed", title: "The Miniapp stopped", text: s.text },
        [button("Reload", "primary", "reload", function () { post({ action: "reload" }); })]);
    case "error":
      return message(s, [button("Close", "", "close", function () { post({ action: "close" }); })]);
    case "blocked":
      // The notice of blocked navigations: Close only hides it.
      return message(s, [button("Close", "primary", "dismiss", function () { post({ action: "dismiss" }); })]);
    default:
      return message(s, []);
    }
  };
})();
