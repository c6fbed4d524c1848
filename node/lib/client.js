'use strict'
// The public API: each class wraps an addon class, whose operations call.js makes Promise
// methods and `…Sync` twins; the iterators and events JavaScript users expect are written
// here. Behaviour, and the checks of arguments, live in the addon and core (Rust).
const { EventEmitter } = require('node:events')
const native = require('./native.js')
const testing = require('./testing.js')
const { SYNC, Wrapper, nativeOf, abortable, backs, backing, abortError, drive, describe } = require('./call.js')

const EVENT_KINDS = native.vocabulary().find((list) => list.name === 'event_kind').words

/** Core's error table: `ErrorCodes.TIMEOUT === 'STATESTORE_TIMEOUT'`, and details by code. */
const ERROR_TABLE = native.errorCodes()
const ErrorCodes = Object.freeze(Object.fromEntries(ERROR_TABLE.map((e) => [e.name, 'STATESTORE_' + e.name])))

/** Core's connection settings: name, jsName, kind, env, default, doc of each. */
const CONNECT_OPTIONS = Object.freeze(native.connectOptions().map((o) => Object.freeze({ ...o, env: o.env ?? null })))

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
    if (!this.#native) throw new Error('nextSync: this observation was opened with observe(); use observeSync() to iterate synchronously')
    return this.#native.nextSync(options)
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
  constructor(n) {
    this.#native = n
  }
  async next() {
    const key = await this.#native.next(undefined)
    return key === null ? done() : { done: false, value: key }
  }
  [Symbol.asyncIterator]() {
    return this
  }
  *[Symbol.iterator]() {
    for (let key; (key = this.#native.next(SYNC)) !== null; ) yield key
  }
}
backs('KeyIterator', { next: ['NativeKeys.next'] })

const wrap = (Class) => (n) => new Class(n)

/** A held lock. `release()` it; the fencing token protects writes made while holding it. */
class LockGuard extends Wrapper {
  async [Symbol.asyncDispose]() {
    await this.release()
  }
}
const LOSS_EVENTS = { lossEvents: observation }
Wrapper.define(LockGuard, {
  native: 'NativeGuard',
  made: 'client.lock() or lock.lock()',
  getters: ['name', 'holderName', 'isHeld', 'fencingToken'],
  plain: LOSS_EVENTS,
})

/**
 * `lock.update(key, fn, options)`: acquires the lock, reads `key`, calls `fn(oldValue)` (which
 * may return a Promise), writes its result with the fencing token (`null`/`undefined`: deletes
 * the key), releases, and returns what was written. If `fn` throws, nothing is written.
 */
function* update(lock, call, sync, signal, key, fn, options) {
  const txn = yield lock.beginUpdate(call, key, fn, options)
  // The signal aborts the wait for the lock and the update until its write: once sent, the
  // write (or the release after a failure) completes.
  const then = sync ? SYNC : undefined
  try {
    txn.enterCallback()
    let value
    try {
      value = fn(txn.oldValue)
    } finally {
      txn.exitCallback()
    }
    value = yield value
    if (signal?.aborted) throw abortError(signal)
    // The addon checks the value before it writes (a TypeError: nothing written).
    return yield txn.commit(then, value)
  } catch (error) {
    try {
      yield txn.abort(then)
    } catch {}
    throw error
  }
}

/** A named lock (mutual exclusion through a lease on one key). */
class Lock extends Wrapper {
  update(key, fn, options) {
    const signal = options?.signal
    const run = (call) => drive(update(nativeOf(this), call, false, signal, key, fn, options), false)
    return signal === undefined ? run(undefined) : abortable(signal, run)
  }

  updateSync(key, fn, options) {
    return drive(update(nativeOf(this), SYNC, true, undefined, key, fn, options), true)
  }
}
const guard = (n) => (n === null ? null : new LockGuard(n))
const GUARDS = { lock: guard, tryLock: guard }
Wrapper.define(Lock, { native: 'NativeLock', made: 'client.createLock()', getters: ['name', 'ttl'], results: GUARDS, hidden: ['beginUpdate'] })
const UPDATE = ['NativeLock.beginUpdate', 'NativeUpdate.oldValue', 'NativeUpdate.enterCallback', 'NativeUpdate.exitCallback', 'NativeUpdate.commit', 'NativeUpdate.abort']
backs('Lock', { update: UPDATE, updateSync: UPDATE })

/** A lease on one key under one holder name. */
class Lease extends Wrapper {}
Wrapper.define(Lease, {
  native: 'NativeLease',
  made: 'client.lease()',
  getters: ['key', 'holderName', 'isHeld', 'fencingToken', 'state'],
  plain: LOSS_EVENTS,
})

/** Leader election among candidates. */
class Election extends Wrapper {}
Wrapper.define(Election, {
  native: 'NativeElection',
  made: 'client.election()',
  getters: ['name', 'candidate', 'isLeader', 'fencingToken'],
  plain: LOSS_EVENTS,
  results: { observe: observation },
  lazy: ['observe'],
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

  /** The same iterator as `keys`: its pages are fetched as the iteration goes, in either flavour. */
  keysSync(pattern) {
    return this.keys(pattern)
  }

  async [Symbol.asyncDispose]() {
    await this.close()
  }
}

function connectionListener(method, name, listener) {
  if (name !== CONNECTION_STATE) throw new TypeError(`${method}: a client emits '${CONNECTION_STATE}' events only, not ${JSON.stringify(name)}`)
  if (typeof listener !== 'function') {
    throw Object.assign(new TypeError(`The "listener" argument must be of type function. Received type ${typeof listener}`), { code: 'ERR_INVALID_ARG_TYPE' })
  }
}
backs('Client', { on: ['NativeClient.connectionEvents', 'NativeEvents.setSink'], off: ['NativeClient.connectionEvents'] })
Wrapper.define(Client, {
  native: 'NativeClient',
  made: 'Client.connect(), Client.connectSync() or Client.fromEnv()',
  getters: ['clientId', 'isClosed', 'connectionState'],
  plain: { keys: wrap(KeyIterator), lease: wrap(Lease), createLock: wrap(Lock), election: wrap(Election), connectionEvents: observation },
  results: { ...GUARDS, observe: observation },
  // The Observation comes at once, so that listeners can be added while it registers.
  lazy: ['observe'],
  statics: { results: { connect: opened, fromEnv: opened } },
})
backs('Client', { keysSync: ['NativeClient.keys'] })
for (const name of ['connect', 'connectSync', 'fromEnv', 'fromEnvSync']) backs('Client', { [name]: [...backing.get(`Client.${name}`), 'closeAtExit'] })
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
  /** Orders two versions (or fencing tokens) as the service does, by core: -1, 0 or 1. */
  compareVersions: native.compareVersions,
}
