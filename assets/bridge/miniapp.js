/*
 * window.miniapp: the API a Miniapp sees in Miniapp Host (docs/bridge.md).
 *
 * API version 1.0.0, protocol version 1. The host injects this file into the
 * top frame of its view at document start, with its configuration in place
 * of the placeholder below. The same file may be loaded by a page itself
 * (a plain browser tab): the placeholder is then null, window.miniapp.inHost
 * is false, and every call rejects with code "not_in_host".
 *
 * Everything the script needs from the page's realm (the transport, JSON,
 * Promise, Object, Reflect, the user-activation getter) is captured here,
 * before any page script runs, so a page that later overrides globals or
 * prototypes cannot redirect the bridge's own messages.
 *
 * No page code ever runs while the per-view key is in an object or a string
 * it could reach: a request is built by string concatenation of primitives
 * serialised one by one, after the page's params have been copied (see
 * call). An inherited toJSON or setter therefore never sees the key, and
 * cannot rewrite what is sent. What the transport does with the text is
 * the host's affair (docs/bridge.md, "What the key does not do").
 */
(function (config) {
  'use strict';

  var w = window;
  var O = Object;
  var freeze = O.freeze;
  var defineProperty = O.defineProperty;
  var create = O.create;
  var getOwnPropertyDescriptor = O.getOwnPropertyDescriptor;
  var apply = Reflect.apply;
  var keys = O.keys;
  var hasOwn = O.prototype.hasOwnProperty;
  var isArray = Array.isArray;
  var charCodeAt = String.prototype.charCodeAt;
  var P = Promise;
  var stringify = JSON.stringify;
  var Err = Error;
  var microtask = w.queueMicrotask;
  // URL.prototype.href's getter, to accept a URL object for openExternal
  // without calling anything the page can redefine (it throws on anything
  // that is not a real URL).
  var hrefGetter = null;
  try {
    var hd = getOwnPropertyDescriptor(w.URL.prototype, 'href');
    hrefGetter = hd && hd.get ? hd.get : null;
  } catch (e) {
    hrefGetter = null;
  }

  var VERSION = '1.0.0';
  var PROTOCOL = 1;

  // A page that loads this file while the host has already injected it
  // keeps the host's object, which is not configurable.
  if (w.miniapp !== undefined) {
    return;
  }

  // The transport: the function the host bound, captured now and removed
  // from window, so that page scripts cannot post with it directly. Only
  // the top frame gets a transport; a copy loaded in a subframe is a plain
  // "not in a host" API.
  //
  // The key is kept only in a document of the Miniapp's own origin. The
  // host checks every call's origin anyway; this keeps the key away from
  // another site that the view may show, which could otherwise learn it
  // (by replacing window.external.invoke, which the binding uses) and
  // later post with it from an iframe inside the Miniapp.
  var post = null;
  var key = '';
  var maxMessage = 0;
  if (config !== null && typeof config === 'object' && w === w.top) {
    var bound = w[config.post];
    try {
      delete w[config.post];
    } catch (e) {
      // A binding the page cannot see is the goal; if it cannot be
      // deleted, the key still keeps forged messages out.
    }
    var here = '';
    try {
      here = w.location.origin;
    } catch (e) {
      here = '';
    }
    if (typeof bound === 'function' && here === config.origin && typeof config.key === 'string' &&
        typeof config.max === 'number') {
      post = bound;
      key = config.key;
      maxMessage = config.max;
    }
  }
  var inHost = post !== null;

  // What the host tells the page of its screen and theme, read as
  // properties (docs/bridge.md, "Viewport and theme"): frozen copies of the
  // host's values, replaced by its viewportchanged and themechanged events
  // before their listeners run. Plain JSON: objects, arrays, strings,
  // numbers, booleans, a few levels deep.
  function frozenCopy(v, depth) {
    if (v === null || typeof v !== 'object') {
      return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : null;
    }
    if (depth > 4) {
      return null;
    }
    var out = isArray(v) ? [] : {};
    var names = keys(v);
    for (var i = 0; i < names.length; i++) {
      out[names[i]] = frozenCopy(v[names[i]], depth + 1);
    }
    return freeze(out);
  }
  var viewport = null;
  var theme = null;
  if (inHost) {
    viewport = config.viewport ? frozenCopy(config.viewport, 0) : null;
    theme = config.theme ? frozenCopy(config.theme, 0) : null;
  }

  // Whether the current call runs in a user gesture. Two signals, both
  // required:
  //  - a trusted input event (a real key press, click or touch) in the last
  //    GESTURE_MS. The host's own Eval counts as a user gesture in WebKit
  //    (docs/webkitgtk.md, "Measured facts"), so a page chaining openExternal on a bridge
  //    reply or event would otherwise pass for one; Eval produces no input
  //    events. The listeners are registered now, on window, in the capture
  //    phase, before any page script, so no page listener runs first or
  //    stops them, and Event.isTrusted cannot be forged.
  //  - navigator.userActivation.isActive, where the API exists (the getter
  //    is taken from the prototype now, so redefining it later changes
  //    nothing).
  var GESTURE_MS = 5000;
  var perf = w.performance;
  var perfNow = perf && perf.now;
  var lastInput = -1;
  function clock() {
    try {
      return apply(perfNow, perf, []);
    } catch (e) {
      return -1;
    }
  }
  function onInput(ev) {
    if (ev !== null && typeof ev === 'object' && ev.isTrusted === true) {
      lastInput = clock();
    }
  }
  var INPUTS = ['keydown', 'mousedown', 'pointerdown', 'pointerup', 'touchend', 'click'];
  if (typeof w.addEventListener === 'function') {
    for (var n = 0; n < INPUTS.length; n++) {
      try {
        apply(w.addEventListener, w, [INPUTS[n], onInput, true]);
      } catch (e) {
        // Without input events no call counts as a gesture.
      }
    }
  }
  var activation = null;
  var isActiveGetter = null;
  try {
    activation = w.navigator.userActivation || null;
    if (activation !== null) {
      var d = getOwnPropertyDescriptor(O.getPrototypeOf(activation), 'isActive');
      isActiveGetter = d && d.get ? d.get : null;
    }
  } catch (e) {
    activation = null;
  }
  function userGesture() {
    var t = clock();
    if (lastInput < 0 || t < 0 || t - lastInput > GESTURE_MS) {
      return false;
    }
    if (activation === null || isActiveGetter === null) {
      return true;
    }
    try {
      return apply(isActiveGetter, activation, []) === true;
    } catch (e) {
      return false;
    }
  }

  function makeError(code, message) {
    var e = new Err(message);
    e.name = 'MiniappError';
    e.code = code;
    return e;
  }

  // Calls in flight, by id. A null-prototype object: no inherited keys, no
  // page-overridable Map methods.
  var pending = create(null);
  var nextID = 0;

  // failure is what a params builder returns instead of JSON text when the
  // call must be refused without asking the host.
  function failure(code, message) {
    var f = create(null);
    f.code = code;
    f.message = message;
    return f;
  }

  // The page's params are serialised in two steps. copy reads them with
  // own-property reads into a tree of primitives and null-prototype nodes
  // that only this script can reach; page code may run there (getters,
  // proxies), but nothing it can reach holds the key yet. serialise then
  // writes that tree as JSON without calling anything the page defined:
  // primitives go through the captured JSON.stringify, which looks up no
  // toJSON on a primitive. The result follows JSON.stringify's rules
  // (undefined, functions and symbols are left out of objects and are null
  // in arrays; NaN and the infinities are null), except that inherited
  // properties and toJSON methods are ignored.
  var SKIP = create(null); // a value JSON leaves out
  var MAX_DEPTH = 64;

  function copy(v, depth) {
    if (v === null) {
      return null;
    }
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v;
      case 'number':
        return v === v && v !== Infinity && v !== -Infinity ? v : null;
      case 'undefined':
      case 'function':
      case 'symbol':
        return SKIP;
      case 'bigint':
        throw new TypeError('miniapp: a BigInt cannot be sent as JSON');
    }
    if (depth >= MAX_DEPTH) {
      throw new TypeError('miniapp: params are nested too deeply');
    }
    var node = create(null);
    var i;
    var x;
    node.items = create(null);
    node.length = 0;
    if (isArray(v)) {
      node.array = true;
      var n = v.length;
      // Anything longer could not fit in a message anyway.
      if (typeof n !== 'number' || !(n >= 0 && n <= maxMessage)) {
        throw new TypeError('miniapp: an array is too long');
      }
      for (i = 0; i < n; i++) {
        x = apply(hasOwn, v, [i]) ? copy(v[i], depth + 1) : null;
        node.items[i] = x === SKIP ? null : x;
      }
      node.length = n;
      return node;
    }
    node.array = false;
    node.names = create(null);
    var names = keys(v); // own enumerable string keys, as JSON reads them
    for (i = 0; i < names.length; i++) {
      var name = '' + names[i];
      x = copy(v[name], depth + 1);
      if (x !== SKIP) {
        node.names[node.length] = name;
        node.items[node.length] = x;
        node.length += 1;
      }
    }
    return node;
  }

  function serialise(x) {
    if (x === null) {
      return 'null';
    }
    switch (typeof x) {
      case 'string':
        return stringify(x);
      case 'number':
        return '' + x;
      case 'boolean':
        return x ? 'true' : 'false';
    }
    var out = x.array ? '[' : '{';
    for (var i = 0; i < x.length; i++) {
      if (i > 0) {
        out += ',';
      }
      if (!x.array) {
        out += stringify(x.names[i]) + ':';
      }
      out += serialise(x.items[i]);
    }
    return out + (x.array ? ']' : '}');
  }

  // paramsJSON returns the JSON text of a page value, or undefined when
  // JSON would leave it out.
  function paramsJSON(value) {
    var c = copy(value, 0);
    return c === SKIP ? undefined : serialise(c);
  }

  // utf8Length is the size of s in UTF-8, as the host measures a message.
  // s comes from serialise, in which every lone surrogate is escaped.
  function utf8Length(s) {
    var n = 0;
    for (var i = 0; i < s.length; i++) {
      var c = apply(charCodeAt, s, [i]);
      if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (c >= 0xd800 && c <= 0xdbff) {
        n += 4; // a surrogate pair
        i += 1;
      } else {
        n += 3;
      }
    }
    return n;
  }

  // call sends one request. build, when given, returns the params as JSON
  // text, undefined for none, or a failure; it runs before anything holds
  // the key, and whatever it throws refuses the call as invalid_params.
  function call(method, build) {
    return new P(function (resolve, reject) {
      if (!inHost) {
        reject(makeError('not_in_host', 'miniapp: not in a host'));
        return;
      }
      var params;
      try {
        params = build === undefined ? undefined : build();
      } catch (e) {
        reject(makeError('invalid_params', 'miniapp: params cannot be sent as JSON'));
        return;
      }
      if (params !== undefined && typeof params !== 'string') {
        reject(makeError(params.code, 'miniapp: ' + params.message));
        return;
      }
      nextID += 1;
      var id = nextID;
      // Only primitives from here on: id is this script's integer, method
      // one of its constants, key the configuration's hex, params text.
      var text = '{"v":' + PROTOCOL + ',"id":' + id + ',"key":' + stringify(key) +
        ',"method":' + stringify(method) + (params === undefined ? '' : ',"params":' + params) + '}';
      // The host answers nothing it cannot attribute, and a message over
      // its limit cannot be: refuse it here, where the caller waits.
      if (utf8Length(text) > maxMessage) {
        reject(makeError('too_large', 'miniapp: the request is larger than ' + maxMessage + ' bytes'));
        return;
      }
      pending[id] = { resolve: resolve, reject: reject };
      try {
        apply(post, w, [text]);
      } catch (e) {
        delete pending[id];
        reject(makeError('host_error', 'miniapp: the host transport failed'));
      }
    });
  }

  // externalParams builds openExternal's params: the URL (a string, or a
  // URL object read through the captured href getter) and whether the
  // script saw a user gesture. The host does not take the script's word for
  // the gesture (docs/bridge.md, "openExternal"): this is a first filter.
  function externalParams(url) {
    var u = url;
    if (typeof u !== 'string') {
      u = null;
      if (hrefGetter !== null && url !== null && typeof url === 'object') {
        try {
          u = apply(hrefGetter, url, []);
        } catch (e) {
          u = null;
        }
      }
      if (typeof u !== 'string') {
        return failure('invalid_params', 'url must be a string');
      }
    }
    return '{"url":' + stringify(u) + ',"gesture":' + (userGesture() ? 'true' : 'false') + '}';
  }

  // Event listeners, by event name.
  var EVENTS = { shown: true, hidden: true, themechanged: true, viewportchanged: true };
  var listeners = create(null);

  function checkListener(type, fn) {
    if (typeof type !== 'string' || EVENTS[type] !== true) {
      throw new TypeError('miniapp: unknown event ' + stringify(String(type)));
    }
    if (typeof fn !== 'function') {
      throw new TypeError('miniapp: a listener must be a function');
    }
  }

  function addEventListener(type, fn) {
    checkListener(type, fn);
    var list = listeners[type] || [];
    for (var i = 0; i < list.length; i++) {
      if (list[i] === fn) {
        return;
      }
    }
    var next = [];
    for (var j = 0; j < list.length; j++) {
      next[j] = list[j];
    }
    next[list.length] = fn;
    listeners[type] = next;
  }

  function removeEventListener(type, fn) {
    checkListener(type, fn);
    var list = listeners[type] || [];
    var next = [];
    for (var i = 0; i < list.length; i++) {
      if (list[i] !== fn) {
        next[next.length] = list[i];
      }
    }
    listeners[type] = next;
  }

  function fire(type, data) {
    if (EVENTS[type] !== true) {
      return;
    }
    // A snapshot: listeners added or removed by a listener take effect
    // from the next event.
    var list = listeners[type] || [];
    for (var i = 0; i < list.length; i++) {
      try {
        apply(list[i], api, [data]);
      } catch (e) {
        // One failing listener must not starve the others; rethrow later
        // so the error still reaches the console.
        if (typeof microtask === 'function') {
          apply(microtask, w, [function () { throw e; }]);
        }
      }
    }
  }

  // receive is called by the host, as window.__miniappHostReceive(msg),
  // with a reply {v, id, ok, result|error} or an event {v, event, data}.
  function receive(msg) {
    if (msg === null || typeof msg !== 'object' || msg.v !== PROTOCOL) {
      return;
    }
    if (typeof msg.event === 'string') {
      var data = msg.data;
      if (msg.event === 'viewportchanged') {
        data = viewport = frozenCopy(msg.data, 0);
      } else if (msg.event === 'themechanged' && msg.data && typeof msg.data.colors === 'object') {
        data = theme = frozenCopy(msg.data, 0);
      }
      fire(msg.event, data);
      return;
    }
    var id = msg.id;
    // id 0 answers a message the host could not attribute to this script
    // (docs/bridge.md, "Gating"): it settles nothing.
    if (typeof id !== 'number' || id < 1) {
      return;
    }
    var p = pending[id];
    if (p === undefined) {
      return;
    }
    delete pending[id];
    if (msg.ok === true) {
      p.resolve(msg.result);
      return;
    }
    var err = msg.error;
    var code = err && typeof err.code === 'string' ? err.code : 'host_error';
    var text = err && typeof err.message === 'string' ? err.message : 'the host refused the call';
    var e = makeError(code, 'miniapp: ' + text);
    // The authorization server's OAuth error, when it refused the request
    // (docs/bridge.md, "Errors").
    if (err && typeof err.server_error === 'string') {
      e.server_error = err.server_error;
      e.server_error_description = typeof err.server_error_description === 'string' ? err.server_error_description : '';
    }
    p.reject(e);
  }

  var api = freeze({
    version: VERSION,
    inHost: inHost,
    // The device's viewport {device, width, height, orientation,
    // device_pixel_ratio, safe_area_insets, touch} and the host's theme
    // {theme, colors}; null outside a host.
    get viewport() { return viewport; },
    get theme() { return theme; },
    ready: function () { return call('ready'); },
    close: function () { return call('close'); },
    getContext: function () { return call('getContext'); },
    // req: {scope: "openid profile", authorization_details: [...], org_id: "..."}.
    // The host checks it; extra or mistyped fields are refused there.
    authorize: function (req) { return call('authorize', function () { return paramsJSON(req); }); },
    openExternal: function (url) { return call('openExternal', function () { return externalParams(url); }); },
    addEventListener: addEventListener,
    removeEventListener: removeEventListener,
    // on(type, fn) adds a listener and returns a function that removes it.
    on: function (type, fn) {
      addEventListener(type, fn);
      return function () { removeEventListener(type, fn); };
    }
  });

  defineProperty(w, 'miniapp', { value: api, writable: false, configurable: false, enumerable: true });
  if (inHost) {
    defineProperty(w, config.receive, { value: receive, writable: false, configurable: false, enumerable: false });
  }
})(/*@miniapp-host-config*/ null);
