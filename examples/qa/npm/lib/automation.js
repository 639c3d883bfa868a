'use strict'
// A small client of Miniapp Host's automation channel (docs/automation.md),
// enough to answer the consent screen beside a WebDriver session: it keeps
// every event from the moment it connected, sends commands and waits for
// their replies, and waits for events, every wait bounded.
const WebSocket = require('ws')

const PROTOCOL = 'miniapp-automation.v1'

/** A command the host refused or failed, with the channel's code. */
class AutomationError extends Error {
  constructor(command, code, message) {
    super(`automation: ${command}: ${code}: ${message}`)
    this.command = command
    this.code = code
  }
}

class Automation {
  /**
   * Connects to url (ws://127.0.0.1:PORT/automation) with token, both as
   * the host wrote them to --automation-file. The token travels as a second
   * offered subprotocol, never in the URL.
   */
  static connect(url, token, { timeoutMs = 30000 } = {}) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, [PROTOCOL, 'token.' + token], { handshakeTimeout: timeoutMs })
      ws.once('open', () => resolve(new Automation(ws)))
      ws.once('unexpected-response', (req, res) => {
        let body = ''
        res.on('data', (d) => { body += d })
        res.on('end', () => reject(new Error(`automation: connect to ${url}: HTTP ${res.statusCode} ${body}`)))
      })
      ws.once('error', (err) => reject(new Error(`automation: connect to ${url}: ${err.message}`)))
    })
  }

  constructor(ws) {
    this.ws = ws
    this.events = [] // every event since the connection, oldest first
    this.cursor = 0 // waitFor looks at events from this index on
    this.nextId = 1
    this.pending = new Map() // command id -> {resolve, reject, command}
    this.waiters = new Set() // () => void, called at each event and at close
    this.closed = null // why the connection ended
    ws.on('message', (raw) => this.#receive(raw))
    ws.on('close', (code, reason) => {
      this.closed = new Error(`automation: the connection closed (${code} ${reason})`)
      for (const p of this.pending.values()) p.reject(this.closed)
      this.pending.clear()
      for (const w of this.waiters) w()
    })
  }

  #receive(raw) {
    let m
    try {
      m = JSON.parse(raw)
    } catch {
      return
    }
    if (m.type === 'event') {
      this.events.push(m)
      for (const w of this.waiters) w()
    } else if (m.type === 'reply' && this.pending.has(m.id)) {
      const p = this.pending.get(m.id)
      this.pending.delete(m.id)
      if (m.ok) p.resolve(m.result)
      else p.reject(new AutomationError(p.command, m.error.code, m.error.message))
    }
  }

  /** Sends a command and resolves with its result; rejects with AutomationError. */
  command(command, params = {}, { timeoutMs = 60000 } = {}) {
    if (this.closed) return Promise.reject(this.closed)
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`automation: ${command}: no reply within ${timeoutMs} ms`))
      }, timeoutMs)
      const done = (f) => (v) => { clearTimeout(timer); f(v) }
      this.pending.set(id, { command, resolve: done(resolve), reject: done(reject) })
      this.ws.send(JSON.stringify({ id, command, params }))
    })
  }

  approve(account) { return this.command('consent.approve', account ? { account } : {}) }
  deny() { return this.command('consent.deny') }

  /**
   * Resolves with the first event after the one returned last that matches
   * (a kind, or a predicate of the event), including events that came
   * before the call.
   */
  waitFor(match, { timeoutMs = 60000 } = {}) {
    const pred = typeof match === 'string' ? (e) => e.kind === match : match
    return new Promise((resolve, reject) => {
      const look = () => {
        for (let i = this.cursor; i < this.events.length; i++) {
          if (pred(this.events[i])) {
            this.cursor = i + 1
            finish()
            resolve(this.events[i])
            return
          }
        }
        if (this.closed) {
          finish()
          reject(this.closed)
        }
      }
      const from = this.cursor
      const timer = setTimeout(() => {
        finish()
        reject(new Error(`automation: no ${typeof match === 'string' ? match : 'matching'} event within ${timeoutMs} ms; events since: ${this.events.slice(from).map((e) => e.kind).join(', ') || 'none'}`))
      }, timeoutMs)
      const finish = () => { clearTimeout(timer); this.waiters.delete(look) }
      this.waiters.add(look)
      look()
    })
  }

  close() {
    this.ws.close()
  }
}

module.exports = { Automation, AutomationError }
