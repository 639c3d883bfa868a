// A hand-written Miniapp for the WebdriverIO suite (docs/webdriver.md,
// "Example suites"), outside the playground's demos: node's http module and
// nothing else. It serves
//
//   GET  /miniapp.webmanifest   its manifest (docs/your-miniapp.md, "The manifest"): a public client
//   GET  / and GET /callback    the page (page.html, app.js): both are redirect URIs `dev` registers
//   GET  /config.json           the service the page signs in at, from --config (written once `dev` is up)
//   POST /api/par               its backend's pushed authorization request (RFC 9126): PAR answers no CORS,
//                               so a page cannot push; the backend posts the page's parameters and returns
//                               the service's status and body
//   POST /api/par/check         a QA aid, not something a Miniapp needs: what the service's authorization
//                               endpoint answers a browser for the pushed request {request_uri}, with the
//                               error code and description its error page shows. The host shows its refusal
//                               of a request_uri in its own view, which a WebDriver session does not see.
//   POST /api/signing           its backend's call of the signing Resource Server (GET {signing_base_url}/signing-key)
//                               with the page's access token: the Resource Servers answer no CORS either, so
//                               a Miniapp reaches them through its backend; returns the status, the headers
//                               a client reads (Retry-After, WWW-Authenticate) and the body
//
//   node examples/qa/wdio/miniapp/server.js --config FILE [--addr 127.0.0.1:0]
//
// It prints `miniapp http://127.0.0.1:PORT` once it listens. FILE is read at
// each request that needs it ({"issuer", "base_url", "signing_base_url"}):
// the Miniapp must listen before `miniapp-host dev URL` can read its
// manifest, and learns the service's addresses only once `dev` printed them.
import http from 'node:http'
import fs from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
export const MINIAPP_ID = 'qa-wdio'
export const CLIENT_ID = 'qa-wdio'
// The backend's calls to the service are bounded: a delay fault longer than
// this is the backend's timeout, reported to the page as such.
const BACKEND_TIMEOUT_MS = 30000

function args(argv) {
  const out = { addr: '127.0.0.1:0', config: '' }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if ((a === '--addr' || a === '--config') && i + 1 < argv.length) out[a.slice(2)] = argv[++i]
    else throw new Error(`miniapp: unknown argument ${a}; usage: node examples/qa/wdio/miniapp/server.js --config FILE [--addr 127.0.0.1:0]`)
  }
  if (!out.config) throw new Error('miniapp: --config FILE is required (the service\'s addresses, written once `miniapp-host dev` is up)')
  return out
}

// Every name a loopback Host may have (docs/your-miniapp.md, "What `dev` serves").
function loopbackHost(host) {
  const h = (host || '').replace(/:\d+$/, '')
  return h === '127.0.0.1' || h === 'localhost' || h === '[::1]'
}

async function readConfig(file) {
  let raw
  try {
    raw = await fs.readFile(file, 'utf8')
  } catch {
    return null
  }
  const c = JSON.parse(raw)
  for (const k of ['issuer', 'base_url', 'signing_base_url']) {
    if (typeof c[k] !== 'string' || !c[k]) throw new Error(`miniapp: ${file}: ${k} is missing`)
  }
  return c
}

function send(res, status, type, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', ...headers })
  res.end(body)
}
const json = (res, status, v) => send(res, status, 'application/json', JSON.stringify(v))

async function readBody(req) {
  const chunks = []
  let n = 0
  for await (const c of req) {
    n += c.length
    if (n > 64 * 1024) throw new Error('body over 64 KiB')
    chunks.push(c)
  }
  return Buffer.concat(chunks).toString('utf8')
}

// call makes the backend's request and describes its outcome for the page:
// {status, retry_after?, www_authenticate?, dpop_nonce?, body} or
// {network_error} when no answer came (a dropped connection, a timeout).
async function call(url, init) {
  try {
    const r = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(BACKEND_TIMEOUT_MS) })
    const text = await r.text()
    let body = text
    try { body = JSON.parse(text) } catch { /* kept as text */ }
    const out = { status: r.status, body }
    for (const [h, k] of [['retry-after', 'retry_after'], ['www-authenticate', 'www_authenticate'], ['dpop-nonce', 'dpop_nonce']]) {
      if (r.headers.has(h)) out[k] = r.headers.get(h)
    }
    return out
  } catch (err) {
    return { network_error: `${err.name}: ${err.cause ? err.cause.code || err.cause.message : err.message}` }
  }
}

