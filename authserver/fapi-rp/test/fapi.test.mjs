// The FAPI 2.0 flow of the reference authorization server driven by
// oauth4webapi, a certified FAPI 2.0 relying party (docs/fapi.md, "Proof with
// a certified relying party"). authserver/fapi_rp_test.go starts the server on
// loopback, registers the credentials and runs this suite with FAPI_* set.
//
// Refusals oauth4webapi will not produce (a replayed, stale or misdirected
// DPoP proof, an HS256 client assertion) are crafted below with node's
// WebCrypto (jws()), as a faulty client would send them. A code redeemed
// late moves the server's clock through FAPI_CLOCK_URL (setClock) rather
// than waiting 60 s.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHmac, randomBytes, webcrypto } from 'node:crypto'
import * as oauth from 'oauth4webapi'

const env = (n) => {
  const v = process.env[n]
  if (!v) throw new Error(`fapi-rp: ${n} is not set: run the suite through go test -run TestFAPIRelyingParty ./authserver/`)
  return v
}
const issuer = new URL(env('FAPI_ISSUER'))
const baseURL = env('FAPI_BASE_URL')
const grantURL = env('FAPI_GRANT_URL')
const signingBase = env('FAPI_SIGNING_BASE_URL')
const redirectURI = env('FAPI_REDIRECT_URI')
const insecure = { [oauth.allowInsecureRequests]: true } // the server listens on http://127.0.0.1

const b64u = (b) => Buffer.from(b).toString('base64url')

// importClient makes the client of a FAPI_*_CLIENT_ID/JWK pair.
async function importClient (idVar, jwkVar) {
  const jwk = JSON.parse(env(jwkVar))
  const key = await webcrypto.subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
  return { client: { client_id: env(idVar) }, auth: oauth.PrivateKeyJwt({ key, kid: jwk.kid }), key, kid: jwk.kid }
}

