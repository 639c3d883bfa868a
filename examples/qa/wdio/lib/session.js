// A WebdriverIO session on `miniapp-host open --webdriver` through
// `miniapp-host webdriver` (docs/webdriver.md), with the front's extension
// commands added to the browser object, and the set-up examples/qa/run.sh
// hands over in QA_* variables.
import { remote } from 'webdriverio'
import { command } from 'webdriver'

// Bounds of every wait: a suite on a loaded machine is slow, never stuck.
export const NEW_SESSION_TIMEOUT_MS = 90000 // the front gives a host 60 s to be ready
export const PAGE_TIMEOUT_MS = 60000 // a page's state, a script, a navigation, a consent screen
const POLL_MS = 50

/** What examples/qa/run.sh wdio hands the suite; throws naming what is missing. */
export function setup() {
  const names = {
    driver: 'QA_WEBDRIVER_URL', dashboard: 'QA_DASHBOARD_URL', service: 'QA_SERVICE_URL',
    origin: 'QA_MINIAPP_ORIGIN', id: 'QA_MINIAPP_ID', clientId: 'QA_CLIENT_ID', subject: 'QA_SUBJECT',
  }
  const s = {}
  const missing = []
  for (const [k, name] of Object.entries(names)) {
    s[k] = process.env[name]
    if (!s[k]) missing.push(name)
  }
  if (missing.length) {
    throw new Error(`${missing.join(', ')} not set: run this suite with examples/qa/run.sh wdio, which starts the QA Miniapp, miniapp-host dev and miniapp-host webdriver`)
  }
  return s
}

// parameters makes the parameter list of a command whose body members are
// given one by one (the `webdriver` package's command() takes positional
// arguments, each a member of the body; an undefined optional one is left out).
const parameters = (names) => names.map((name) => ({ name, type: '(string|number|boolean|object)', description: name, required: false }))

// The front's extension commands (docs/webdriver.md, "The consent screen",
// "The service's development controls"), with the `webdriver` package's command(): the
// documented way to teach WebdriverIO an endpoint it does not know.
const CONSENT_COMMANDS = {
  getConsent: ['GET', 'consent', []],
  approveConsentRaw: ['POST', 'consent/approve', ['account', 'declined_scopes', 'declined_details', 'lowered_maximums']],
  denyConsent: ['POST', 'consent/deny', []],
  networkSet: ['POST', 'network', ['throttle', 'mocks']],
  networkClear: ['POST', 'network/clear', []],
}

// The service's controls, POST /session/{id}/miniapp-host/service/{control}
// with the control's params as the body, and their members.
const CONTROLS = {
  'fault.add': ['endpoint', 'client_id', 'subject', 'times', 'error', 'error_description', 'status', 'retry_after', 'delay', 'drop'],
  'fault.list': [],
  'fault.clear': ['id', 'client_id'],
  'clock.show': [],
  'clock.advance': ['duration'],
  'clock.set': ['time'],
  'clock.reset': [],
  'fixture.apply': ['fixture'],
  'fixture.reset': ['subject', 'client_id'],
  explain: ['client_id', 'subject', 'scope', 'authorization_details', 'org_id', 'authorize_url'],
}

function addExtensionCommands(browser) {
  const def = (name, method, path, params) => browser.addCommand(name, command(method, `/session/:sessionId/miniapp-host/${path}`, {
    command: name, description: `miniapp-host ${method} ${path}`, ref: 'docs/webdriver.md', variables: [], parameters: parameters(params),
  }))
  for (const [name, [method, path, params]] of Object.entries(CONSENT_COMMANDS)) def(name, method, path, params)
  for (const [control, params] of Object.entries(CONTROLS)) def(`control:${control}`, 'POST', `service/${control}`, params)
}

/**
 * answersAreResults is a WebdriverIO transformResponse: a W3C driver
 * answers an error with a 4xx or 5xx status and {"value": {"error", "message",
 * "stacktrace"}}, so a 200 answer is a command's result whatever its
 * members. WebdriverIO takes any answer whose value has a truthy `error`
 * (or `stacktrace`) member for an error, 200 or not: an Execute Script
 * result such as a dataset with data-error="invalid_grant", and the front's
 * fault.add answer, the fault with its "error": "invalid_grant", would throw
 * an error named invalid_grant (and, with retries on, be sent again: the
 * fault added four times). For a 200 answer, the value is handed on behind
 * a Proxy that hides those members from the `in` test WebdriverIO makes;
 * reading them, JSON.stringify and assert.deepEqual see the value as it is.
 */
export function answersAreResults(res) {
  const v = res && res.body && res.body.value
  if (res.statusCode === 200 && v && typeof v === 'object') {
    const hidden = new Set(['error', 'stacktrace', 'stackTrace'])
    res.body = { ...res.body, value: new Proxy(v, { has: (t, k) => !hidden.has(k) && k in t }) }
  }
  return res
}

