'use strict'
// A WebDriver session on `miniapp-host open --webdriver` (docs/webdriver.md),
// with the automation channel of the host it started, and the set-up
// examples/qa/run.sh hands over in QA_* environment variables.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { WebDriver, Capabilities } = require('selenium-webdriver')
const { HttpClient, Executor } = require('selenium-webdriver/http')
const { Automation, AutomationError } = require('./automation')

// Bounds of every wait: a suite on a loaded machine is slow, never stuck.
const NEW_SESSION_TIMEOUT_MS = 90000 // a host that exits before it connects leaves New Session waiting
const PAGE_TIMEOUT_MS = 60000 // a page's state, a script, a navigation

/** What examples/qa/run.sh hands the suite; throws naming what is missing. */
function setup() {
  const names = {
    driver: 'QA_WEBDRIVER_URL', binary: 'QA_HOST_BINARY', dashboard: 'QA_DASHBOARD_URL', service: 'QA_SERVICE_URL',
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
    throw new Error(`${missing.join(', ')} not set: run this suite with examples/qa/run.sh npm, which starts the playground and WebKitWebDriver`)
  }
  return s
}

/**
 * Starts the host on the Miniapp at origin with id through the driver and
 * connects to its automation channel. Resolves with {driver, automation,
 * readyMs, close}.
 */
async function openSession(s, origin, id) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'miniapp-qa-'))
  const autoFile = path.join(dir, 'automation.json')
  const caps = new Capabilities({
    'webkitgtk:browserOptions': {
      binary: s.binary,
      args: ['open', '--webdriver', '--origin', origin, '--id', id, '--dashboard', s.dashboard,
        '--service', s.service, '--ephemeral', '--automation-file', autoFile],
    },
    // A navigation the host refuses never loads: bound it.
    timeouts: { pageLoad: PAGE_TIMEOUT_MS, script: PAGE_TIMEOUT_MS },
  })
  // An agent of its own, destroyed when New Session takes too long, so
  // that the pending request ends too.
  const agent = new http.Agent({ keepAlive: true })
  const driver = WebDriver.createSession(new Executor(new HttpClient(s.driver, agent)), caps)
  const start = performance.now()
  let timer
  try {
    await Promise.race([
      driver.getSession(),
      new Promise((_, reject) => {
        timer = setTimeout(() => {
          agent.destroy()
          reject(new Error(`new session on ${id} (${origin}): no answer within ${NEW_SESSION_TIMEOUT_MS} ms (the host's reason, if any, is in the driver's output)`))
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
  let automation
  try {
    // The host wrote the file before its window ran, and the session is
    // ready only once it runs.
    const info = JSON.parse(fs.readFileSync(autoFile, 'utf8'))
    automation = await Automation.connect(info.url, info.token)
  } catch (err) {
    await driver.quit().catch(() => {})
    throw err
  }
  const close = async () => {
    automation.close()
    await driver.quit()
    agent.destroy()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  return { driver, automation, readyMs, close }
}

/**
 * Waits for the consent screen and resolves with its model. A flow that
 * goes on without one fails at once: the service answers a consent it
 * remembers without asking (an approval is kept per subject and client),
 * so each run needs a fresh playground.
 */
async function consentShown(automation) {
  const kinds = ['consent.shown', 'consent.decided', 'code.issued', 'token.issued']
  const ev = await automation.waitFor((e) => kinds.includes(e.kind), { timeoutMs: PAGE_TIMEOUT_MS })
  if (ev.kind !== 'consent.shown') {
    throw new Error(`no consent screen: ${ev.kind} came first (the service remembered a consent: run each suite against a fresh playground, as examples/qa/run.sh does)`)
  }
  return ev.data
}

/**
 * Answers the consent screen (approve or deny) and resolves with the
 * consent.decided event's data. A screen shown before the client connected
 * sent a consent.shown it could not see: the command goes first, and only
 * when no screen is shown yet (no_consent) does it wait for the screen's
 * event, which then comes after the connection.
 */
async function decide(automation, approve) {
  const answer = () => (approve ? automation.approve() : automation.deny())
  try {
    await answer()
  } catch (err) {
    if (!(err instanceof AutomationError) || err.code !== 'no_consent') throw err
    await consentShown(automation)
    await answer()
  }
  const ev = await automation.waitFor('consent.decided', { timeoutMs: PAGE_TIMEOUT_MS })
  return ev.data
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

module.exports = { setup, openSession, consentShown, decide, waitScript, PAGE_TIMEOUT_MS }
