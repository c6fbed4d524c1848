'use strict'
// The public API: each class is a table of the addon calls it makes (see call.js), from which
// every Promise method and its `…Sync` twin are made; the iterators and events JavaScript
// users expect are written here. Behaviour, and the checks of values, live in core (Rust).
const { EventEmitter } = require('node:events')
const native = require('./native.js')
const args = require('./args.js')
const testing = require('./testing.js')
const { SYNC, Wrapper, functions, backs, backing, abortError, drive, describe } = require('./call.js')

const EVENT_KINDS = native.vocabulary().find((list) => list.name === 'event_kind').words

/** Core's error table: `ErrorCodes.TIMEOUT === 'STATESTORE_TIMEOUT'`, and details by code. */
const ERROR_TABLE = native.errorCodes()
const ErrorCodes = Object.freeze(Object.fromEntries(ERROR_TABLE.map((e) => [e.name, 'STATESTORE_' + e.name])))

/** Core's connection settings: name, jsName, kind, env, default, doc of each. */
const CONNECT_OPTIONS = Object.freeze(native.connectOptions().map((o) => Object.freeze({ ...o, env: o.env ?? null })))
const KINDS = { bool: args.boolean, str: args.string, path: args.string, duration: args.duration }
const SETTINGS = Object.fromEntries(CONNECT_OPTIONS.map((o) => [o.jsName, KINDS[o.kind] ?? args.numeric]))

/** Connection settings as the addon takes them, `[{ name, value }]`, from the options `name`. */
function settings(name) {
  const convert = args.fields({ ...SETTINGS, returnStrings: args.boolean }, { name })
  return (given) => Object.entries(convert(given) ?? {}).flatMap(([key, value]) => (value === undefined ? [] : [{ name: key, value }]))
}

/**
 * Orders two versions (or fencing tokens) as the service does, by core: -1, 0 or 1. Versions
 * are strings in the padded form `wallMs:counter:node`, so plain string order agrees except
 * across node ids.
 */
function compareVersions(a, b) {
  return native.compareVersions(args.version(a, 'a'), args.version(b, 'b'))
}

const done = () => ({ done: true, value: undefined })

/**
 * A stream of events: async and blocking iterators over the addon's stream, and an
 * EventEmitter. The first listener of an event kind switches the stream to push mode (the
 * addon then calls back for every event), after which the iterators get nothing new.
 */
class Observation extends EventEmitter {
  #native = null
  #opening
  #pushing = false
  #closed = false

