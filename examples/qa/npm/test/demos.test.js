'use strict'
// An example QA suite (docs/webdriver.md, "Example suites"): the playground's
// demos signed in to through the host's native consent, answered with the
// front's consent commands (one approval declining an entry), a denial, and a
// broken Miniapp rejected. Run it
// with examples/qa/run.sh npm.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { By, error } = require('selenium-webdriver')
const { setup, openSession, getConsent, approveConsent, consentShown, decide, waitScript, serviceControl, advanceClock, resetClock } = require('../lib/session')

const s = setup()
const TEST_TIMEOUT_MS = 180000

// A per-entry decision: openid cannot be declined (the screen stays), profile
// is, and the page's token carries openid alone. It runs before the next
// test: the service remembers only what was granted, so that test's request
// for profile is asked again.
test('the public demo approved without profile', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const { driver, close } = await openSession(s, s.public, 'demo-public')
  t.after(close)
  await waitScript(driver, 'the start page', 'return document.readyState === "complete" && !!document.getElementById("bridge-signin")', true)
  await driver.findElement(By.css('#bridge-signin')).click()
  const shown = await consentShown(driver)
  assert.ok(shown.scopes.includes('profile'), `scopes ${shown.scopes}`)
  assert.deepEqual(shown.entries.filter((e) => e.fixed).map((e) => `${e.kind} ${e.name}`), ['scope openid'])

  await assert.rejects(approveConsent(driver, { declinedScopes: ['openid'] }), error.InvalidArgumentError)
  const decided = await approveConsent(driver, { declinedScopes: ['profile'] })
  assert.equal(decided.decision, 'approved')
  assert.deepEqual(decided.declined_scopes, ['profile'])

  await waitScript(driver, 'the signed-in page', 'return document.body.dataset.state', 'signed-in')
  const result = JSON.parse(await driver.findElement(By.css('#result')).getText())
  assert.equal(result.scope, 'openid')
})

// The front's miniapp-host:options: the host shows the Miniapp as a phone in
// landscape, dark, in German; the page lays out at the preset's size (what
// `miniapp-host devices --json` says of pixel-8), and Get Window Rect answers
// that viewport.
test('the public demo on a Pixel 8 in landscape', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const { driver, close } = await openSession(s, s.public, 'demo-public',
    { device: 'pixel-8', landscape: true, theme: 'dark', locale: 'de-CH', zoom: 1 })
  t.after(close)
  await waitScript(driver, 'the start page', 'return document.readyState === "complete" && !!document.getElementById("bridge-signin")', true)
  await waitScript(driver, 'the device\'s layout', 'return innerWidth + "x" + innerHeight', '915x412')
  const page = await driver.executeScript(`return {ua: navigator.userAgent, lang: navigator.language,
    dark: matchMedia('(prefers-color-scheme: dark)').matches, screen: screen.width + 'x' + screen.height,
    touch: navigator.maxTouchPoints, viewport: window.miniapp && window.miniapp.viewport}`)
  assert.match(page.ua, /Pixel 8/)
  assert.equal(page.lang, 'de-CH')
  assert.equal(page.dark, true)
  assert.equal(page.screen, '915x412')
  assert.equal(page.touch, 5)
  assert.equal(page.viewport.orientation, 'landscape')
  assert.deepEqual(page.viewport.safe_area_insets, { top: 0, right: 0, bottom: 0, left: 24 })
  const rect = await driver.manage().window().getRect()
  assert.deepEqual({ width: rect.width, height: rect.height }, { width: 915, height: 412 })
})