// jws signs a compact JWS with an ES256 private CryptoKey.
async function jws (header, claims, key) {
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(claims))}`
  const sig = await webcrypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key, Buffer.from(input))
  return `${input}.${b64u(sig)}`
}

// proof is a hand-made DPoP proof (RFC 9449 §4.2) of keyPair.
async function proof (keyPair, htm, htu, change = {}) {
  const { kty, crv, x, y } = await webcrypto.subtle.exportKey('jwk', keyPair.publicKey)
  const claims = { jti: b64u(randomBytes(16)), htm, htu, iat: Math.floor(Date.now() / 1000), ...change }
  return jws({ typ: 'dpop+jwt', alg: 'ES256', jwk: { kty, crv, x, y } }, claims, keyPair.privateKey)
}

// assertion is a hand-made client assertion (RFC 7523) of rp.
function assertion (rp, aud) {
  const now = Math.floor(Date.now() / 1000)
  return jws({ alg: 'ES256', kid: rp.kid, typ: 'JWT' },
    { iss: rp.client.client_id, sub: rp.client.client_id, aud, iat: now, exp: now + 60, jti: b64u(randomBytes(16)) }, rp.key)
}

const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
const rp = await importClient('FAPI_CLIENT_ID', 'FAPI_CLIENT_JWK')

// A company-scoped automatic charge (docs/catalog.md), with org_id, and a
// signing-key detail of the signing provider, the Resource Server that reads
// the grant below.
const details = JSON.stringify([
  {
    type: `${baseURL}/authorization-details/automatic-charge`,
    actions: ['create_automatic_charge'],
    locations: [baseURL],
    transaction: { currency: 'CLP', minimum: '1000', maximum: '50000' }
  },
  { type: `${signingBase.replace(/\/api$/, '')}/authorization-details/signing-key`, actions: ['read'], locations: [signingBase] }
])

async function requestParams (verifier) {
  const p = new URLSearchParams({
    response_type: 'code',
    redirect_uri: redirectURI,
    scope: 'openid',
    resource: baseURL,
    authorization_details: details,
    org_id: env('FAPI_ORG_ID'),
    state: 'st-fapi',
    nonce: 'n-fapi',
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256'
  })
  p.append('resource', signingBase)
  return p
}

// approve has the subject approve the authorization request at
// authorizationURL through the native-consent API (docs/native-consent.md),
// as the host does, and returns the redirect URL with the code.
async function approve (authorizationURL) {
  const basic = 'Basic ' + Buffer.from(`${env('FAPI_HOST_ID')}:${env('FAPI_HOST_SECRET')}`).toString('base64')
  const native = env('FAPI_NATIVE_URL')
  let r = await fetch(native, {
    method: 'POST',
    headers: { authorization: basic, 'content-type': 'application/json' },
    body: JSON.stringify({ authorization_url: authorizationURL, subject: env('FAPI_SUBJECT') })
  })
  let body = await r.json()
  assert.equal(r.status, 201, `native submit: ${JSON.stringify(body)}`)
  r = await fetch(`${native}/${body.request_id}/decision`, {
    method: 'POST',
    headers: { authorization: basic, 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'approve', account_id: env('FAPI_ACCOUNT_ID') })
  })
  body = await r.json()
  assert.equal(r.status, 200, `native decision: ${JSON.stringify(body)}`)
  return new URL(body.redirect_url)
}

// flow runs PAR, consent and the code's redemption with a fresh DPoP key,
// and returns the token response and the key.
async function flow () {
  const keyPair = await oauth.generateKeyPair('ES256')
  const DPoP = oauth.DPoP(rp.client, keyPair)
  const verifier = oauth.generateRandomCodeVerifier()
  const par = await oauth.processPushedAuthorizationResponse(as, rp.client,
    await oauth.pushedAuthorizationRequest(as, rp.client, rp.auth, await requestParams(verifier), { DPoP, ...insecure }))
  assert.match(par.request_uri, /^urn:ietf:params:oauth:request_uri:/)
  assert.ok(par.expires_in > 0 && par.expires_in < 600, `expires_in ${par.expires_in}`)
  const authURL = new URL(as.authorization_endpoint)
  authURL.searchParams.set('client_id', rp.client.client_id)
  authURL.searchParams.set('request_uri', par.request_uri)
  const callback = oauth.validateAuthResponse(as, rp.client, await approve(authURL.href), 'st-fapi')
  const tokens = await oauth.processAuthorizationCodeResponse(as, rp.client,
    await oauth.authorizationCodeGrantRequest(as, rp.client, rp.auth, callback, redirectURI, verifier, { DPoP, ...insecure }),
    { expectedNonce: 'n-fapi' })
  return { tokens, keyPair, DPoP }
}

// readGrant calls GET {base_url}/authorization as the signing provider, a
// Resource Server in the token's audience, forwarding the DPoP proof that
// oauth4webapi made for a request to the provider's resource (docs/fapi.md,
// "Presenting a bound token"): the proof's htu is the provider's URL.
async function readGrant (accessToken, DPoP, scheme) {
  let sent
  const res = await oauth.protectedResourceRequest(accessToken, 'GET', new URL(`${signingBase}/keys`), new Headers(), null, {
    DPoP,
    ...insecure,
    [oauth.customFetch]: (url, init) => {
      const headers = { ...init.headers, 'x-client-id': env('FAPI_RS_ID'), 'x-client-secret': env('FAPI_RS_SECRET') }
      if (scheme) headers.authorization = `${scheme} ${accessToken}`
      sent = headers
      return fetch(grantURL, { ...init, headers })
    }
  }).catch((err) => err)
  return { res, sent }
}

test('discovery names PAR, private_key_jwt and DPoP', () => {
  assert.equal(as.issuer, issuer.href.replace(/\/$/, ''))
  assert.equal(as.pushed_authorization_request_endpoint, `${as.issuer}/oauth/par`)
  assert.ok(as.token_endpoint_auth_methods_supported.includes('private_key_jwt'))
  assert.deepEqual(as.dpop_signing_alg_values_supported, ['ES256', 'PS256', 'EdDSA'])
  assert.ok(as.token_endpoint_auth_signing_alg_values_supported.includes('ES256'))
  assert.equal(as.authorization_response_iss_parameter_supported, true)
})

test('PAR + private_key_jwt + DPoP + PKCE + RAR: a DPoP-bound token with authorization_details, the grant behind it, and the provider', async () => {
  const { tokens, keyPair, DPoP } = await flow()
  assert.equal(tokens.token_type, 'dpop')
  const types = tokens.authorization_details.map((d) => d.type)
  assert.ok(types.includes(`${baseURL}/authorization-details/automatic-charge`), JSON.stringify(tokens.authorization_details))
  const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url'))
  const jkt = await oauth.DPoP(rp.client, keyPair).calculateThumbprint()
  assert.equal(claims.cnf.jkt, jkt)

  const { res } = await readGrant(tokens.access_token, DPoP)
  assert.ok(res instanceof Response, `grant: ${res}`)
  const grant = await res.json()
  assert.equal(res.status, 200, JSON.stringify(grant))
  assert.equal(grant.subject, env('FAPI_SUBJECT'))
  assert.equal(grant.orgId, env('FAPI_ORG_ID'))
  assert.ok(JSON.stringify(grant.authorizationDetails).includes('automatic-charge'))

  // The signing provider itself (authserver/providers) takes the token
  // with oauth4webapi's proof for its URL, and refuses it as Bearer.
  const provider = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${signingBase}/signing-key`),
    new Headers(), null, { DPoP, ...insecure })
  assert.equal(provider.status, 200, await provider.clone().text())
  const asBearer = await fetch(`${signingBase}/signing-key`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  assert.equal(asBearer.status, 401)
  assert.match(asBearer.headers.get('www-authenticate'), /^DPoP error="invalid_token"/)

  // The client itself, keyed (private_key_jwt, no secret), reads its grant
  // with a client assertion in X-Client-Assertion and oauth4webapi's proof
  // for the grant endpoint (docs/authserver.md, "GET {base_url}/authorization");
  // a fapi2 credential's assertion names the issuer alone (docs/fapi.md).
  const own = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(grantURL),
    new Headers({ 'x-client-assertion': await assertion(rp, as.issuer) }), null, { DPoP, ...insecure })
  const ownGrant = await own.json()
  assert.equal(own.status, 200, JSON.stringify(ownGrant))
  assert.equal(ownGrant.orgId, env('FAPI_ORG_ID'))

  // The bound token without a proof, as DPoP: 401 invalid_dpop_proof.
  const noProof = await fetch(grantURL, {
    headers: { authorization: `DPoP ${tokens.access_token}`, 'x-client-id': env('FAPI_RS_ID'), 'x-client-secret': env('FAPI_RS_SECRET') }
  })
  assert.equal(noProof.status, 401)
  assert.match(noProof.headers.get('www-authenticate'), /^DPoP error="invalid_dpop_proof"/)

  // The bound token as Bearer: 401 with a DPoP challenge.
  const bearer = await fetch(grantURL, {
    headers: { authorization: `Bearer ${tokens.access_token}`, 'x-client-id': env('FAPI_RS_ID'), 'x-client-secret': env('FAPI_RS_SECRET') }
  })
  assert.equal(bearer.status, 401)
  assert.match(bearer.headers.get('www-authenticate'), /^DPoP error="invalid_token"/)
  assert.equal((await bearer.json()).code, 'invalid_token')
})

