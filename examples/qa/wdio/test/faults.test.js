// The service's faults (docs/dashboard.md, "Faults"), added through the
// front's development controls, and what the QA Miniapp's page shows for
// each: an OAuth error of each kind at the endpoint it belongs to, an HTTP
// status with Retry-After, a delay, a dropped connection, and the signing
// Resource Server's 403 and 500. Every fault is for the next request only
// (times: 1), so each is followed by the real answer.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setup, fresh, control, outcome, signIn, signInToCode, clickFor, landedFrom } from '../lib/session.js'

const s = setup()
const TEST_TIMEOUT_MS = 300000
const fault = (browser, f) => control(browser, 'fault.add', { client_id: s.clientId, times: 1, ...f })

// At the authorization endpoint (here its native-consent API, which the
// host asks for the caught request): the error redirect, with state and
// iss, delivered to the page's redirect_uri; no consent screen is shown.
test('authorization errors reach the redirect_uri', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  for (const error of ['access_denied', 'login_required', 'interaction_required', 'server_error', 'temporarily_unavailable']) {
    const added = await fault(browser, { endpoint: 'authorization', error })
    assert.match(added.id, /^flt_/)
    const from = (await outcome(browser, 'authorize')).url
    await (await browser.$('#signin')).click()
    const landed = await landedFrom(browser, from)
    assert.equal(landed.status, 'error', `${error}: ${JSON.stringify(landed)}`)
    assert.equal(landed.oauthError, error)
    assert.ok(landed.description, `${error}: no error_description`)
    assert.equal(landed.body.state_ok, true, `${error}: the error redirect keeps the state`)
    assert.equal(landed.body.iss, s.service)
    await assert.rejects(browser.getConsent(), { name: 'no such alert' })
  }
  // The faults are spent: the next sign-in is asked as usual.
  assert.deepEqual((await control(browser, 'fault.list')).faults, [])
  const { landed } = await signInToCode(browser)
  assert.equal(landed.status, 'code')
})

// At the token endpoint: each error as RFC 6749 section 5.2 JSON, read by
// the page through CORS; the code is not spent by a fault, so it redeems
// once they are.
test('token errors, a status with Retry-After, a dropped connection', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  assert.equal((await signInToCode(browser)).landed.status, 'code')
  const kinds = [
    ['invalid_grant', '400'], ['server_error', '500'], ['temporarily_unavailable', '503'],
    ['invalid_dpop_proof', '400'], ['use_dpop_nonce', '400'],
  ]
  for (const [error, status] of kinds) {
    await fault(browser, { endpoint: 'token', error, error_description: `injected ${error}` })
    const token = await clickFor(browser, 'redeem', 'token')
    assert.equal(token.status, status, `${error}: ${token.text}`)
    assert.equal(token.oauthError, error)
    assert.equal(token.description, `injected ${error}`)
  }
  await fault(browser, { endpoint: 'token', status: 503, retry_after: 7 })
  const busy = await clickFor(browser, 'redeem', 'token')
  assert.equal(busy.status, '503')
  assert.equal(busy.oauthError, 'temporarily_unavailable')

  await fault(browser, { endpoint: 'token', drop: true })
  const dropped = await clickFor(browser, 'redeem', 'token')
  assert.equal(dropped.status, 'network-error', dropped.text)

  const token = await clickFor(browser, 'redeem', 'token')
  assert.equal(token.status, '200', token.text)
  assert.equal(token.body.has_access_token, true)
})

test('a delay at userinfo, then its real answer', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  await signIn(browser)
  await fault(browser, { endpoint: 'userinfo', delay: '1500ms' })
  const slow = await clickFor(browser, 'userinfo', 'userinfo-out')
  assert.equal(slow.status, '200')
  assert.equal(slow.body.sub, s.subject)
  assert.ok(slow.ms >= 1500, `answered in ${slow.ms} ms, under the 1500 ms delay`)

  await fault(browser, { endpoint: 'userinfo', error: 'invalid_token' })
  const refused = await clickFor(browser, 'userinfo', 'userinfo-out')
  assert.equal(refused.status, '401')
})

// The signing Resource Server, called by the Miniapp's backend with the
// page's token (the Resource Servers answer no CORS): a 403, a 500, a 503
// with Retry-After, a dropped connection, then its real answer.
test('the Resource Server answers 403, 500, 503 with Retry-After, drops', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  await signIn(browser)
  await fault(browser, { endpoint: 'signing', status: 403 })
  const forbidden = await clickFor(browser, 'signing', 'signing-out')
  assert.equal(forbidden.status, '403', forbidden.text)
  assert.equal(forbidden.oauthError, 'insufficient_authorization')

  await fault(browser, { endpoint: 'signing', status: 500 })
  const failed = await clickFor(browser, 'signing', 'signing-out')
  assert.equal(failed.status, '500', failed.text)
  assert.equal(failed.oauthError, 'server_error')

  await fault(browser, { endpoint: 'signing', status: 503, retry_after: 30 })
  const busy = await clickFor(browser, 'signing', 'signing-out')
  assert.equal(busy.status, '503', busy.text)
  assert.equal(busy.body.retry_after, '30')

  await fault(browser, { endpoint: 'signing', drop: true })
  const dropped = await clickFor(browser, 'signing', 'signing-out')
  assert.equal(dropped.status, 'network-error', dropped.text)

  const ok = await clickFor(browser, 'signing', 'signing-out')
  assert.equal(ok.status, '200', ok.text)
})

test('a refused fault names its member', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  await assert.rejects(fault(browser, { endpoint: 'token', error: 'login_required' }), (err) => {
    assert.equal(err.name, 'invalid argument')
    assert.match(err.message, /error/)
    return true
  })
  await assert.rejects(fault(browser, { endpoint: 'nowhere', error: 'server_error' }), { name: 'invalid argument' })
  assert.deepEqual((await control(browser, 'fault.list')).faults, [])
})