test('the public demo signs in through the host', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const { driver, close } = await openSession(s, s.public, 'demo-public')
  t.after(close)
  await waitScript(driver, 'the start page', 'return document.readyState === "complete" && !!document.getElementById("bridge-signin")', true)
  assert.equal(await driver.findElement(By.css('#status')).getText(), 'Not signed in.')

  await driver.findElement(By.css('#bridge-signin')).click()
  const shown = await consentShown(driver)
  assert.equal(shown.client_id, 'demo-public')
  assert.ok(shown.scopes.includes('openid'), `scopes ${shown.scopes}`)
  assert.equal((await decide(driver, true)), 'approved')

  await waitScript(driver, 'the signed-in page', 'return document.body.dataset.state', 'signed-in')
  assert.equal(await driver.findElement(By.css('#status')).getText(), 'Signed in through the host.')
  const result = JSON.parse(await driver.findElement(By.css('#result')).getText())
  assert.equal(result.token_type, 'Bearer')
  assert.equal(result.has_access_token, true)
})

test('the confidential demo: denied, then signed in', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const { driver, close } = await openSession(s, s.confidential, 'demo-confidential')
  t.after(close)
  // Its first load goes to its auth_url: the consent screen is up at once.
  assert.equal((await decide(driver, false)), 'denied')
  // Decided: no screen is shown any more.
  await assert.rejects(getConsent(driver), error.NoSuchAlertError)
  await waitScript(driver, 'the denied page', 'return location.href + " " + document.readyState',
    `${s.confidential}/?error=access_denied complete`)
  assert.equal(await driver.findElement(By.css('#status')).getText(), 'Not signed in (access_denied).')
  assert.equal(await driver.executeScript('return document.body.dataset.signedIn'), 'false')

  await driver.findElement(By.css('#signin')).click()
  assert.equal((await consentShown(driver)).client_id, 'demo-confidential')
  // An account the screen does not offer is refused; the screen stays.
  await assert.rejects(approveConsent(driver, 'acc-nope'), error.InvalidArgumentError)
  assert.equal((await approveConsent(driver)).decision, 'approved')

  await waitScript(driver, 'the signed-in page', 'return location.href + " " + document.body.dataset.signedIn',
    `${s.confidential}/ true`)
  assert.match(await driver.findElement(By.css('#status')).getText(), /^Signed in\. Scope: .*openid/)
  // The session cookie is HttpOnly: WebDriver reads it, the page's scripts not.
  const cookie = await driver.manage().getCookie('demo_session')
  assert.ok(cookie, 'WebDriver reads no demo_session cookie')
  assert.equal(cookie.httpOnly, true)
  assert.equal(await driver.findElement(By.css('#cookies')).getText(), '""')
})

test('a broken Miniapp opens on the rejection screen', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const { driver, close } = await openSession(s, s.broken, s.brokenId)
  t.after(close)
  await waitScript(driver, 'the rejection screen', 'return document.body ? document.body.dataset.screen || "" : ""', 'rejection')
  const text = await driver.executeScript('return document.body.innerText')
  assert.ok(text.includes('This Miniapp was rejected'), text)
  assert.ok(text.includes(`Stage ${s.brokenStage} refused it; it was not loaded.`), text)
  assert.ok(text.includes(`${s.brokenStage}/${s.brokenCode} at `), text)
  assert.equal(await driver.getCurrentUrl(), 'about:blank')
  // Nothing to consent to.
  await assert.rejects(approveConsent(driver), error.NoSuchAlertError)
})

// The service's development controls through the front (docs/webdriver.md,
// "The service's development controls"): the clock moves and comes back, and
// the service's refusal names the field and the rule.
test('the service\'s clock through the front', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const { driver, close } = await openSession(s, s.public, 'demo-public')
  // The hooks run in the order they were added: the clock first, then the session.
  t.after(() => resetClock(driver))
  t.after(close)
  const moved = await advanceClock(driver, '61s')
  assert.equal(moved.offset, '1m1s')
  assert.equal((await serviceControl(driver, 'clock.show')).offset_seconds, 61)
  await assert.rejects(advanceClock(driver, 'a minute'), (err) => err instanceof error.InvalidArgumentError &&
    /at \/advance: "a minute" is not a duration/.test(err.message))
  assert.equal((await resetClock(driver)).offset, '0s')
})
