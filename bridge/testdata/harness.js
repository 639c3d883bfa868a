// harness.js runs assets/bridge/miniapp.js under Node as a page would see
// it, with a fake transport: posts go to stdout as {"post": <json>} lines,
// and each stdin line is a script from the host (window.__miniappHostReceive(...))
// evaluated in the page. The scenario below then reports what the page saw
// as {"report": {...}} lines and ends with {"done": true}.
//
// Usage: node harness.js <bridge script file> <scenario: host|tab|foreign|hostile>
'use strict';
const fs = require('fs');
const readline = require('readline');
const vm = require('vm');

const [scriptFile, scenario] = process.argv.slice(2);
// The page overrides JSON and Promise below; the harness keeps its own.
const stringify = JSON.stringify;
const RealPromise = Promise;
const out = (obj) => process.stdout.write(stringify(obj) + '\n');
// A post is written without serialising any object, so that the hostile
// scenario's prototype pollution cannot touch what the Go side receives.
const outPost = (msg) => process.stdout.write('{"post":' + stringify(String(msg)) + '}\n');

// The page's window: the global object, its own top.
globalThis.window = globalThis;
globalThis.top = globalThis;
class UserActivation { get isActive() { return activeGesture; } }
let activeGesture = false;
Object.defineProperty(globalThis, 'navigator', { value: { userActivation: new UserActivation() }, configurable: true });
Object.defineProperty(globalThis, 'location', {
  value: { origin: scenario === 'foreign' ? 'https://evil.example' : 'https://app.example' },
  configurable: true,
});
// A clock the scenario moves, for the gesture window.
let now = 1000;
Object.defineProperty(globalThis, 'performance', { value: { now: () => now }, configurable: true });
// window as an event target, enough for the bridge's input listeners.
const windowListeners = [];
globalThis.addEventListener = (type, fn, capture) => windowListeners.push({ type, fn, capture });
const input = (type, isTrusted) => {
  for (const l of windowListeners) {
    if (l.type === type) l.fn({ type, isTrusted });
  }
};
if (scenario !== 'tab') {
  // Like package host's transport: a function captured before the page
  // runs, which reads nothing from the page at call time.
  globalThis.__miniappHostPost = (msg) => outPost(msg);
}

vm.runInThisContext(fs.readFileSync(scriptFile, 'utf8'), { filename: 'miniapp.js' });

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  vm.runInThisContext(line);
});

const report = (name, value) => out({ report: { name, value } });
const settle = (p) => p.then((v) => ({ ok: v === undefined ? null : v }), (e) => ({ code: e.code, name: e.name }));

async function host() {
  const m = window.miniapp;
  report('shape', {
    inHost: m.inHost, version: m.version, frozen: Object.isFrozen(m),
    transportVisible: typeof window.__miniappHostPost,
    receiveWritable: Object.getOwnPropertyDescriptor(window, '__miniappHostReceive').writable,
  });
  // A page cannot replace the API or the receive function.
  try { window.miniapp = { inHost: 'fake' }; } catch (e) { /* read-only: throws in strict code */ }
  try { window.__miniappHostReceive = () => {}; } catch (e) { /* read-only: throws in strict code */ }
  report('replaced', window.miniapp === m && window.miniapp.inHost === true);

  // Globals overridden after load do not affect the bridge.
  JSON.stringify = () => '{"v":1,"id":1,"method":"close"}';
  globalThis.Promise = function () { throw new Error('page Promise'); };

  report('getContext', await settle(m.getContext()));
  report('ready', await settle(m.ready()));
  // Two calls in flight resolve each with its own reply.
  const [a, b] = await RealPromise.all([settle(m.authorize({ scope: 'openid profile' })), settle(m.getContext())]);
  report('parallel', { authorize: a, getContext: b.ok && b.ok.id });
  report('authorize invalid', await settle(m.authorize({ scope: 'openid', resource: 'x' })));
  // The authorization server refused the request: its OAuth error is on
  // the error the page gets.
  report('authorize refused by the server', await m.authorize({ scope: 'server-refuses' }).then(() => ({ ok: true }),
    (e) => ({ code: e.code, server_error: e.server_error, server_error_description: e.server_error_description })));
  // Over the dispatcher's 64 KiB, in UTF-8 bytes (3 per character here):
  // the script refuses it itself, since the host answers nothing it cannot
  // attribute.
  report('authorize too large', await settle(m.authorize({ scope: '\u20ac'.repeat(22000) })));
  report('openExternal without gesture', await settle(m.openExternal('https://docs.example/')));
  // The host's Eval makes isActive true without any input: not a gesture.
  activeGesture = true;
  report('openExternal after Eval only', await settle(m.openExternal('https://docs.example/')));
  input('click', false); // a synthetic click from page script
  report('openExternal after synthetic click', await settle(m.openExternal('https://docs.example/')));
  input('click', true);
  report('openExternal', await settle(m.openExternal('https://docs.example/')));
  report('openExternal javascript', await settle(m.openExternal('javascript:alert(1)')));
  now += 6000; // the click is now 6 s old
  report('openExternal 6 s after the click', await settle(m.openExternal('https://docs.example/')));
  input('keydown', true);
  activeGesture = false;
  report('openExternal after activation expired', await settle(m.openExternal('https://docs.example/')));
  report('input listeners', windowListeners.map((l) => l.type + (l.capture ? ':capture' : '')).join(' '));

  // Events: the listener registered with on() fires, and stops after its
  // unsubscribe function runs; a throwing listener does not stop others.
  const seen = [];
  m.addEventListener('themechanged', () => { throw new Error('listener bug'); });
  const off = m.on('themechanged', (d) => seen.push(d.theme));
  process.on('uncaughtException', () => {});
  await new RealPromise((resolve) => {
    m.on('shown', () => resolve());
    out({ emit: ['themechanged', 'shown'] });
  });
  off();
  await new RealPromise((resolve) => {
    m.on('hidden', () => resolve());
    out({ emit: ['themechanged', 'hidden'] });
  });
  report('events', seen);
  let unknown = '';
  try { m.on('message', () => {}); } catch (e) { unknown = e.name; }
  report('unknown event', unknown);
}

