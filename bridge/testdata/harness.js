// harness.js runs assets/bridge/miniapp.js under Node as a page would see
// it, with a fake transport: posts go to stdout as {"post": <json>} lines,
// and each stdin line is a script from the host (window.__miniappHostReceive(...))
// evaluated in the page. The scenario below then reports what the page saw
// as {"report": {...}} lines and ends with {"done": true}.
//
// Usage: node harness.js <bridge script file> <scenario: host|tab|foreign>
'use strict';
const fs = require('fs');
const readline = require('readline');
const vm = require('vm');

const [scriptFile, scenario] = process.argv.slice(2);
// The page overrides JSON and Promise below; the harness keeps its own.
const stringify = JSON.stringify;
const RealPromise = Promise;
const out = (obj) => process.stdout.write(stringify(obj) + '\n');

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
  globalThis.__miniappHostPost = (msg) => out({ post: msg });
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

(scenario === 'host' ? host() : tab()).then(
  () => { out({ done: true }); process.exit(0); },
  (e) => { out({ error: String(e && e.stack) }); process.exit(1); });