test('an authorization request that was not pushed is refused', async () => {
  const params = await requestParams(oauth.generateRandomCodeVerifier())
  params.set('client_id', rp.client.client_id)
  const res = await fetch(`${as.authorization_endpoint}?${params}`, { redirect: 'manual' })
  assert.equal(res.status, 303)
  const loc = new URL(res.headers.get('location'))
  assert.equal(loc.origin + loc.pathname, redirectURI)
  assert.equal(loc.searchParams.get('error'), 'invalid_request')
  assert.match(loc.searchParams.get('error_description'), /requires pushed authorization requests/)
  assert.equal(loc.searchParams.get('iss'), as.issuer)
})

// push posts a pushed authorization request with a hand-made assertion
// and DPoP proof.
async function push (clientAssertion, dpop) {
  const body = await requestParams(oauth.generateRandomCodeVerifier())
  body.set('client_id', rp.client.client_id)
  body.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer')
  body.set('client_assertion', clientAssertion)
  const headers = { 'content-type': 'application/x-www-form-urlencoded' }
  if (dpop) headers.dpop = dpop
  const res = await fetch(as.pushed_authorization_request_endpoint, { method: 'POST', headers, body })
  return { status: res.status, body: await res.json(), headers: res.headers }
}

test('DPoP proofs that break a rule are refused at the PAR endpoint', async () => {
  const keyPair = await oauth.generateKeyPair('ES256', { extractable: true })
  const parURL = as.pushed_authorization_request_endpoint
  const good = await proof(keyPair, 'POST', parURL)
  let r = await push(await assertion(rp, as.issuer), good)
  assert.equal(r.status, 201, JSON.stringify(r.body))
  for (const [name, dpop, desc] of [
    ['a replayed jti', good, /jti was used before/],
    ['a stale iat', await proof(keyPair, 'POST', parURL, { iat: Math.floor(Date.now() / 1000) - 120 }), /old/],
    ['a wrong htu', await proof(keyPair, 'POST', as.token_endpoint), /is not the URL of this request/]
  ]) {
    r = await push(await assertion(rp, as.issuer), dpop)
    assert.equal(r.status, 400, `${name}: ${JSON.stringify(r.body)}`)
    assert.equal(r.body.error, 'invalid_dpop_proof', name)
    assert.match(r.body.error_description, desc, name)
    assert.equal(r.body.request_uri, undefined)
  }
})

