'use strict'
// A WebDriver session on `miniapp-host open --webdriver` through
// `miniapp-host webdriver` (docs/webdriver.md), with the front's consent
// commands, and the set-up examples/qa/run.sh hands over in QA_* variables.
const http = require('node:http')
const { WebDriver, Capabilities, error } = require('selenium-webdriver')
const { HttpClient, Executor } = require('selenium-webdriver/http')
const { Command } = require('selenium-webdriver/lib/command')

// Bounds of every wait: a suite on a loaded machine is slow, never stuck.
const NEW_SESSION_TIMEOUT_MS = 90000 // a host that never gets ready leaves New Session waiting
const PAGE_TIMEOUT_MS = 60000 // a page's state, a script, a navigation, a consent screen

/** What examples/qa/run.sh hands the suite; throws naming what is missing. */
function setup() {
  const names = {
    driver: 'QA_WEBDRIVER_URL', dashboard: 'QA_DASHBOARD_URL', service: 'QA_SERVICE_URL',
    public: 'QA_PUBLIC_ORIGIN', confidential: 'QA_CONFIDENTIAL_ORIGIN', broken: 'QA_BROKEN_ORIGIN',
    brokenId: 'QA_BROKEN_ID', brokenStage: 'QA_BROKEN_STAGE', brokenCode: 'QA_BROKEN_CODE',
  }
  const s = {}
  const missing = []
  for (const [k, name] of Object.entries(names)) {
    s[k] = process.env[name]
    if (!s[k]) missing.push(name)
  }
  if (missing.length) {
    throw new Error(`${missing.join(', ')} not set: run this suite with examples/qa/run.sh npm, which starts the playground and miniapp-host webdriver`)
  }
  return s
}

// The front's extension commands (docs/webdriver.md, "The consent screen").
const CONSENT = {
  get: 'miniapp-host:getConsent',
  approve: 'miniapp-host:approveConsent',
  deny: 'miniapp-host:denyConsent',
}

/**
 * The service's development controls (docs/webdriver.md, "The service's
 * development controls"), run by the front with the operator key.
 */
const CONTROLS = ['fault.add', 'fault.list', 'fault.clear', 'clock.show', 'clock.advance', 'clock.set', 'clock.reset',
  'fixture.apply', 'fixture.reset', 'explain']
const NETWORK = { set: 'miniapp-host:network', clear: 'miniapp-host:clearNetwork' }

/** Teaches an Executor the front's extension commands: consent, the service's controls, the host's network. */
function defineConsentCommands(executor) {
  executor.defineCommand(CONSENT.get, 'GET', '/session/:sessionId/miniapp-host/consent')
  executor.defineCommand(CONSENT.approve, 'POST', '/session/:sessionId/miniapp-host/consent/approve')
  executor.defineCommand(CONSENT.deny, 'POST', '/session/:sessionId/miniapp-host/consent/deny')
  for (const c of CONTROLS) {
    executor.defineCommand(`miniapp-host:service:${c}`, 'POST', `/session/:sessionId/miniapp-host/service/${c}`)
  }
  executor.defineCommand(NETWORK.set, 'POST', '/session/:sessionId/miniapp-host/network')
  executor.defineCommand(NETWORK.clear, 'POST', '/session/:sessionId/miniapp-host/network/clear')
}

/**
 * Runs one of the service's development controls (fault.add, clock.advance,
 * fixture.reset, explain, ...) with params (an object) and resolves with the
 * service's answer; a refusal rejects with error.InvalidArgumentError whose
 * message is the service's (the field and the rule).
 */
function serviceControl(driver, control, params) {
  if (!CONTROLS.includes(control)) throw new TypeError(`serviceControl: no control ${control}; one of ${CONTROLS.join(', ')}`)
  const cmd = new Command(`miniapp-host:service:${control}`)
  for (const [name, value] of Object.entries(params || {})) cmd.setParameter(name, value)
  return driver.execute(cmd)
}

/** Moves the service's clock forward by duration, a Go duration such as "61s". */
function advanceClock(driver, duration) { return serviceControl(driver, 'clock.advance', { duration }) }

/** Puts the service's clock back at real time. */
function resetClock(driver) { return serviceControl(driver, 'clock.reset') }

/**
 * Forgets every decision of subject and/or clientId, so that the next sign-in
 * shows the consent screen again: a suite that calls it first runs the same
 * every time against one playground.
 */
function resetConsent(driver, { subject, clientId } = {}) {
  const params = {}
  if (subject) params.subject = subject
  if (clientId) params.client_id = clientId
  return serviceControl(driver, 'fixture.reset', params)
}

/** Sets the host's network conditions for the session's Miniapp (network.set's params). */
function setNetwork(driver, params) {
  const cmd = new Command(NETWORK.set)
  for (const [name, value] of Object.entries(params || {})) cmd.setParameter(name, value)
  return driver.execute(cmd)
}

/** Clears the host's network conditions. */
function clearNetwork(driver) { return driver.execute(new Command(NETWORK.clear)) }

/**
 * Starts the host on the Miniapp at origin with id through the front, which
 * fills in the binary (it starts its own miniapp-host only). options, when
 * given, are the front's miniapp-host:options (docs/webdriver.md, "Devices"):
 * {device, landscape, theme, locale, zoom, start, profile}. Resolves with
 * {driver, readyMs, close}.
 */
