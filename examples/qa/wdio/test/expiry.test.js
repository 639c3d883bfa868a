// Expiry through the service's clock (docs/dashboard.md, "The clock"):
// codes, access tokens and pushed requests expire through the same
// lifetime checks as real time, and the page shows what a user would.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setup, fresh, control, outcome, signIn, signInToCode, clickFor, consentShown, approveConsent, landedFrom } from '../lib/session.js'

const s = setup()
const TEST_TIMEOUT_MS = 240000

test('a code is refused after 60 s', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  assert.equal((await signInToCode(browser)).landed.status, 'code')
  const clock = await control(browser, 'clock.advance', { duration: '61s' })
  assert.equal(clock.offset_seconds, 61)
  const token = await clickFor(browser, 'redeem', 'token')
  assert.equal(token.status, '400', token.text)
  assert.equal(token.oauthError, 'invalid_grant')
})

test('an access token is refused after its lifetime', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  const { token } = await signIn(browser)
  assert.equal((await clickFor(browser, 'userinfo', 'userinfo-out')).status, '200')
  assert.equal((await clickFor(browser, 'signing', 'signing-out')).status, '200')
  await control(browser, 'clock.advance', { duration: `${token.body.expires_in + 1}s` })
  const info = await clickFor(browser, 'userinfo', 'userinfo-out')
  assert.equal(info.status, '401', info.text)
  const rs = await clickFor(browser, 'signing', 'signing-out')
  assert.equal(rs.status, '401', rs.text)
  assert.equal(rs.oauthError, 'invalid_token')
  assert.match(rs.body.www_authenticate, /invalid_token/)
})

test('a pushed request is used within its lifetime', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  const pushed = await clickFor(browser, 'par', 'pushed')
  assert.equal(pushed.status, '201', pushed.text)
  assert.match(pushed.body.request_uri, /^urn:ietf:params:oauth:request_uri:/)
  const { shown, landed } = await signInToCode(browser, {}, 'par-go')
  assert.equal(shown.pushed, true)
  assert.equal(landed.status, 'code')
  assert.equal((await clickFor(browser, 'redeem', 'token')).status, '200')
})

// A pushed request_uri lives expires_in seconds (RFC 9126 section 2.2).
// After them, the host's caught navigation is refused by the service
// (invalid_request_uri) and the host says so in its own view, which no
// WebDriver session sees: the page then stays where it is and no consent
// screen is shown. So the service's answer is read through the Miniapp's
// backend (server.js, /api/par/check), as a browser would get it.
test('a pushed request is refused after its expires_in', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  const pushed = await clickFor(browser, 'par', 'pushed')
  assert.equal(pushed.status, '201', pushed.text)
  assert.ok(pushed.body.expires_in > 0 && pushed.body.expires_in <= 600, `expires_in ${pushed.body.expires_in}`)
  await control(browser, 'clock.advance', { duration: `${pushed.body.expires_in + 1}s` })
  const check = await clickFor(browser, 'par-check', 'par-check-out')
  assert.equal(check.status, '400', check.text)
  assert.equal(check.oauthError, 'invalid_request_uri')
  assert.match(check.description, /expired/)

  // A request pushed now is used as usual.
  assert.equal((await clickFor(browser, 'par', 'pushed')).status, '201')
  const { shown, landed } = await signInToCode(browser, {}, 'par-go')
  assert.equal(shown.pushed, true)
  assert.equal(landed.status, 'code')
})
