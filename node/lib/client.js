'use strict'
// The public API: a thin layer over the addon that checks arguments, converts values and
// adds the iterators and events JavaScript users expect. Behaviour lives in core (Rust).
const { EventEmitter } = require('node:events')
const native = require('./native.js')
const args = require('./args.js')
const { SYNC, abortable, abortError, signal: checkSignal } = require('./call.js')

const EVENT_KINDS = native.vocabulary().find((list) => list.name === 'event_kind').words

/** Core's error table: `ErrorCodes.TIMEOUT === 'STATESTORE_TIMEOUT'`, and details by code. */
const ERROR_TABLE = native.errorCodes()
const ErrorCodes = Object.freeze(Object.fromEntries(ERROR_TABLE.map((e) => [e.name, 'STATESTORE_' + e.name])))

/** Core's connection settings: name, jsName, kind, env, default, doc of each. */
const CONNECT_OPTION_TABLE = Object.freeze(native.connectOptions().map((o) => Object.freeze({ ...o, env: o.env ?? null })))
const CONNECT_OPTIONS = new Map(CONNECT_OPTION_TABLE.map((o) => [o.jsName, o]))
const JS_ONLY_OPTIONS = ['returnStrings']

function settings(options, name) {
  if (options === undefined || options === null) return []
  if (typeof options !== 'object' || Array.isArray(options)) throw args.typeError(name, 'of type object', options)
  const out = []
  for (const [key, value] of Object.entries(options)) {
    if (JS_ONLY_OPTIONS.includes(key)) continue
    const spec = CONNECT_OPTIONS.get(key)
    if (!spec) {
      const known = [...CONNECT_OPTIONS.keys(), ...JS_ONLY_OPTIONS].join(', ')
      const error = new TypeError(`Unknown option "${key}" in "${name}"; expected one of: ${known}`)
      error.code = 'ERR_INVALID_ARG_VALUE'
      throw error
    }
    if (value === undefined || value === null) continue
    const where = `${name}.${key}`
    switch (spec.kind) {
      case 'bool':
        if (typeof value !== 'boolean') throw args.typeError(where, 'of type boolean', value)
        break
      case 'str':
      case 'path':
        args.string(value, where)
        break
      case 'duration':
        args.duration(value, where)
        break
      default: // port, int
        if (typeof value === 'string') args.text(value, where)
        else if (typeof value !== 'number') throw args.typeError(where, 'of type number', value)
    }
    out.push({ name: key, value })
  }
  return out
}

function returnsStrings(options) {
  return args.boolean(options && options.returnStrings, 'options.returnStrings') === true
}

/**
 * Orders two versions (or fencing tokens) as the service does, by core: -1, 0 or 1. Versions
 * are strings in the padded form `wallMs:counter:node`, so plain string order agrees except
 * across node ids.
 */
function compareVersions(a, b) {
  const required = (value, name) => {
    const text = args.token(value, name)
    if (text === undefined) throw args.typeError(name, 'of type string (a version or fencing token)', value)
    return text
  }
  return native.compareVersions(required(a, 'a'), required(b, 'b'))
}

const decode = (buffer) => (buffer === null || buffer === undefined ? buffer : buffer.toString('utf8'))

function event(raw, strings) {
  const out = { kind: raw.kind, key: raw.key, value: raw.value ?? null, version: raw.version ?? null }
  if (raw.holder !== undefined && raw.holder !== null) out.holder = raw.holder
  if (raw.loss !== undefined && raw.loss !== null) out.loss = raw.loss
  if (strings) {
    out.key = decode(out.key)
    out.value = decode(out.value)
    if (out.holder) out.holder = decode(out.holder)
  }
  return out
}

/**
 * A stream of events: an async iterator (`for await`), a blocking iterator (`for ... of`,
 * `nextSync`) and an EventEmitter (`on('set' | 'delete' | 'resynced' | ...)`). Adding a
 * listener for an event kind switches it to push mode, after which the iterators get nothing
 * new: use one style per stream.
 */