/**
 * Starts the host on the QA Miniapp through the front. Resolves with the
 * WebdriverIO browser; close it with browser.deleteSession().
 *
 * connectionRetryCount: 0: WebdriverIO retries a request that failed (a
 * 4xx or 5xx answer, an error in the body) three times by default, so an
 * approval the consent screen refuses would be sent four times, and a
 * fault.add it misread as an error would add four faults.
 * transformResponse: answersAreResults, unless { raw: true } (to show the
 * trap it avoids).
 */
export async function openSession(s, options, { raw = false } = {}) {
  const u = new URL(s.driver)
  const capabilities = {
    'webkitgtk:browserOptions': {
      args: ['open', '--webdriver', '--origin', s.origin, '--id', s.id, '--subject', s.subject, '--ephemeral'],
    },
    // A navigation the host refuses never loads: bound it.
    timeouts: { pageLoad: PAGE_TIMEOUT_MS, script: PAGE_TIMEOUT_MS },
    // WebDriver classic only: no BiDi socket to ask for.
    'wdio:enforceWebDriverClassic': true,
  }
  if (options) capabilities['miniapp-host:options'] = options
  const browser = await remote({
    hostname: u.hostname, port: Number(u.port), path: u.pathname, protocol: u.protocol.replace(':', ''),
    capabilities, connectionRetryCount: 0, connectionRetryTimeout: NEW_SESSION_TIMEOUT_MS,
    logLevel: process.env.QA_WDIO_LOG_LEVEL || 'silent', waitforTimeout: PAGE_TIMEOUT_MS, waitforInterval: POLL_MS,
    ...(raw ? {} : { transformResponse: answersAreResults }),
  })
  addExtensionCommands(browser)
  return browser
}

/**
 * control runs one of the service's development controls (docs/dashboard.md,
 * "Development controls") through the front's extension command
 * POST /session/{id}/miniapp-host/service/{control}: the front holds the
 * operator key, the suite never sees it. Resolves with the service's JSON
 * answer; a refusal by the service rejects with a WebDriverError named
 * "invalid argument" whose message is the service's.
 */
export async function control(browser, name, params = {}) {
  const members = CONTROLS[name]
  if (!members) throw new TypeError(`control: unknown control ${name}; one of ${Object.keys(CONTROLS).join(', ')}`)
  for (const k of Object.keys(params)) {
    if (!members.includes(k)) throw new TypeError(`control ${name}: unknown member ${k}; it takes ${members.join(', ') || 'none'}`)
  }
  return browser[`control:${name}`](...members.map((k) => params[k]))
}

/**
 * Sets the host's network conditions for the Miniapp's view (its
 * automation command network.set): {throttle} a preset ("offline",
 * "slow-3g", "fast-3g") or "LATENCY/DOWN/UP", {mocks} mock rules.
 */
export function network(browser, { throttle, mocks } = {}) {
  return browser.networkSet(throttle, mocks)
}

// until waits, polling, for fn to return true, and fails naming what it
// waited for and, from describe(), what it last saw (WebdriverIO's own
// timeoutMsg is a string made before the wait).
async function until(browser, fn, describe) {
  try {
    await browser.waitUntil(fn, { timeout: PAGE_TIMEOUT_MS, interval: POLL_MS })
  } catch (err) {
    throw new Error(`${describe()} (${err.message})`)
  }
}

/**
 * Approve Consent. choice: {account?, declinedScopes?, declinedDetails?,
 * loweredMaximums?}, the per-entry decision (docs/webdriver.md, "The
 * consent screen"); left out, everything requested. Resolves with the
 * host's decision.
 */
export function approveConsent(browser, choice = {}) {
  const wire = { account: 0, declinedScopes: 1, declinedDetails: 2, loweredMaximums: 3 }
  const a = [undefined, undefined, undefined, undefined]
  for (const [k, v] of Object.entries(choice)) {
    if (!(k in wire)) throw new TypeError(`approveConsent: unknown member ${k}; one of ${Object.keys(wire).join(', ')}`)
    a[wire[k]] = v
  }
  return browser.approveConsentRaw(...a)
}

/**
 * Waits until a consent screen is shown and resolves with its model: Get
 * Consent answers "no such alert" until then (the Miniapp's navigation to the
 * service is not a WebDriver command the session waits for).
 */
export async function consentShown(browser) {
  let model, last
  await until(browser, async () => {
    try {
      model = await browser.getConsent()
      return true
    } catch (err) {
      if (err.name !== 'no such alert') throw err
      last = err.message
      return false
    }
  }, () => `no consent screen within ${PAGE_TIMEOUT_MS} ms (last: ${last}); a remembered consent skips it: the suite resets its client's consent first (fixture.reset)`)
  return model
}

