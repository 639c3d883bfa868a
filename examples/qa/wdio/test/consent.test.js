// The QA Miniapp signed in through the host's native consent, answered with
// the front's consent commands (docs/webdriver.md, "The consent screen"):
// the whole path, a per-entry decision, a remembered consent that a
// fixture reset forgets, and the data-error trap of Execute Script results.
// Run with examples/qa/run.sh wdio.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setup, fresh, control, outcome, signIn, signInToCode, clickFor, consentShown, approveConsent, landedFrom } from '../lib/session.js'

const s = setup()
const TEST_TIMEOUT_MS = 240000

test('signs in by navigating, redeems its code, reads userinfo and the Resource Server', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  const { shown, decided, landed, token } = await signIn(browser)
  assert.equal(shown.client_id, s.clientId)
  assert.deepEqual(shown.scopes, ['openid', 'profile'])
  assert.equal(shown.org_id, 'org_andes')
  assert.deepEqual(shown.entries.map((e) => `${e.kind} ${e.index ?? e.name}${e.fixed ? ' fixed' : ''}`), ['scope openid fixed', 'scope profile', 'detail 0'])
  assert.equal(decided.decision, 'approved')
  assert.equal(landed.status, 'code')
  assert.equal(landed.body.state_ok, true)
  assert.equal(landed.body.iss, s.service)
  assert.equal(token.body.token_type, 'Bearer')
  assert.equal(token.body.scope, 'openid profile')
  assert.equal(token.body.expires_in, 600)

  const info = await clickFor(browser, 'userinfo', 'userinfo-out')
  assert.equal(info.status, '200')
  assert.equal(info.body.sub, s.subject)
  const rs = await clickFor(browser, 'signing', 'signing-out')
  assert.equal(rs.status, '200', rs.text)
  assert.deepEqual(rs.body.body, { org_id: 'org_andes', ready: false })
})

// Per-entry decisions: openid cannot be declined (the screen stays); profile
// and the signing-key detail are: what is declined is missing from the
// token, and the signing Resource Server, which the token is then not for,
// refuses it (401 invalid_token, RFC 6750 section 3.1).
test('approved without profile and without the signing-key detail', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  const from = (await outcome(browser, 'authorize')).url
  await (await browser.$('#signin')).click()
  await consentShown(browser)
  await assert.rejects(approveConsent(browser, { declinedScopes: ['openid'] }), { name: 'invalid argument' })
  const decided = await approveConsent(browser, { declinedScopes: ['profile'], declinedDetails: [0] })
  assert.deepEqual(decided, { decision: 'approved', declined_scopes: ['profile'], declined_details: [0] })
  assert.equal((await landedFrom(browser, from)).status, 'code')
  const token = await clickFor(browser, 'redeem', 'token')
  assert.equal(token.status, '200')
  assert.equal(token.body.scope, 'openid')
  assert.equal(token.body.authorization_details, undefined)
  const rs = await clickFor(browser, 'signing', 'signing-out')
  assert.equal(rs.status, '401', rs.text)
  assert.equal(rs.oauthError, 'invalid_token')
  assert.match(rs.description, /not issued for this resource/)
})

// The service remembers an approval per subject and client: the next
// sign-in gets its code without a screen. fixture.reset forgets it, so the
// screen is shown again: what lets this suite run twice against one dev run.
test('a remembered consent is forgotten by fixture.reset', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  await signInToCode(browser)
  let from = (await outcome(browser, 'authorize')).url
  await (await browser.$('#signin')).click()
  const again = await landedFrom(browser, from)
  assert.equal(again.status, 'code', 'the remembered consent answers at once, without a screen')
  await assert.rejects(browser.getConsent(), { name: 'no such alert' })

  const reset = await control(browser, 'fixture.reset', { client_id: s.clientId })
  assert.ok(reset.consents.includes(`${s.subject} ${s.clientId}`), JSON.stringify(reset))
  const { shown, landed } = await signInToCode(browser)
  assert.equal(shown.client_id, s.clientId)
  assert.equal(landed.status, 'code')
})

// WebdriverIO reads any answer whose value has an `error` member as a
// WebDriver error ({"value": {"error": ...}} is how a driver answers a
// failed command), even a 200: a page's dataset with data-error="invalid_grant"
// makes Execute Script throw an error named invalid_grant, and so does the
// front's fault.add, whose answer is the fault with its "error". This test's
// session is opened without the suite's answersAreResults to show it; the
// fault is added all the same (once: connectionRetryCount is 0).
test('the data-error trap of Execute Script results', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s, undefined, { raw: true })
  await signInToCode(browser)
  await assert.rejects(control(browser, 'fault.add', { endpoint: 'token', client_id: s.clientId, times: 1, error: 'invalid_grant' }),
    { name: 'invalid_grant' })
  const token = await clickFor(browser, 'redeem', 'token')
  assert.equal(token.oauthError, 'invalid_grant')
  assert.deepEqual((await control(browser, 'fault.list')).faults, [], 'the fault was added once, and spent')

  await assert.rejects(browser.execute(() => document.body.dataset), { name: 'invalid_grant' })
  // Return a value without such a member: a JSON string, or renamed members.
  const safe = await browser.execute(() => JSON.stringify(document.body.dataset))
  assert.equal(JSON.parse(safe).error, 'invalid_grant')
  const renamed = await browser.execute(() => ({ oauthError: document.body.dataset.error }))
  assert.equal(renamed.oauthError, 'invalid_grant')
})

// With answersAreResults (examples/qa/wdio/lib/session.js, the suite's default) a 200 answer
// is a result, whatever its members.
test('answersAreResults: a 200 answer with an error member is a result', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  await signInToCode(browser)
  const added = await control(browser, 'fault.add', { endpoint: 'token', client_id: s.clientId, times: 1, error: 'invalid_grant' })
  assert.match(added.id, /^flt_/)
  assert.equal(added.error, 'invalid_grant')
  assert.equal((await clickFor(browser, 'redeem', 'token')).oauthError, 'invalid_grant')
  const dataset = await browser.execute(() => document.body.dataset)
  assert.equal(dataset.error, 'invalid_grant')
  // A refusal is still an error: a 400, named by the front.
  await assert.rejects(control(browser, 'clock.advance', { duration: 'soon' }), (err) => {
    assert.equal(err.name, 'invalid argument')
    assert.match(err.message, /advance/)
    return true
  })
})