const unescapeHTML = (t) => t.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))
  .replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')

let metadata // the service's metadata, read once (RFC 8414 section 3)
async function discover(conf) {
  if (!metadata) {
    const r = await fetch(`${conf.issuer}/.well-known/oauth-authorization-server`, { signal: AbortSignal.timeout(BACKEND_TIMEOUT_MS) })
    if (!r.ok) throw new Error(`the service's metadata: ${r.status}`)
    metadata = await r.json()
  }
  return metadata
}

export function start({ addr, config }) {
  const [host, port] = addr.split(/:(?=\d+$)/)
  const files = {
    '/': ['page.html', 'text/html; charset=utf-8'],
    '/callback': ['page.html', 'text/html; charset=utf-8'],
    '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  }
  let origin = ''
  const server = http.createServer(async (req, res) => {
    try {
      if (!loopbackHost(req.headers.host)) return json(res, 403, { error: 'bad_host', message: 'a loopback Host only' })
      const url = new URL(req.url, origin)
      if (req.method === 'GET' && url.pathname === '/miniapp.webmanifest') {
        return send(res, 200, 'application/manifest+json', JSON.stringify({
          id: MINIAPP_ID, name: 'QA WebdriverIO Miniapp', short_name: 'QA wdio',
          description: 'A hand-written Miniapp that signs in by navigating to the service, for a WebdriverIO suite.',
          start_url: './', scope: './', display: 'standalone', oauth: { client_id: CLIENT_ID },
        }))
      }
      if (req.method === 'GET' && files[url.pathname]) {
        const [file, type] = files[url.pathname]
        return send(res, 200, type, await fs.readFile(path.join(here, file)))
      }
      if (req.method === 'GET' && url.pathname === '/config.json') {
        const c = await readConfig(config)
        if (!c) return json(res, 503, { error: 'not_ready', message: `${config} is not written yet` })
        return json(res, 200, { client_id: CLIENT_ID, issuer: c.issuer, base_url: c.base_url, signing_base_url: c.signing_base_url, org_id: 'org_andes' })
      }
      if (req.method === 'POST' && url.pathname.startsWith('/api/')) {
        // The backend answers its own page only.
        if (req.headers.origin !== undefined && req.headers.origin !== origin) {
          return json(res, 403, { error: 'bad_origin', message: `Origin ${req.headers.origin} is not ${origin}` })
        }
        const c = await readConfig(config)
        if (!c) return json(res, 503, { error: 'not_ready', message: `${config} is not written yet` })
        if (url.pathname === '/api/par') {
          const params = JSON.parse(await readBody(req) || '{}')
          const md = await discover(c)
          const form = new URLSearchParams({ ...params, client_id: CLIENT_ID })
          return json(res, 200, await call(md.pushed_authorization_request_endpoint, {
            method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: form.toString(),
          }))
        }
        if (url.pathname === '/api/par/check') {
          const { request_uri: requestURI } = JSON.parse(await readBody(req) || '{}')
          const md = await discover(c)
          const u = new URL(md.authorization_endpoint)
          u.search = new URLSearchParams({ client_id: CLIENT_ID, request_uri: requestURI || '' })
          const out = await call(u, { headers: { Accept: 'text/html' } })
          if (typeof out.body === 'string') {
            // The error page (its <p class="error"><code>CODE</code></p> and the description after it).
            const m = /<p class="error"><code>([^<]*)<\/code><\/p>\s*<p>([^<]*)<\/p>/.exec(out.body)
            if (m) Object.assign(out, { error: m[1], error_description: unescapeHTML(m[2]) })
            delete out.body
          }
          return json(res, 200, out)
        }
        if (url.pathname === '/api/signing') {
          const auth = req.headers.authorization || ''
          return json(res, 200, await call(`${c.signing_base_url}/signing-key`, { headers: auth ? { Authorization: auth } : {} }))
        }
      }
      json(res, 404, { error: 'not_found', message: `${req.method} ${url.pathname}` })
    } catch (err) {
      json(res, 500, { error: 'miniapp_backend', message: String(err && err.message) })
    }
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(Number(port), host, () => {
      origin = `http://${host}:${server.address().port}`
      resolve({ server, origin })
    })
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { origin } = await start(args(process.argv.slice(2)))
  process.stdout.write(`miniapp ${origin}\n`)
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0))
}