// The page's outcomes (examples/qa/wdio/miniapp/page.html): read with a script that returns a
// JSON string, never the element's dataset itself, so that the read is the
// same with or without answersAreResults: a dataset with an `error` member
// (data-error="invalid_grant") is an Execute Script result WebdriverIO
// would take for a WebDriver error (docs/webdriver.md, "WebdriverIO").
const READ = `const el = document.getElementById(arguments[0]);
if (!el) return JSON.stringify(null);
const d = el.dataset;
return JSON.stringify({seq: Number(d.seq || 0), status: d.status || '', oauthError: d.error || '',
  description: d.errorDescription || '', ms: d.ms === undefined || d.ms === '' ? null : Number(d.ms), text: el.textContent,
  url: location.href, state: document.body.dataset.state || ''});`

/** outcome reads one outcome element: {seq, status, oauthError, description, ms, text, body, url, state}. */
export async function outcome(browser, id) {
  const o = JSON.parse(await browser.execute(READ, id))
  if (o) {
    try { o.body = JSON.parse(o.text) } catch { o.body = o.text }
  }
  return o
}

/** Waits until the page (a page the host navigated to) is loaded and ready; resolves with its URL. */
export async function pageReady(browser, urlPrefix) {
  let last
  await until(browser, async () => {
    try {
      last = await browser.execute('return location.href + " " + (document.body ? document.body.dataset.state || "" : "")')
    } catch (err) {
      // A page replaced while the script ran answers an error: ask again.
      last = err.message
      return false
    }
    const [url, state] = last.split(' ')
    return state === 'ready' && (!urlPrefix || url.startsWith(urlPrefix))
  }, () => `the page is not ready at ${urlPrefix || 'any URL'}: it last answered ${last}`)
  return last.split(' ')[0]
}

/** Waits until the outcome element id answers a new outcome (its data-seq above after); resolves with it. */
export async function nextOutcome(browser, id, after) {
  let o
  await until(browser, async () => {
    try {
      o = await outcome(browser, id)
    } catch {
      return false
    }
    return !!o && o.seq > after
  }, () => `#${id} showed no new outcome after ${after}; it last showed ${JSON.stringify(o)}`)
  return o
}

/** Clicks the button id and waits for the outcome element out to show its answer. */
export async function clickFor(browser, button, out) {
  const before = (await outcome(browser, out)).seq
  await (await browser.$(`#${button}`)).click()
  return nextOutcome(browser, out, before)
}

/**
 * fresh opens a session for a test that starts from a known state: the
 * client's remembered consents and grants forgotten (fixture.reset, so the
 * consent screen is shown again, in every run), its faults cleared, the
 * clock at real time; and the same again when the test ends, whatever it
 * did. Resolves with the browser, on the Miniapp's start page.
 */
export async function fresh(t, s, options, how) {
  const browser = await openSession(s, options, how)
  const clean = async () => {
    await control(browser, 'fault.clear', { client_id: s.clientId })
    await control(browser, 'clock.reset')
    await control(browser, 'fixture.reset', { client_id: s.clientId })
  }
  t.after(async () => {
    try {
      await clean()
    } finally {
      await browser.deleteSession()
    }
  })
  await clean()
  await pageReady(browser, s.origin)
  return browser
}

/** Clicks Sign in, approves the consent screen (choice as approveConsent's) and waits for the code; resolves with the screen's model and the authorization response. */
export async function signInToCode(browser, choice, button = 'signin') {
  const from = (await outcome(browser, 'authorize')).url
  await (await browser.$(`#${button}`)).click()
  const shown = await consentShown(browser)
  const decided = await approveConsent(browser, choice)
  const landed = await landedFrom(browser, from)
  return { shown, decided, landed }
}

/**
 * Waits until the host has brought the page back on its redirect_uri (a
 * page other than from) with an authorization response, and resolves with
 * the response as the page shows it.
 */
export async function landedFrom(browser, from) {
  let o
  await until(browser, async () => {
    try {
      o = await outcome(browser, 'authorize')
    } catch {
      return false // the page is being replaced
    }
    return !!o && o.url !== from && o.state !== 'loading' && o.seq > 0
  }, () => `the page did not come back from the service (it was on ${from}); it last showed ${JSON.stringify(o)}`)
  return o
}

/** Signs in and redeems the code; resolves with the token outcome, which must be a 200. */
export async function signIn(browser, choice) {
  const r = await signInToCode(browser, choice)
  if (r.landed.status !== 'code') throw new Error(`signing in: the page landed with ${JSON.stringify(r.landed)}`)
  const token = await clickFor(browser, 'redeem', 'token')
  if (token.status !== '200') throw new Error(`redeeming the code: ${JSON.stringify(token)}`)
  return { ...r, token }
}