class Observation extends EventEmitter {
  #native = null
  #opening
  #strings
  #pushing = false
  #closed = false

  constructor(opening, strings) {
    super()
    this.#strings = strings
    if (opening && typeof opening.then === 'function') {
      this.#opening = opening.then((n) => this.#attach(n))
      // Whoever awaits `ready` or iterates sees the failure; nobody else must crash on it.
      this.#opening.catch((error) => {
        if (this.listenerCount('error') > 0) this.emit('error', error)
      })
    } else {
      this.#opening = Promise.resolve(this.#attach(opening))
    }
    this.on('newListener', (name) => {
      if (name === 'event' || EVENT_KINDS.includes(name)) this.#push()
    })
  }

  #attach(n) {
    this.#native = n
    if (this.#closed) n.close()
    else if (this.#pushing) this.#startSink()
    return undefined
  }

  #startSink() {
    this.#native.setSink((raw) => {
      const e = event(raw, this.#strings)
      this.emit(e.kind, e)
      this.emit('event', e)
    })
  }

  #push() {
    if (this.#pushing) return
    this.#pushing = true
    if (this.#native) this.#startSink()
  }

  /** Resolves once the observation is registered with the service (no change after is missed). */
  get ready() {
    return this.#opening
  }

  /** Whether the stream has ended (closed, unobserved, or client closed). */
  get closed() {
    return this.#closed || (this.#native !== null && this.#native.isClosed)
  }

  /** The next event (async iterator protocol). */
  async next() {
    await this.#opening
    const raw = await this.#native.next()
    if (raw === null) return { done: true, value: undefined }
    return { done: false, value: event(raw, this.#strings) }
  }

  /** Ends the stream when a `for await` loop is left early. */
  async return() {
    this.close()
    return { done: true, value: undefined }
  }

  [Symbol.asyncIterator]() {
    return this
  }

  /**
   * Blocks until the next event: the event; `null` if none came within `options.timeout` ms;
   * throws `STATESTORE_CLOSED` once the stream has ended.
   */
  nextSync(options) {
    const { timeout } = args.options(options, 'options', ['timeout'])
    if (!this.#native) throw new Error('nextSync: this observation was opened with observe(); use observeSync() to iterate synchronously')
    const raw = this.#native.nextSync(args.duration(timeout, 'options.timeout'))
    return raw === null ? null : event(raw, this.#strings)
  }

  /** Blocking iteration until the stream ends. */
  *[Symbol.iterator]() {
    for (;;) {
      let e
      try {
        e = this.nextSync()
      } catch (error) {
        if (error.code === ErrorCodes.CLOSED) return
        throw error
      }
      yield e
    }
  }

  /** Ends the stream and stops the observation behind it (idempotent). */
  close() {
    this.#closed = true
    if (this.#native) this.#native.close()
  }
}

/** An async (and sync) iterator over the keys matching a pattern, page by page. */
class KeyIterator {
  #native
  #page = []
  #strings
  constructor(n, strings) {
    this.#native = n
    this.#strings = strings
  }
  async next() {
    while (this.#page.length === 0) {
      const page = await this.#native.nextPage()
      if (page === null) return { done: true, value: undefined }
      this.#page = page
    }
    const key = this.#page.shift()
    return { done: false, value: this.#strings ? decode(key) : key }
  }
  [Symbol.asyncIterator]() {
    return this
  }
  *[Symbol.iterator]() {
    for (;;) {
      while (this.#page.length === 0) {
        const page = this.#native.nextPage(SYNC)
        if (page === null) return
        this.#page = page
      }
      const key = this.#page.shift()
      yield this.#strings ? decode(key) : key
    }
  }
}

function lossEvents(n, strings) {
  return new Observation(n, strings)
}

/** A held lock. `release()` it; the fencing token protects writes made while holding it. */
class LockGuard {
  #native
  #strings
  constructor(n, strings) {
    this.#native = n
    this.#strings = strings
  }
  /** The fencing token of this holding: pass it to `set`/`delete` as `fencingToken`. */
  get fencingToken() {
    return this.#native.fencingToken
  }
  get isHeld() {
    return this.#native.isHeld
  }
  get holderName() {
    return this.#strings ? decode(this.#native.holderName) : this.#native.holderName
  }
  async release() {
    return this.#native.release()
  }
  releaseSync() {
    this.#native.release(SYNC)
  }
  async renew() {
    return this.#native.renew()
  }
  renewSync() {
    this.#native.renew(SYNC)
  }
  /** A stream with one `lost` event if the lock is lost while held. */
  lossEvents() {
    return lossEvents(this.#native.lossEvents(), this.#strings)
  }
  async [Symbol.asyncDispose]() {
    await this.release()
  }
}

function updateValue(value) {
  if (value === undefined || value === null) return null
  return args.bytes(value, 'the value returned by fn')
}

/** A named lock (mutual exclusion through a lease on one key). */
class Lock {
  #native
  #strings
  constructor(strings, client, name, options) {
    const { ttl, timeout, autoRenew } = args.options(options, 'options', ['ttl', 'timeout', 'autoRenew'])
    this.#native = new native.NativeLock(client, args.bytes(name, 'name'), args.duration(ttl, 'options.ttl', { required: true }),
      args.duration(timeout, 'options.timeout'), args.boolean(autoRenew, 'options.autoRenew'))
    this.#strings = strings
  }
  get name() {
    return this.#strings ? decode(this.#native.name) : this.#native.name
  }
  /** Waits until the lock is acquired (or its timeout; `options.signal` aborts): the guard. */
  async lock(options) {
    const s = signalOnly(options)
    return new LockGuard(await abortable(s, (call) => this.#native.lock(call)), this.#strings)
  }
  lockSync() {
    return new LockGuard(this.#native.lock(SYNC), this.#strings)
  }
  /** One attempt: the guard, or `null` if someone else holds the lock. */
  async tryLock(options) {
    const s = signalOnly(options)
    const g = await abortable(s, (call) => this.#native.tryLock(call))
    return g === null ? null : new LockGuard(g, this.#strings)
  }
  tryLockSync() {
    const g = this.#native.tryLock(SYNC)
    return g === null ? null : new LockGuard(g, this.#strings)
  }
  /** The current holder's name, or `null`. */
  async holder() {
    const h = await this.#native.holder()
    return this.#strings ? decode(h) : h
  }
  holderSync() {
    const h = this.#native.holder(SYNC)
    return this.#strings ? decode(h) : h
  }
  /**
   * Acquires the lock, reads `key`, calls `fn(oldValue)` (a Buffer or `null`; may return a
   * Promise), writes its result with the fencing token (`null`/`undefined`: deletes the key),
   * releases, and returns what was written. If `fn` throws, nothing is written.
   * `options.signal` aborts the wait for the lock, and the update before its write (once the
   * write is sent it completes).
   */
  async update(key, fn, options) {
    key = args.bytes(key, 'key')
    args.fn(fn, 'fn')
    const s = signalOnly(options)
    const txn = await abortable(s, (call) => this.#native.beginUpdate(key, call))
    let value
    try {
      const old = txn.oldValue
      let returned
      txn.enterCallback()
      try {
        returned = fn(this.#strings ? decode(old) : old)
      } finally {
        txn.exitCallback()
      }
      value = updateValue(await returned)
      if (s !== undefined && s.aborted) throw abortError(s)
    } catch (error) {
      await txn.abort().catch(() => {})
      throw error
    }
    const written = await txn.commit(value)
    return this.#strings ? decode(written) : written
  }
  /** `update` for a synchronous `fn`, blocking. */
  updateSync(key, fn) {
    key = args.bytes(key, 'key')
    args.fn(fn, 'fn')
    const txn = this.#native.beginUpdate(key, SYNC)
    let value
    try {
      const old = txn.oldValue
      txn.enterCallback()
      try {
        value = updateValue(fn(this.#strings ? decode(old) : old))
      } finally {
        txn.exitCallback()
      }
    } catch (error) {
      try {
        txn.abort(SYNC)
      } catch {}
      throw error
    }
    const written = txn.commit(value, SYNC)
    return this.#strings ? decode(written) : written
  }
}

function acquireResult(r, strings) {
  const out = { acquired: r.acquired, fencingToken: r.fencingToken ?? null, holder: r.holder ?? null }
  if (strings) out.holder = decode(out.holder)
  return out
}

/** A lease on one key under one holder name. */
class Lease {
  #native
  #strings
  constructor(strings, client, key, holder, options) {
    const { autoRenew } = args.options(options, 'options', ['autoRenew'])
    this.#native = new native.NativeLease(client, args.bytes(key, 'key'), args.bytes(holder, 'holder'), args.boolean(autoRenew, 'options.autoRenew') ?? false)
    this.#strings = strings
  }
  /** One attempt: `{ acquired, fencingToken, holder }`. */
  async tryAcquire(options) {
    const { ttl, signal } = args.options(options, 'options', ['ttl', 'signal'])
    const t = args.duration(ttl, 'options.ttl', { required: true })
    return acquireResult(await abortable(checkSignal(signal, 'options.signal'), (call) => this.#native.tryAcquire(t, call)), this.#strings)
  }
  tryAcquireSync(options) {
    const { ttl } = args.options(options, 'options', ['ttl'])
    return acquireResult(this.#native.tryAcquire(args.duration(ttl, 'options.ttl', { required: true }), SYNC), this.#strings)
  }
  /** Waits until acquired (or `options.timeout`; `options.signal` aborts): the fencing token. */
  async acquire(options) {
    const { ttl, timeout, signal } = args.options(options, 'options', ['ttl', 'timeout', 'signal'])
    const t = args.duration(ttl, 'options.ttl', { required: true })
    const limit = args.duration(timeout, 'options.timeout')
    return abortable(checkSignal(signal, 'options.signal'), (call) => this.#native.acquire(t, limit, call))
  }
  acquireSync(options) {
    const { ttl, timeout } = args.options(options, 'options', ['ttl', 'timeout'])
    return this.#native.acquire(args.duration(ttl, 'options.ttl', { required: true }), args.duration(timeout, 'options.timeout'), SYNC)
  }
  async renew() {
    return this.#native.renew()
  }
  renewSync() {
    this.#native.renew(SYNC)
  }
  /** Releases the lease if this holder has it: whether it did. */
  async release() {
    return this.#native.release()
  }
  releaseSync() {
    return this.#native.release(SYNC)
  }
  async holder() {
    const h = await this.#native.holder()
    return this.#strings ? decode(h) : h
  }
  holderSync() {
    const h = this.#native.holder(SYNC)
    return this.#strings ? decode(h) : h
  }
  get fencingToken() {
    return this.#native.fencingToken ?? null
  }
  get isHeld() {
    return this.#native.isHeld
  }
  /** `{ state: 'notHeld' | 'held' | 'lost', fencingToken, loss }`. */
  get state() {
    const s = this.#native.state
    return { state: s.state, fencingToken: s.fencingToken ?? null, loss: s.loss ?? null }
  }
  /**
   * Waits until the lease is not held: its loss, or `null` if released (or never held);
   * STATESTORE_TIMEOUT if still held after `options.timeout` ms.
   */
  async lost(options) {
    const { timeout, signal } = args.options(options, 'options', ['timeout', 'signal'])
    const limit = args.duration(timeout, 'options.timeout')
    return (await abortable(checkSignal(signal, 'options.signal'), (call) => this.#native.lost(limit, call))) ?? null
  }
  lostSync(options) {
    const { timeout } = args.options(options, 'options', ['timeout'])
    return this.#native.lost(args.duration(timeout, 'options.timeout'), SYNC) ?? null
  }
  lossEvents() {
    return lossEvents(this.#native.lossEvents(), this.#strings)
  }
}

/** Leader election among candidates. */
class Election {
  #native
  #strings
  constructor(strings, client, name, candidate, options) {
    const { ttl } = args.options(options, 'options', ['ttl'])
    this.#native = new native.NativeElection(client, args.bytes(name, 'name'), args.bytes(candidate, 'candidate'), args.duration(ttl, 'options.ttl', { required: true }))
    this.#strings = strings
  }
  /** Waits until elected (or `options.timeout`; `options.signal` aborts): the fencing token. */
  async campaign(options) {
    const { timeout, signal } = args.options(options, 'options', ['timeout', 'signal'])
    const limit = args.duration(timeout, 'options.timeout')
    return abortable(checkSignal(signal, 'options.signal'), (call) => this.#native.campaign(limit, call))
  }
  campaignSync(options) {
    const { timeout } = args.options(options, 'options', ['timeout'])
    return this.#native.campaign(args.duration(timeout, 'options.timeout'), SYNC)
  }
  async tryCampaign(options) {
    const s = signalOnly(options)
    return acquireResult(await abortable(s, (call) => this.#native.tryCampaign(call)), this.#strings)
  }
  tryCampaignSync() {
    return acquireResult(this.#native.tryCampaign(SYNC), this.#strings)
  }
  async resign() {
    return this.#native.resign()
  }
  resignSync() {
    this.#native.resign(SYNC)
  }
  async leader() {
    const h = await this.#native.leader()
    return this.#strings ? decode(h) : h
  }
  leaderSync() {
    const h = this.#native.leader(SYNC)
    return this.#strings ? decode(h) : h
  }
  /** Leadership changes: `elected` events (leader in `holder`) and `vacant` events. */
  observe() {
    return new Observation(this.#native.observe(), this.#strings)
  }
  observeSync() {
    return new Observation(this.#native.observe(SYNC), this.#strings)
  }
  get isLeader() {
    return this.#native.isLeader
  }
  get fencingToken() {
    return this.#native.fencingToken ?? null
  }
  lossEvents() {
    return lossEvents(this.#native.lossEvents(), this.#strings)
  }
}

const SET_OPTIONS = ['condition', 'expiry', 'fencingToken', 'persist', 'timeout']
const DELETE_OPTIONS = ['fencingToken', 'timeout']
// Core's table (SetCondition::NAMES); the package takes each condition's canonical name.
const CONDITIONS = native.setConditions().map((names) => names[0])
/** Promise methods also take `signal` (an AbortSignal); their Sync twins do not. */
const SET_OPTIONS_ASYNC = [...SET_OPTIONS, 'signal']
const DELETE_OPTIONS_ASYNC = [...DELETE_OPTIONS, 'signal']
const GET_OPTIONS_ASYNC = ['timeout', 'signal']

/** Lock options with a `signal` taken out: `[lockOptions, signal]` (the lock checks the rest). */
function splitSignal(options) {
  if (options === null || typeof options !== 'object' || !('signal' in options)) return [options, undefined]
  const { signal, ...rest } = options
  return [rest, signal]
}

/** The `signal` of an options object that holds nothing else (checked). */
function signalOnly(options) {
  return checkSignal(args.options(options, 'options', ['signal']).signal, 'options.signal')
}

/** The checked `signal` of options already checked by their own function. */
function signalOf(options) {
  return options === undefined || options === null ? undefined : checkSignal(options.signal, 'options.signal')
}

function setOptions(options, allowed = SET_OPTIONS) {
  if (options === undefined) return undefined
  const o = args.options(options, 'options', allowed)
  const condition = args.string(o.condition, 'options.condition')
  if (condition !== undefined && !CONDITIONS.includes(condition)) {
    const error = new TypeError(
      `The "options.condition" argument must be one of ${CONDITIONS.map((c) => `'${c}'`).join(', ')}. Received '${condition}'`
    )
    error.code = 'ERR_INVALID_ARG_VALUE'
    throw error
  }
  return {
    condition,
    expiry: args.duration(o.expiry, 'options.expiry'),
    fencingToken: args.token(o.fencingToken, 'options.fencingToken'),
    persist: args.boolean(o.persist, 'options.persist'),
    timeout: args.duration(o.timeout, 'options.timeout'),
  }
}

function deleteOptions(options, allowed = DELETE_OPTIONS) {
  if (options === undefined) return undefined
  const o = args.options(options, 'options', allowed)
  return {
    fencingToken: args.token(o.fencingToken, 'options.fencingToken'),
    timeout: args.duration(o.timeout, 'options.timeout'),
  }
}

function getTimeout(options, allowed = ['timeout']) {
  if (options === undefined) return undefined
  const o = args.options(options, 'options', allowed)
  return args.duration(o.timeout, 'options.timeout')
}

/**
 * Runs `start` (which returns a Promise), turning a synchronous throw (a bad argument) into a
 * rejection. Not an async function: the addon's Promise is returned as is (one Promise per
 * call on the hot path).
 */
function promised(start) {
  try {
    return start()
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * A state store client. Every operation is a Promise method with a blocking `…Sync` twin.
 * Create one with `Client.connect(options)`, `Client.fromEnv()` or their Sync twins.
 */
class Client {
  #native
  #strings

  /** @private use Client.connect / Client.connectSync */
  constructor(n, strings) {
    if (!(n instanceof native.NativeClient)) throw new TypeError('use Client.connect(), Client.connectSync() or Client.fromEnv() to create a client')
    this.#native = n
    this.#strings = strings
  }

  static async connect(options) {
    const s = settings(options, 'options')
    const strings = returnsStrings(options)
    return new Client(await native.NativeClient.connect(s, false), strings)
  }
  static connectSync(options) {
    const s = settings(options, 'options')
    const strings = returnsStrings(options)
    return new Client(native.NativeClient.connect(s, false, SYNC), strings)
  }
  /** Connects with the `AIO_*` environment of an Azure IoT Operations pod; `overrides` win. */
  static async fromEnv(overrides) {
    const s = settings(overrides, 'overrides')
    const strings = returnsStrings(overrides)
    return new Client(await native.NativeClient.connect(s, true), strings)
  }
  static fromEnvSync(overrides) {
    const s = settings(overrides, 'overrides')
    const strings = returnsStrings(overrides)
    return new Client(native.NativeClient.connect(s, true, SYNC), strings)
  }
  /** The in-process local state store on a free port (see `statestore/testing`). */
  static startLocalServer(options) {
    return require('./testing.js').startLocalServer(options)
  }
  static startLocalServerSync(options) {
    return require('./testing.js').startLocalServerSync(options)
  }

  get clientId() {
    return this.#native.clientId
  }
  get isClosed() {
    return this.#native.isClosed
  }

  /** Sets `key` to `value`: `{ applied, version }`. */
  set(key, value, options) {
    return promised(() => {
      const [k, v, o] = [args.bytes(key, 'key'), args.bytes(value, 'value'), setOptions(options, SET_OPTIONS_ASYNC)]
      return abortable(signalOf(options), (call) => this.#native.set(k, v, o, call))
    })
  }
  setSync(key, value, options) {
    return this.#native.set(args.bytes(key, 'key'), args.bytes(value, 'value'), setOptions(options), SYNC)
  }

  /** `{ value, version }` or `null` when the key does not exist. */
  get(key, options) {
    return promised(() => {
      const [k, timeout] = [args.bytes(key, 'key'), getTimeout(options, GET_OPTIONS_ASYNC)]
      const pending = abortable(signalOf(options), (call) => this.#native.get(k, timeout, call))
      return this.#strings ? pending.then((r) => this.#value(r)) : pending
    })
  }
  getSync(key, options) {
    return this.#value(this.#native.get(args.bytes(key, 'key'), getTimeout(options), SYNC))
  }
  #value(r) {
    if (r === null || r === undefined) return null
    if (!this.#strings) return r
    return { value: decode(r.value), version: r.version ?? null }
  }

  /** Deletes `key`: `{ deleted, outcome, version }`. */
  delete(key, options) {
    return this.#delete(key, undefined, options)
  }
  deleteSync(key, options) {
    return this.#native.delete(args.bytes(key, 'key'), undefined, deleteOptions(options), SYNC)
  }
  /** Deletes `key` only if it holds `value`. */
  vdel(key, value, options) {
    return promised(() => this.#delete(key, args.bytes(value, 'value'), options))
  }
  vdelSync(key, value, options) {
    return this.#native.delete(args.bytes(key, 'key'), args.bytes(value, 'value'), deleteOptions(options), SYNC)
  }
  #delete(key, value, options) {
    return promised(() => {
      const [k, o] = [args.bytes(key, 'key'), deleteOptions(options, DELETE_OPTIONS_ASYNC)]
      return abortable(signalOf(options), (call) => this.#native.delete(k, value, o, call))
    })
  }

  /** Notifications of `key`: iterate with `for await`, or listen with `on('set', ...)`. */
  observe(key) {
    return new Observation(this.#native.observe(args.bytes(key, 'key')), this.#strings)
  }
  observeSync(key) {
    return new Observation(this.#native.observe(args.bytes(key, 'key'), SYNC), this.#strings)
  }
  /** Ends every observation of `key` on this client. */
  async unobserve(key) {
    return this.#native.unobserve(args.bytes(key, 'key'))
  }
  unobserveSync(key) {
    this.#native.unobserve(args.bytes(key, 'key'), SYNC)
  }

  /**
   * The keys matching a glob `pattern` (`user:*`, `sspat[!0-9]`; the service's dialect, no
   * backslash escape), fetched lazily page by page.
   */
  keys(pattern) {
    return new KeyIterator(this.#native.keys(args.bytes(pattern, 'pattern')), this.#strings)
  }
  /** Same as `keys`; iterate it with `for ... of` (blocking). */
  keysSync(pattern) {
    return this.keys(pattern)
  }

  /** A lease on `key` held under the name `holder`. */
  lease(key, holder, options) {
    return new Lease(this.#strings, this.#native, key, holder, options)
  }
  /** A lock object (`lock`, `tryLock`, `update`, `holder`). */
  createLock(name, options) {
    return new Lock(this.#strings, this.#native, name, options)
  }
  /** Waits for the lock `name` (`options.signal` aborts the wait): the guard (`fencingToken`, `release()`). */
  async lock(name, options) {
    const [lockOptions, signal] = splitSignal(options)
    return this.createLock(name, lockOptions).lock({ signal })
  }
  lockSync(name, options) {
    return this.createLock(name, options).lockSync()
  }
  /** One attempt at the lock `name`: the guard or `null`. */
  async tryLock(name, options) {
    const [lockOptions, signal] = splitSignal(options)
    return this.createLock(name, lockOptions).tryLock({ signal })
  }
  tryLockSync(name, options) {
    return this.createLock(name, options).tryLockSync()
  }
  /** Leader election `name` as `candidate`. */
  election(name, candidate, options) {
    return new Election(this.#strings, this.#native, name, candidate, options)
  }

  /** Closes the client: calls in flight fail with STATESTORE_CLOSED, observations end. */
  async close() {
    return this.#native.close()
  }
  closeSync() {
    this.#native.close(SYNC)
  }
}

module.exports = {
  /** The library's version, e.g. `'0.1.0'` (the same in every language). */
  version: native.version(),
  setLogHandler: require('./logs.js').setLogHandler,
  Client,
  Observation,
  KeyIterator,
  Lock,
  LockGuard,
  Lease,
  Election,
  ErrorCodes,
  ERROR_TABLE,
  CONNECT_OPTIONS: CONNECT_OPTION_TABLE,
  compareVersions,
}
