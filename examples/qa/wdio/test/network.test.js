// The host's network conditions for the Miniapp's view (the front's
// /miniapp-host/network, the host's network.set; docs/playground.md,
// "Network conditions and mocks"): offline, every request of the page
// fails as a browser's offline fetch does, its own backend's included;
// cleared, they are answered again.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setup, fresh, signIn, clickFor, network } from '../lib/session.js'

const s = setup()
const TEST_TIMEOUT_MS = 240000

test('offline, then online again', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const browser = await fresh(t, s)
  await signIn(browser)
  await network(browser, { throttle: 'offline' })

  const info = await clickFor(browser, 'userinfo', 'userinfo-out')
  assert.equal(info.status, 'network-error', info.text)
  assert.match(info.body.network_error, /^TypeError/)
  const rs = await clickFor(browser, 'signing', 'signing-out')
  assert.equal(rs.status, 'network-error', rs.text)

  await browser.networkClear()
  const again = await clickFor(browser, 'userinfo', 'userinfo-out')
  assert.equal(again.status, '200', again.text)
  assert.equal(again.body.sub, s.subject)
  assert.equal((await clickFor(browser, 'signing', 'signing-out')).status, '200')
})
