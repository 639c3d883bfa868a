// The QA Miniapp's page: a public client that signs in by navigating to the
// service's authorization endpoint (PKCE made here, RFC 7636), lands on its
// redirect_uri with the code and shows it, and redeems it only when
// "Redeem the code" is clicked, so that a suite can move the service's clock
// in between. Every outcome is shown in an element of its own with stable
// data attributes (page.html).
'use strict'
const $ = (id) => document.getElementById(id)
const store = sessionStorage
let conf, md

function b64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}
const random = (n) => b64url(crypto.getRandomValues(new Uint8Array(n)))

// show writes one outcome: {status, error?, error_description?, ms?, body}.
function show(el, o) {
  const d = el.dataset
  d.seq = String(Number(d.seq || 0) + 1)
  d.status = String(o.status)
  d.error = o.error || ''
  d.errorDescription = o.error_description || ''
  d.ms = o.ms === undefined ? '' : String(Math.round(o.ms))
  el.textContent = typeof o.body === 'string' ? o.body : JSON.stringify(o.body)
  document.body.dataset.error = o.error || ''
}

// answer reads a fetch's response as the page shows it.
async function answer(r, ms) {
  const text = await r.text()
  let body = text
  try { body = JSON.parse(text) } catch { /* text */ }
  const o = { status: r.status, body, ms }
  if (body && typeof body === 'object' && typeof body.error === 'string') {
    o.error = body.error
    o.error_description = body.error_description || ''
  }
  return o
}

// request runs fetch and shows its outcome in el; a fetch that fails (no
// network, a dropped connection) is "network-error" with its message.
async function request(el, url, init) {
  const t0 = performance.now()
  try {
    const o = await answer(await fetch(url, init), performance.now() - t0)
    show(el, o)
    return o
  } catch (e) {
    show(el, { status: 'network-error', ms: performance.now() - t0, body: { network_error: `${e.name}: ${e.message}` } })
    return null
  }
}

async function pkce() {
  const verifier = random(32)
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)))
  const state = random(16)
  store.setItem('qa_verifier', verifier)
  store.setItem('qa_state', state)
  return { state, code_challenge: challenge, code_challenge_method: 'S256' }
}

// The request: openid and profile, and the signing provider's signing-key
// detail (read) for the Company org_id, so that the Resource Server has a
// grant to answer with.
function request_params() {
  const signing = conf.signing_base_url.replace(/\/api$/, '')
  return {
    response_type: 'code', client_id: conf.client_id, redirect_uri: location.origin + '/callback',
    scope: 'openid profile', resource: conf.base_url, org_id: conf.org_id,
    authorization_details: JSON.stringify([{ type: signing + '/authorization-details/signing-key', actions: ['read'], locations: [conf.signing_base_url] }]),
  }
}

$('signin').addEventListener('click', async () => {
  const u = new URL(md.authorization_endpoint)
  u.search = new URLSearchParams({ ...request_params(), ...await pkce() })
  location.href = u.toString()
})

// PAR answers no CORS: the page's backend pushes the request (server.js).
$('par').addEventListener('click', async () => {
  const params = { ...request_params(), ...await pkce() }
  delete params.client_id
  const t0 = performance.now()
  try {
    const r = await fetch('/api/par', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(params) })
    const b = await r.json()
    if (b.network_error) return show($('pushed'), { status: 'network-error', ms: performance.now() - t0, body: b })
    const o = { status: b.status, body: b.body, ms: performance.now() - t0 }
    if (b.body && b.body.error) Object.assign(o, { error: b.body.error, error_description: b.body.error_description })
    if (b.body && b.body.request_uri) store.setItem('qa_request_uri', b.body.request_uri)
    show($('pushed'), o)
  } catch (e) {
    show($('pushed'), { status: 'network-error', ms: performance.now() - t0, body: { network_error: `${e.name}: ${e.message}` } })
  }
})

$('par-go').addEventListener('click', () => {
  const u = new URL(md.authorization_endpoint)
  u.search = new URLSearchParams({ client_id: conf.client_id, request_uri: store.getItem('qa_request_uri') || '' })
  location.href = u.toString()
})