async function tab() {
  const m = window.miniapp;
  report('shape', {
    inHost: m.inHost, version: m.version, receive: typeof window.__miniappHostReceive,
    transportVisible: typeof window.__miniappHostPost,
  });
  report('getContext', await settle(m.getContext()));
  report('authorize', await settle(m.authorize({ scope: 'openid' })));
}

// hostile is the review's repro: a page script that pollutes prototypes and
// replaces globals to read the per-view key or fake a user gesture. Leaks
// are recorded by the page's own hooks and reported at the end.
async function hostile() {
  const m = window.miniapp;
  const leaks = [];
  const keyLike = /[0-9a-f]{64}/;
  const ownKey = (o) => o !== null && typeof o === 'object' && Object.prototype.hasOwnProperty.call(o, 'key');

  // 1. An inherited toJSON, called by JSON.stringify with the message as
  // this: it would see the key and rewrite params with gesture true.
  Object.defineProperty(Object.prototype, 'toJSON', {
    configurable: true,
    value() {
      if (!ownKey(this)) return this;
      leaks.push('toJSON');
      const p = Object.create(null);
      p.url = 'https://ads.example/popup';
      p.gesture = true;
      return { v: this.v, id: this.id, key: this.key, method: this.method, params: p };
    },
  });
  report('toJSON: openExternal without input', await settle(m.openExternal('https://ads.example/popup')));
  input('click', true);
  activeGesture = true;
  report('toJSON: openExternal of a URL object after a click', await settle(m.openExternal(new URL('https://docs.example/u'))));
  activeGesture = false;
  delete Object.prototype.toJSON;

  // 2. A setter for params, fired by an assignment msg.params = params.
  Object.defineProperty(Object.prototype, 'params', {
    configurable: true,
    set(v) {
      if (ownKey(this)) leaks.push('params setter');
      Object.defineProperty(this, 'params', { value: v, writable: true, enumerable: true, configurable: true });
    },
  });
  report('params setter: authorize', await settle(m.authorize({ scope: 'openid' })));
  delete Object.prototype.params;

  // 3. Globals replaced after load, and hooks on what a serialiser might
  // call: none may see the key.
  const saved = { stringify: JSON.stringify, apply: Reflect.apply };
  JSON.stringify = function (v) {
    if (ownKey(v) || (typeof v === 'string' && keyLike.test(v))) leaks.push('JSON.stringify');
    return saved.stringify.apply(this, arguments);
  };
  Reflect.apply = function (f, t, args) {
    if (args && Array.prototype.some.call(args, (a) => typeof a === 'string' && keyLike.test(a))) leaks.push('Reflect.apply');
    return saved.apply(f, t, args);
  };
  const details = [{ type: 'bank_account', actions: ['read'] }];
  Object.defineProperty(Array.prototype, 'toJSON', { configurable: true, value() { return 'replaced'; } });
  const replaced = await settle(m.authorize({ scope: 'openid profile', authorization_details: details }));
  delete Array.prototype.toJSON; // before reporting, which serialises arrays
  JSON.stringify = saved.stringify;
  Reflect.apply = saved.apply;
  report('globals replaced: authorize', replaced);

  // The serialiser follows JSON's rules, minus inherited properties and
  // toJSON, and refuses what JSON cannot carry before anything is sent.
  const cyclic = { scope: 'openid' };
  cyclic.self = cyclic;
  report('cyclic params', await settle(m.authorize(cyclic)));
  report('BigInt in params', await settle(m.authorize({ scope: 'openid', n: 1n })));
  report('openExternal of a number', await settle(m.openExternal(42)));
  report('JSON rules', await settle(m.authorize({
    scope: 'openid', org_id: undefined,
    authorization_details: [{ type: 't', a: undefined, b: NaN, c: [undefined, () => 1, -0, , 'x'], d: new Date(0) }],
  })));

  report('leaks', leaks);
}

({ host, tab, foreign: tab, hostile })[scenario]().then(
  () => { out({ done: true }); process.exit(0); },
  (e) => { out({ error: String(e && e.stack) }); process.exit(1); });
