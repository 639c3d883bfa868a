// Console capture of the Miniapp's view (docs/host.md, "Console capture").
//
// The host injects this at document start into every frame of the
// Miniapp's view, and never into its own views (consent, launcher). It is
// a function expression the host calls with its limits:
// {handler, maxMessage, maxSource, perSecond}. Every console.* call
// (log, info, warn, error, debug), uncaught error and unhandled promise
// rejection is posted, as one JSON string, to the host's dedicated message
// handler (not the bridge's):
//
//   {"type":"console"|"error"|"rejection","level":"log"|…,"message":"…",
//    "source":"url:line:col","frame":"<location.href>","main":true|false}
//
// and a count of what this frame dropped over the rate as
//   {"type":"dropped","count":N}.
//
// The page's own console keeps working: each wrapper calls the original.
// Nothing here throws into the page.
(function (cfg) {
  "use strict";
  var handlers = window.webkit && window.webkit.messageHandlers;
  var h = handlers && handlers[cfg.handler];
  if (!h) return;
  var post = h.postMessage.bind(h);
  var con = window.console;
  var stringify = JSON.stringify;
  var setTimer = window.setTimeout.bind(window);
  var clock = Date.now;
  var ErrorCtor = Error;
  var ErrorEventCtor = window.ErrorEvent;
  var NodeCtor = window.Node;
  var isMain = window === window.top;
  var levels = ["log", "info", "warn", "error", "debug"];

  // Rate: at most cfg.perSecond messages a second leave this frame; the
  // rest are counted and reported as one "dropped" message when the
  // second ends, so that a page logging in a loop floods nothing.
  var windowStart = 0, sent = 0, dropped = 0, flushing = false;
  function admit() {
    var now = clock();
    if (now - windowStart >= 1000 || now < windowStart) {
      windowStart = now;
      sent = 0;
    }
    if (sent < cfg.perSecond) {
      sent++;
      return true;
    }
    dropped++;
    if (!flushing) {
      flushing = true;
      setTimer(flush, 1000 - (now - windowStart));
    }
    return false;
  }
  function flush() {
    flushing = false;
    if (dropped > 0) {
      var n = dropped;
      dropped = 0;
      try { post(stringify({ type: "dropped", count: n })); } catch (e) { /* the handler is gone */ }
    }
  }

  function cut(s, max) {
    s = String(s);
    return s.length > max ? s.slice(0, max) + "\u2026 (" + (s.length - max) + " more characters)" : s;
  }

  function isError(v) {
    return v instanceof ErrorCtor ||
      (v !== null && typeof v === "object" && typeof v.stack === "string" && typeof v.message === "string");
  }

  // errorText is "Name: message" and the stack. JavaScriptCore's stack
  // lacks the first line that other engines put in it.
  function errorText(e) {
    var head, stack = "";
    try { head = String(e); } catch (x) { head = "Error"; }
    try { stack = typeof e.stack === "string" ? e.stack : ""; } catch (x) { /* a getter threw */ }
    if (!stack) return head;
    return stack.indexOf(head) === 0 ? stack : head + "\n" + stack;
  }

  // format writes one argument: strings as they are, errors with their
  // stack, elements as their markup, other objects as JSON where they
  // can be (cycles marked), String() otherwise.
  function format(v) {
    try {
      if (typeof v === "string") return v;
      if (v === undefined) return "undefined";
      if (typeof v === "bigint") return v + "n";
      if (typeof v === "symbol" || typeof v === "function") return String(v);
      if (v === null || typeof v !== "object") return String(v);
      if (isError(v)) return errorText(v);
      if (NodeCtor && v instanceof NodeCtor) return v.outerHTML || v.nodeName;
      var seen = [];
      var s = stringify(v, function (k, x) {
        if (typeof x === "bigint") return x + "n";
        if (typeof x === "function") return "[Function " + (x.name || "anonymous") + "]";
        if (x === undefined) return "undefined";
        if (x !== null && typeof x === "object") {
          if (isError(x)) return errorText(x);
          if (seen.indexOf(x) >= 0) return "[Circular]";
          seen.push(x);
        }
        return x;
      });
      if (s !== undefined) return s;
    } catch (e) { /* not JSON: a getter threw, or a host object */ }
    try { return String(v); } catch (e) { return "[object]"; }
  }

  // text joins a console call's arguments as browsers do, with the
  // first's %s %d %i %f %o %O %c substitutions.
  function text(args) {
    var out = [], i = 0;
    if (typeof args[0] === "string" && args[0].indexOf("%") >= 0 && args.length > 1) {
      i = 1;
      out.push(args[0].replace(/%([sdifoOc%])/g, function (m, f) {
        if (f === "%") return "%";
        if (i >= args.length) return m;
        var a = args[i++];
        switch (f) {
        case "s": return typeof a === "string" ? a : format(a);
        case "d": case "i": return String(parseInt(a, 10));
        case "f": return String(parseFloat(a));
        case "c": return "";
        default: return format(a);
        }
      }));
    }
    for (; i < args.length; i++) out.push(format(args[i]));
    return out.join(" ");
  }

  // location is the url:line:col of a stack line ("fn@url:1:2", or
  // "url:1:2" for an anonymous frame).
  function location(line) {
    var loc = line;
    var at = line.indexOf("@");
    if (at >= 0 && !/^[a-z][a-z0-9+.-]*:\/\//i.test(line)) loc = line.slice(at + 1);
    return /:\d+:\d+$/.test(loc) ? loc : "";
  }

  // caller is the location of the code that called a console wrapper:
  // the first frame of the stack after the wrapper's own, skipping
  // native frames (a call through apply or bind).
  function caller(stack) {
    var lines = String(stack || "").split("\n");
    for (var i = 1; i < lines.length; i++) {
      if (lines[i].indexOf("[native code]") >= 0) continue;
      var loc = location(lines[i]);
      if (loc) return loc;
    }
    return "";
  }

  function send(type, level, message, source) {
    if (!admit()) return;
    try {
      post(stringify({
        type: type, level: level, message: cut(message, cfg.maxMessage),
        source: cut(source || "", cfg.maxSource), frame: cut(String(window.location.href), cfg.maxSource), main: isMain
      }));
    } catch (e) { /* the handler is gone */ }
  }

  levels.forEach(function (level) {
    var orig = con[level];
    if (typeof orig !== "function") return;
    con[level] = function () {
      try {
        send("console", level, text(arguments), caller(new ErrorCtor().stack));
      } catch (e) { /* never into the page */ }
      return orig.apply(con, arguments);
    };
  });

  window.addEventListener("error", function (e) {
    if (!ErrorEventCtor || !(e instanceof ErrorEventCtor)) return; // a resource that failed to load
    try {
      var where = e.filename ? e.filename + ":" + e.lineno + ":" + e.colno : "";
      send("error", "error", e.error !== undefined && e.error !== null ? format(e.error) : String(e.message), where);
    } catch (x) { /* never into the page */ }
  }, true);

  window.addEventListener("unhandledrejection", function (e) {
    try {
      var r = e.reason, where = "";
      if (isError(r)) {
        var lines = String(r.stack || "").split("\n");
        for (var i = 0; i < lines.length && !where; i++) where = location(lines[i]);
      }
      send("rejection", "error", format(r), where);
    } catch (x) { /* never into the page */ }
  });
})