async function openSession(s, origin, id, options) {
  const want = {
    'webkitgtk:browserOptions': {
      args: ['open', '--webdriver', '--origin', origin, '--id', id, '--dashboard', s.dashboard,
        '--service', s.service, '--ephemeral'],
    },
    // A navigation the host refuses never loads: bound it.
    timeouts: { pageLoad: PAGE_TIMEOUT_MS, script: PAGE_TIMEOUT_MS },
  }
  if (options) want['miniapp-host:options'] = options
  const caps = new Capabilities(want)
  // An agent of its own, destroyed when New Session takes too long, so
  // that the pending request ends too.
  const agent = new http.Agent({ keepAlive: true })
  const executor = new Executor(new HttpClient(s.driver, agent))
  defineConsentCommands(executor)
  const driver = WebDriver.createSession(executor, caps)
  const start = performance.now()
  let timer
  try {
    await Promise.race([
      driver.getSession(),
      new Promise((_, reject) => {
        timer = setTimeout(() => {
          agent.destroy()
          reject(new Error(`new session on ${id} (${origin}): no answer within ${NEW_SESSION_TIMEOUT_MS} ms (the host's reason, if any, is in the front's output)`))
        }, NEW_SESSION_TIMEOUT_MS)
      }),
    ])
  } catch (err) {
    agent.destroy()
    throw err
  } finally {
    clearTimeout(timer)
  }
  const readyMs = performance.now() - start
  const close = async () => {
    await driver.quit()
    agent.destroy()
  }
  return { driver, readyMs, close }
}

/** Get Consent: the consent screen's model; rejects with error.NoSuchAlertError when none is shown. */
function getConsent(driver) {
  return driver.execute(new Command(CONSENT.get))
}

/**
 * Approve Consent. choice is one of the model's accounts (a string), or
 * {account?, declinedScopes?, declinedDetails?, loweredMaximums?}: the
 * per-entry decision (docs/webdriver.md, "The consent screen"), scope names,
 * authorization_details indexes and [{index, maximum}]; left out, the
 * screen's default account and everything requested. Resolves with the
 * host's decision, {decision, account?, declined_scopes?, declined_details?,
 * lowered_maximums?}; rejects with error.InvalidArgumentError for what the
 * screen does not offer (openid, an unknown entry or account).
 */
function approveConsent(driver, choice) {
  const cmd = new Command(CONSENT.approve)
  const c = typeof choice === 'string' ? { account: choice } : (choice || {})
  const wire = { account: 'account', declinedScopes: 'declined_scopes', declinedDetails: 'declined_details', loweredMaximums: 'lowered_maximums' }
  for (const [name, value] of Object.entries(c)) {
    if (!(name in wire)) throw new TypeError(`approveConsent: unknown member ${name}; one of ${Object.keys(wire).join(', ')}`)
    if (value !== undefined) cmd.setParameter(wire[name], value)
  }
  return driver.execute(cmd)
}

/** Deny Consent: resolves with {decision: "denied"}. */
function denyConsent(driver) {
  return driver.execute(new Command(CONSENT.deny))
}

/**
 * Waits until a consent screen is shown and resolves with its model. No
 * such alert means none is shown yet: the Miniapp's navigation to the
 * service is not a WebDriver command the session waits for. A flow that
 * goes on without one waits in vain: the service answers a consent it
 * remembers without asking (an approval is kept per subject and client):
 * call resetConsent first, and every run sees the screen again.
 */
async function consentShown(driver) {
  let last
  try {
    return await driver.wait(async () => {
      try {
        return await getConsent(driver)
      } catch (err) {
        if (!(err instanceof error.NoSuchAlertError)) throw err
        last = err
        return false
      }
    }, PAGE_TIMEOUT_MS, undefined, 50)
  } catch (err) {
    throw new Error(`waiting for the consent screen: ${err.message} (last: ${last && last.message}; the service may have remembered a consent: run each suite against a fresh playground, as examples/qa/run.sh does)`)
  }
}

/** Waits for the consent screen, approves or denies it, resolves with the host's decision. */
async function decide(driver, approve) {
  await consentShown(driver)
  const decided = approve ? await approveConsent(driver) : await denyConsent(driver)
  return decided.decision
}

/**
 * Waits until script returns want in the session's page (a page the host
 * navigated to, a page's script finishing); fails with what it last saw.
 */
async function waitScript(driver, what, script, want) {
  let last
  try {
    await driver.wait(async () => {
      try {
        last = await driver.executeScript(script)
      } catch (err) {
        // A page replaced while the script ran answers an error: ask again.
        last = err
        return false
      }
      return last === want
    }, PAGE_TIMEOUT_MS, undefined, 50)
  } catch (err) {
    const url = await driver.getCurrentUrl().catch((e) => e.message)
    throw new Error(`waiting for ${what}: ${err.message}; the page (${url}) last answered ${last}`)
  }
}

module.exports = {
  setup, openSession, defineConsentCommands, getConsent, approveConsent, denyConsent, consentShown, decide, waitScript,
  serviceControl, advanceClock, resetClock, resetConsent, setNetwork, clearNetwork,
  PAGE_TIMEOUT_MS,
}