// A QA aid (server.js, /api/par/check): the service's answer to a browser
// for the pushed request, since the host shows its refusal in its own view.
$('par-check').addEventListener('click', async () => {
  const el = $('par-check-out')
  const t0 = performance.now()
  try {
    const r = await fetch('/api/par/check', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ request_uri: store.getItem('qa_request_uri') || '' }) })
    const b = await r.json()
    const ms = performance.now() - t0
    if (b.network_error) return show(el, { status: 'network-error', ms, body: b })
    show(el, { status: b.status, error: b.error, error_description: b.error_description, ms, body: b })
  } catch (e) {
    show(el, { status: 'network-error', ms: performance.now() - t0, body: { network_error: `${e.name}: ${e.message}` } })
  }
})

$('redeem').addEventListener('click', async () => {
  const q = new URLSearchParams(location.search)
  const el = $('token')
  const t0 = performance.now()
  let o
  try {
    o = await answer(await fetch(md.token_endpoint, {
      method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: q.get('code') || '', redirect_uri: location.origin + '/callback',
        client_id: conf.client_id, code_verifier: store.getItem('qa_verifier') || '' }),
    }), performance.now() - t0)
  } catch (e) {
    return show(el, { status: 'network-error', ms: performance.now() - t0, body: { network_error: `${e.name}: ${e.message}` } })
  }
  if (o.status === 200 && o.body && o.body.access_token) {
    store.setItem('qa_access_token', o.body.access_token)
    // The token response is shown without the tokens themselves.
    const { access_token: _a, id_token: idToken, refresh_token: _r, ...rest } = o.body
    o.body = { ...rest, has_access_token: true, has_id_token: !!idToken }
    $('status').textContent = 'Signed in.'
    document.body.dataset.state = 'signed-in'
  }
  show(el, o)
})

const bearer = () => ({ Authorization: 'Bearer ' + (store.getItem('qa_access_token') || '') })
$('userinfo').addEventListener('click', () => request($('userinfo-out'), md.userinfo_endpoint, { headers: bearer() }))

// The Resource Servers answer no CORS: the backend calls them (server.js).
$('signing').addEventListener('click', async () => {
  const el = $('signing-out')
  const t0 = performance.now()
  try {
    const r = await fetch('/api/signing', { method: 'POST', headers: bearer() })
    const b = await r.json()
    const ms = performance.now() - t0
    if (b.network_error) return show(el, { status: 'network-error', ms, body: b })
    const o = { status: b.status, body: b, ms }
    if (b.body && typeof b.body === 'object' && b.body.error) Object.assign(o, { error: b.body.error, error_description: b.body.error_description || b.body.message })
    show(el, o)
  } catch (e) {
    show(el, { status: 'network-error', ms: performance.now() - t0, body: { network_error: `${e.name}: ${e.message}` } })
  }
})

// The authorization response, on the redirect_uri (RFC 6749 section 4.1.2,
// RFC 9207): the state checked, the code or the error shown.
function landed() {
  const q = new URLSearchParams(location.search)
  if (!q.has('code') && !q.has('error')) return
  const want = store.getItem('qa_state')
  const o = { status: q.has('code') ? 'code' : 'error', body: { state_ok: !!want && q.get('state') === want, iss: q.get('iss'), has_code: q.has('code') } }
  if (q.has('error')) Object.assign(o, { error: q.get('error'), error_description: q.get('error_description') || '' })
  if (!o.body.state_ok) o.status = 'state-mismatch'
  else if (o.body.iss !== conf.issuer) o.status = 'iss-mismatch'
  show($('authorize'), o)
  $('code').textContent = q.get('code') || ''
}

(async () => {
  try {
    conf = await (await fetch('/config.json')).json()
    md = await (await fetch(conf.issuer + '/.well-known/oauth-authorization-server')).json()
    landed()
    $('status').textContent = new URLSearchParams(location.search).has('code') ? 'Code received.' : 'Not signed in.'
    document.body.dataset.state = 'ready'
  } catch (e) {
    $('status').textContent = 'Could not load the service: ' + e.message
    document.body.dataset.state = 'broken'
  }
})()