  // `opening`: the addon's stream, or (observe()) a Promise of it, settled once registered.
  constructor(opening) {
    super()
    if (typeof opening?.then === 'function') {
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
    else if (this.#pushing) this.#sink()
  }

  #sink() {
    this.#native.setSink((e) => {
      this.emit(e.kind, e)
      this.emit('event', e)
    })
  }

  #push() {
    if (this.#pushing) return
    this.#pushing = true
    if (this.#native) this.#sink()
  }

  get ready() {
    return this.#opening
  }

  get closed() {
    return this.#closed || (this.#native !== null && this.#native.isClosed)
  }

  async next() {
    await this.#opening
    const e = await this.#native.next()
    return e === null ? done() : { done: false, value: e }
  }

  // A `for await` loop left early ends the stream.
  async return() {
    this.close()
    return done()
  }

  [Symbol.asyncIterator]() {
    return this
  }

  nextSync(options) {
    const { timeout } = args.options(options, 'options', ['timeout'])
    if (!this.#native) throw new Error('nextSync: this observation was opened with observe(); use observeSync() to iterate synchronously')
    return this.#native.nextSync(args.duration(timeout, 'options.timeout'))
  }

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

  close() {
    this.#closed = true
    if (this.#native) this.#native.close()
  }

  [Symbol.dispose]() {
    this.close()
  }
}
describe(Observation, ['closed'])
const EVENTS = ['NativeEvents.setSink']
backs('Observation', { next: ['NativeEvents.next'], nextSync: ['NativeEvents.nextSync'], closed: ['NativeEvents.isClosed'], close: ['NativeEvents.close'], on: EVENTS, once: EVENTS, addListener: EVENTS })
const observation = (n) => new Observation(n)

/** An async (and sync) iterator over the keys matching a pattern, fetched a page at a time. */
class KeyIterator {
  #native
  #page = []
  constructor(n) {
    this.#native = n
  }
  // The next key, or null past the last, in either flavour (see `drive`).
  *#key(call) {
    while (this.#page.length === 0) {
      const page = yield this.#native.nextPage(call)
      if (page === null) return null
      this.#page = page
    }
    return this.#page.shift()
  }
  async next() {
    const key = await drive(this.#key(), false)
    return key === null ? done() : { done: false, value: key }
  }
  [Symbol.asyncIterator]() {
    return this
  }
  *[Symbol.iterator]() {
    for (let key; (key = drive(this.#key(SYNC), true)) !== null; ) yield key
  }
}
backs('KeyIterator', { next: ['NativeKeys.nextPage'] })

const KEY = args.param(args.bytes, 'key')
const NAME = args.param(args.bytes, 'name')
const LOCK = args.fields({ ttl: args.ttl, timeout: args.duration, autoRenew: args.boolean }, { spread: true })
const TTL = args.fields({ ttl: args.ttl }, { spread: true })
const TIMEOUT = args.fields({ timeout: args.duration }, { spread: true })
const wrap = (Class) => (n) => new Class(n)

/** A held lock. `release()` it; the fencing token protects writes made while holding it. */
class LockGuard extends Wrapper {
  async [Symbol.asyncDispose]() {
    await this.release()
  }
}
Wrapper.define(LockGuard, {
  native: 'NativeGuard',
  made: 'client.lock() or lock.lock()',
  getters: ['name', 'holderName', 'isHeld', 'fencingToken'],
  twins: { release: {}, renew: {}, lost: { args: [TIMEOUT], signal: true } },
  methods: { lossEvents: { result: observation } },
})
const guard = (n) => (n === null ? null : new LockGuard(n))

/**
 * `lock.update(key, fn)`: acquires the lock, reads `key`, calls `fn(oldValue)` (which may
 * return a Promise), writes its result with the fencing token (`null`/`undefined`: deletes the
 * key), releases, and returns what was written. If `fn` throws, nothing is written.
 */
function* update(lock, { call, sync, signal }, key, fn) {
  const txn = yield lock.beginUpdate(key, call)
  // The signal aborts the wait for the lock and the update until its write: once sent, the
  // write (or the release after a failure) completes.
  const then = sync ? SYNC : undefined
  let value
  try {
    txn.enterCallback()
    try {
      value = fn(txn.oldValue)
    } finally {
      txn.exitCallback()
    }
    value = yield value
    value = value === undefined || value === null ? null : args.bytes(value, 'the value returned by fn')
    if (signal?.aborted) throw abortError(signal)
  } catch (error) {
    try {
      yield txn.abort(then)
    } catch {}
    throw error
  }
  return yield txn.commit(value, then)
}
const UPDATE = ['NativeLock.beginUpdate', 'NativeUpdate.oldValue', 'NativeUpdate.enterCallback', 'NativeUpdate.exitCallback', 'NativeUpdate.commit', 'NativeUpdate.abort']


/** A named lock (mutual exclusion through a lease on one key). */
class Lock extends Wrapper {}
Wrapper.define(Lock, {
  native: 'NativeLock',
  made: 'client.createLock()',
  getters: ['name', 'ttl'],
  twins: {
    lock: { signal: true, result: guard },
    tryLock: { signal: true, result: guard },
    holder: {},
    update: { args: [KEY, args.param(args.fn, 'fn')], signal: true, steps: update, uses: UPDATE },
  },
})

/** A lease on one key under one holder name. */
class Lease extends Wrapper {}
Wrapper.define(Lease, {
  native: 'NativeLease',
  made: 'client.lease()',
  getters: ['key', 'holderName', 'isHeld', 'fencingToken', 'state'],
  twins: {
    tryAcquire: { args: [TTL], signal: true },
    acquire: { args: [args.fields({ ttl: args.ttl, timeout: args.duration }, { spread: true })], signal: true },
    renew: {},
    release: {},
    holder: {},
    lost: { args: [TIMEOUT], signal: true },
  },
  methods: { lossEvents: { result: observation } },
})

/** Leader election among candidates. */
class Election extends Wrapper {}
Wrapper.define(Election, {
  native: 'NativeElection',
  made: 'client.election()',
  getters: ['name', 'candidate', 'isLeader', 'fencingToken'],
  twins: {
    campaign: { args: [TIMEOUT], signal: true },
    tryCampaign: { signal: true },
    resign: {},
    leader: {},
    observe: { lazy: true, result: observation },
    lost: { args: [TIMEOUT], signal: true },
  },
  methods: { lossEvents: { result: observation } },
})

/**
 * A client of this thread's: the first one also makes `process.exit()` (and the end of the
 * program) close the clients still open and wait for them, at most a second, so that each
 * ends its session as `close()` does (no thread of the library runs after `exit`). That
 * listener moves behind each `exit` listener added after it (once the code adding it has
 * run: Node tells of a listener before adding it), so that the program's own find their
 * clients open.
 */
let closesAtExit = false
const closeAtExit = () => native.closeAtExit()
function lastAtExit() {
  process.removeListener('exit', closeAtExit)
  process.on('exit', closeAtExit)
}
function opened(n) {
  if (!closesAtExit) {
    closesAtExit = true
    process.on('exit', closeAtExit)
    process.on('newListener', (event, listener) => {
      if (event === 'exit' && listener !== closeAtExit) queueMicrotask(lastAtExit)
    })
  }
  return new Client(n)
}

const VALUE = args.param(args.bytes, 'value')
const SET = args.fields({ condition: args.string, expiry: args.duration, fencingToken: args.token, persist: args.boolean, timeout: args.duration })
const DELETE = args.fields({ fencingToken: args.token, timeout: args.duration })
const KEYS = { native: 'keys', args: [args.param(args.bytes, 'pattern')], result: wrap(KeyIterator) }

const CONNECTION_STATE = 'connectionState'

/**
 * A state store client. Every operation is a Promise method with a blocking `…Sync` twin.
 * Create one with `Client.connect(options)`, `Client.fromEnv()` or their Sync twins.
 */
class Client extends Wrapper {
  // The connection events that `on('connectionState')` listeners share, opened by the first.
  #connection = null

  /**
   * `on('connectionState', listener)`: `listener(event)` for every change of the connection's
   * state. Listening keeps the process alive until the client is closed, no longer.
   */
  on(name, listener) {
    connectionListener('on', name, listener)
    this.#connection ??= this.connectionEvents()
    this.#connection.on('connection', listener)
    return this
  }

  off(name, listener) {
    connectionListener('off', name, listener)
    this.#connection?.off('connection', listener)
    return this
  }

  async [Symbol.asyncDispose]() {
    await this.close()
  }
}

function connectionListener(method, name, listener) {
  if (name !== CONNECTION_STATE) throw new TypeError(`${method}: a client emits '${CONNECTION_STATE}' events only, not ${JSON.stringify(name)}`)
  args.fn(listener, 'listener')
}
backs('Client', { on: ['NativeClient.connectionEvents', 'NativeEvents.setSink'], off: ['NativeClient.connectionEvents'] })
Wrapper.define(Client, {
  native: 'NativeClient',
  made: 'Client.connect(), Client.connectSync() or Client.fromEnv()',
  getters: ['clientId', 'isClosed', 'connectionState'],
  twins: {
    set: { args: [KEY, VALUE, SET], signal: true },
    get: { args: [KEY, TIMEOUT], signal: true },
    delete: { args: [KEY, DELETE], signal: true },
    vdel: { args: [KEY, VALUE, DELETE], signal: true },
    getMany: { args: [args.keys('keys'), TIMEOUT], signal: true },
    setMany: { args: [args.pairs('items'), SET], signal: true },
    deleteMany: { args: [args.keys('keys'), DELETE], signal: true },
    // The Observation comes at once, so that listeners can be added while it registers.
    observe: { args: [KEY], lazy: true, result: observation },
    unobserve: { args: [KEY] },
    lock: { construct: 'NativeLock', native: 'lock', args: [NAME, LOCK], signal: true, result: guard },
    tryLock: { construct: 'NativeLock', native: 'tryLock', args: [NAME, LOCK], signal: true, result: guard },
    close: {},
  },
  methods: {
    // Pages are fetched as the iteration goes, in either flavour.
    keys: KEYS,
    keysSync: KEYS,
    lease: { construct: 'NativeLease', args: [KEY, args.param(args.bytes, 'holder'), args.fields({ autoRenew: args.boolean }, { spread: true })], result: wrap(Lease) },
    createLock: { construct: 'NativeLock', args: [NAME, LOCK], result: wrap(Lock) },
    election: { construct: 'NativeElection', args: [NAME, args.param(args.bytes, 'candidate'), TTL], result: wrap(Election) },
    connectionEvents: { result: observation },
  },
})
/**
 * `connect(options)`, or `connect(url, options)`: a connection URL whose settings `options`
 * then override (core parses the URL).
 */
function* connect(Native, { call }, target, overrides) {
  if (target.url === undefined) {
    if (overrides.length > 0) throw args.typeError('options', 'undefined after an options object (a URL comes first)', overrides)
    return yield Native.connect(target.settings, call)
  }
  return yield Native.fromUrl(target.url, overrides, call)
}
const CONNECT_TARGET = (value) => (typeof value === 'string' ? { url: args.string(value, 'url') } : { settings: settings('options')(value) })

functions(Client, 'Client', {
  native: 'NativeClient',
  twins: {
    connect: { args: [CONNECT_TARGET, settings('options')], steps: connect, uses: ['NativeClient.connect', 'NativeClient.fromUrl', 'closeAtExit'], result: opened },
    fromEnv: { args: [settings('overrides')], uses: ['closeAtExit'], result: opened },
  },
})
for (const name of ['startLocalServer', 'startLocalServerSync']) {
  Object.defineProperty(Client, name, { configurable: true, writable: true, value: testing[name] })
  backs('Client', { [name]: backing.get(name) })
}

backs('', { version: ['version'], compareVersions: ['compareVersions'], ErrorCodes: ['errorCodes'], ERROR_TABLE: ['errorCodes'], CONNECT_OPTIONS: ['connectOptions'] })
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
  CONNECT_OPTIONS,
  compareVersions,
}