test('a credential that requires DPoP nonces: a proof without one is refused with use_dpop_nonce, then oauth4webapi retries with it', async () => {
  const nrp = await importClient('FAPI_NONCE_CLIENT_ID', 'FAPI_NONCE_CLIENT_JWK')
  const DPoP = oauth.DPoP(nrp.client, await oauth.generateKeyPair('ES256'))
  const params = await requestParams(oauth.generateRandomCodeVerifier())
  const send = async () => oauth.processPushedAuthorizationResponse(as, nrp.client,
    await oauth.pushedAuthorizationRequest(as, nrp.client, nrp.auth, params, { DPoP, ...insecure }))
  const err = await send().then(() => null, (e) => e)
  assert.ok(oauth.isDPoPNonceError(err), `first push without a nonce: want use_dpop_nonce, got ${err}`)
  assert.equal(err.error, 'use_dpop_nonce')
  const par = await send()
  assert.match(par.request_uri, /^urn:ietf:params:oauth:request_uri:/)
})

test('a proof without a nonce, from a credential that requires one, is refused with use_dpop_nonce and a DPoP-Nonce', async () => {
  const nrp = await importClient('FAPI_NONCE_CLIENT_ID', 'FAPI_NONCE_CLIENT_JWK')
  const keyPair = await oauth.generateKeyPair('ES256', { extractable: true })
  const body = await requestParams(oauth.generateRandomCodeVerifier())
  body.set('client_id', nrp.client.client_id)
  body.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer')
  body.set('client_assertion', await assertion(nrp, as.issuer))
  const res = await fetch(as.pushed_authorization_request_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: await proof(keyPair, 'POST', as.pushed_authorization_request_endpoint) },
    body
  })
  const r = await res.json()
  assert.equal(res.status, 400, JSON.stringify(r))
  assert.equal(r.error, 'use_dpop_nonce')
  assert.match(r.error_description, /must carry a server nonce/)
  assert.ok(res.headers.get('dpop-nonce'), 'a DPoP-Nonce header to retry with')
})

// setClock moves the server's clock (the Go test's clock, through its
// loopback control address) seconds ahead of the real time.
async function setClock (seconds) {
  const r = await fetch(`${env('FAPI_CLOCK_URL')}?ahead=${seconds}`, { method: 'POST' })
  assert.equal(r.status, 204, `clock: ${await r.text()}`)
}

test('a code redeemed more than 60 s after it was issued is refused with invalid_grant', async () => {
  const keyPair = await oauth.generateKeyPair('ES256')
  const verifier = oauth.generateRandomCodeVerifier()
  const par = await oauth.processPushedAuthorizationResponse(as, rp.client,
    await oauth.pushedAuthorizationRequest(as, rp.client, rp.auth, await requestParams(verifier), { DPoP: oauth.DPoP(rp.client, keyPair), ...insecure }))
  const authURL = new URL(as.authorization_endpoint)
  authURL.searchParams.set('client_id', rp.client.client_id)
  authURL.searchParams.set('request_uri', par.request_uri)
  const callback = oauth.validateAuthResponse(as, rp.client, await approve(authURL.href), 'st-fapi')
  // 61 s later on the server's clock; the client's assertion and proof
  // follow that clock (oauth4webapi's clockSkew), so only the code is late.
  await setClock(61)
  try {
    const late = { ...rp.client, [oauth.clockSkew]: 61 }
    const err = await oauth.authorizationCodeGrantRequest(as, late, rp.auth, callback, redirectURI, verifier,
      { DPoP: oauth.DPoP(late, keyPair), ...insecure })
      .then((res) => oauth.processAuthorizationCodeResponse(as, late, res, { expectedNonce: 'n-fapi' }))
      .then(() => null, (e) => e)
    assert.ok(err instanceof oauth.ResponseBodyError, `want a refusal, got ${err}`)
    assert.equal(err.error, 'invalid_grant')
    assert.match(err.error_description, /code has expired/)
  } finally {
    await setClock(0)
  }
})

test('an HS256 client assertion is refused', async () => {
  const now = Math.floor(Date.now() / 1000)
  const input = `${b64u(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64u(JSON.stringify({
    iss: rp.client.client_id, sub: rp.client.client_id, aud: as.issuer, iat: now, exp: now + 60, jti: b64u(randomBytes(16))
  }))}`
  const hs = `${input}.${createHmac('sha256', 'a shared secret of 32 bytes ....').update(input).digest('base64url')}`
  const keyPair = await oauth.generateKeyPair('ES256', { extractable: true })
  const r = await push(hs, await proof(keyPair, 'POST', as.pushed_authorization_request_endpoint))
  assert.equal(r.status, 401, JSON.stringify(r.body))
  assert.equal(r.body.error, 'invalid_client')
  assert.match(r.body.error_description, /HS256/)
})
