'use strict'
// How the package calls the addon. Each class is a table of operations (`Wrapper.define`),
// from which every Promise method and its blocking `…Sync` twin are made. A native operation
// takes a NativeCall last: nothing (a Promise), SYNC (the result itself, the thread blocked),
// or one per call that an AbortSignal cancels.
const { inspect } = require('node:util')
const native = require('./native.js')
const args = require('./args.js')

/** Passed last to a native operation: block the JavaScript thread until its result. */
const SYNC = new native.NativeCall(true)

/** Node's AbortError convention (fs/promises, fetch): `name`, `code`, the reason as `cause`. */
function abortError(signal) {
  const error = new Error('The operation was aborted', { cause: signal.reason })
  error.name = 'AbortError'
  error.code = 'ABORT_ERR'
  return error
}

/** `options.signal`: undefined or an AbortSignal (as Node's validateAbortSignal checks it). */
function checkSignal(value) {
  if (value === undefined) return undefined
  if (value === null || typeof value !== 'object' || !('aborted' in value) || typeof value.addEventListener !== 'function') {
    throw args.typeError('options.signal', 'an instance of AbortSignal', value)
  }
  return value
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
 * Starts `start(call)` (a native operation returning a Promise) so that `signal` can cancel
 * it: already aborted, it rejects at once without starting; aborted later, the call is
 * cancelled in core and the Promise rejects with an AbortError. The listener is removed as
 * soon as the call settles, so one signal can serve any number of calls.
 */
function abortable(signal, start) {
  if (signal === undefined) return start(undefined)
  if (signal.aborted) return Promise.reject(abortError(signal))
  const call = new native.NativeCall(false)
  const onAbort = () => call.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  const settled = () => signal.removeEventListener('abort', onAbort)
  return promised(() => start(call)).then(
    (value) => {
      settled()
      return value
    },
    (error) => {
      settled()
      throw signal.aborted && error?.code === 'STATESTORE_CANCELLED' ? abortError(signal) : error
    },
  )
}

/**
 * Runs the generator `steps`, whose `yield`s wait for a value: `sync`, the value is given back
 * as it is (its native calls blocked already); otherwise it is awaited, and the run is a
 * Promise. So an operation of several calls is written once for both flavours.
 */
function drive(steps, sync) {
  const resume = (method, value) => {
    const step = steps[method](value)
    if (step.done) return step.value
    return sync ? resume('next', step.value) : Promise.resolve(step.value).then((v) => resume('next', v), (e) => resume('throw', e))
  }
  return sync ? resume('next') : promised(() => Promise.resolve(resume('next')))
}

/** The addon members behind each public member (`Client.set`: `NativeClient.set`), for typecheck/backing.mjs. */
const backing = new Map()

function backs(owner, members) {
  for (const [member, natives] of Object.entries(members)) backing.set(owner ? `${owner}.${member}` : member, natives)
}

const NO_OPTIONS = args.fields({}, { spread: true })
const SIGNAL = ['signal']
const NONE = []

/**
 * One entry of a table (see `Wrapper.define`): `make(flavour, target)` is the public function
 * for `flavour` ('promise', 'sync', or 'plain': a call that answers at once), calling the
 * addon on `target(this)` (the wrapped addon object, or an addon class); `natives` are the
 * addon members it calls.
 *
 * An entry that is one addon call (no `construct`, `steps`, `result`, one member) gets a
 * function that calls the addon itself: no frame in between, so that an error's stack (which
 * the engine walks as the error is made) stays short, and no closure per call.
 */
function operation(owner, key, { native: member, construct, args: converters = [], signal, result, lazy, steps, uses = [] }) {
  const members = [].concat(member ?? (steps || construct ? [] : key))
  const natives = [...(construct ? [construct] : []), ...members.map((m) => `${construct ?? owner}.${m}`), ...uses]
  // A Promise method with a signal reads it from its options, given or (with none) added.
  const at = !signal ? -1 : converters.at(-1)?.options ? converters.length - 1 : converters.length
  const withSignal = at === converters.length ? [...converters, NO_OPTIONS] : converters

  const convert = (given, promise) => {
    const checks = promise ? withSignal : converters
    const values = []
    for (let i = 0; i < checks.length; i++) {
      const value = checks[i](given[i], promise && i === at ? SIGNAL : NONE)
      if (checks[i].spread) values.push(...value)
      else values.push(value)
    }
    return values
  }

  if (!construct && !steps && !result && members.length === 1) {
    const [name] = members
    const make = (flavour, target) => {
      if (flavour === 'sync') return function (...given) { return target(this)[name](...convert(given, false), SYNC) }
      if (flavour === 'plain') return function (...given) { return target(this)[name](...convert(given, false)) }
      return function (...given) {
        try {
          const values = convert(given, true)
          const aborts = at >= 0 ? checkSignal(given[at]?.signal) : undefined
          const addon = target(this)
          if (aborts === undefined) return addon[name](...values, undefined)
          return abortable(aborts, (call) => addon[name](...values, call))
        } catch (error) {
          return Promise.reject(error)
        }
      }
    }
    return { natives, make }
  }

  // `call`: the NativeCall, if any (none for a method that answers at once).
  const invoke = (target, values, ...call) => {
    if (construct) [target, values] = [new native[construct](target, ...values), []]
    if (members.length === 0) return target
    // An addon with a member per flavour takes no NativeCall.
    if (members.length === 2) return target[members[call[0] === SYNC ? 1 : 0]](...values)
    return target[members[0]](...values, ...call)
  }

  const run = (target, given, flavour) => {
    const promise = flavour === 'promise'
    const values = convert(given, promise)
    const aborts = promise && at >= 0 ? checkSignal(given[at]?.signal) : undefined
    const start = (...call) => (steps ? drive(steps(target, { call: call[0], sync: !promise, signal: aborts }, ...values), !promise) : invoke(target, values, ...call))
    const finish = result ?? ((value) => value)
    if (flavour === 'plain') return finish(start())
    if (flavour === 'sync') return finish(start(SYNC))
    const pending = abortable(aborts, start)
    return lazy ? finish(pending) : result ? pending.then(finish) : pending
  }
  const make = (flavour, target) =>
    flavour === 'promise' && !lazy
      ? function (...given) {
          return promised(() => run(target(this), given, flavour))
        }
      : function (...given) {
          return run(target(this), given, flavour)
        }
  return { natives, make }
}

/**
 * Puts on `into` each twin as `name` and `nameSync`, and each method, over the addon object
 * `target(this)` gives; `label` names them in `backing`.
 */
function attach(into, label, owner, { twins = {}, methods = {} }, target) {
  // A module's functions are enumerable, as its other exports; a class's members are not.
  const enumerable = Object.getPrototypeOf(into) === Object.prototype
  const put = (key, op, flavour) => {
    const value = Object.defineProperty(op.make(flavour, target), 'name', { value: key })
    Object.defineProperty(into, key, { configurable: true, writable: true, enumerable, value })
  }
  for (const [key, entry] of Object.entries(twins)) {
    const op = operation(owner, key, entry)
    backs(label, { [key]: op.natives, [`${key}Sync`]: op.natives })
    put(key, op, 'promise')
    put(`${key}Sync`, op, 'sync')
  }
  for (const [key, entry] of Object.entries(methods)) {
    const op = operation(owner, key, entry)
    backs(label, { [key]: op.natives })
    put(key, op, 'plain')
  }
}

/** Twins over the static members of the addon class `native`, put on `into` (a class, or a module's exports). */
function functions(into, label, { native: name, addon = () => native, twins }) {
  attach(into, label, name, { twins }, () => addon()[name])
}

/** The addon class behind each class made by `Wrapper.define`, and how users get one. */
const wrapped = new WeakMap()
let nativeOf // a Wrapper's addon object, for the members `define` makes

/** The base of the public classes over one addon object (`Client` over `NativeClient`). */
class Wrapper {
  #native

  static {
    nativeOf = (wrapper) => wrapper.#native
  }

  constructor(n) {
    const { Native, made } = wrapped.get(new.target)
    if (!(n instanceof Native())) throw new TypeError(`use ${made} to create a ${new.target.name}`)
    this.#native = n
  }

  /**
   * Writes the members of `cls` (a subclass) from its table. `native`: the addon class it
   * wraps (in `addon()`, the client's addon unless said); `made`: how users get one;
   * `getters`: the addon's getters it shows as they are (`secrets`: ones `inspect` leaves
   * out); `twins`: operations, each a Promise
   * method `name` and its blocking `nameSync`; `methods`: calls that answer at once. An
   * operation's entry (every field optional):
   * - `native`: the addon member it calls (default: its own name); two names when the addon
   *   has one per flavour and takes no NativeCall;
   * - `construct`: an addon class built first, from the wrapped object and the arguments;
   * - `args`: a conversion per parameter (args.js);
   * - `signal`: the Promise method takes `options.signal` (an AbortSignal) as well;
   * - `result`: what the caller gets from the addon's result (a wrapper object);
   * - `lazy`: the Promise method gives `result(promise)` at once (an Observation);
   * - `steps`: a generator (see `drive`) for an operation of several calls, which `uses`
   *   lists.
   */
  static define(cls, { native: name, made, getters = [], secrets = [], twins = {}, methods = {}, addon = () => native }) {
    wrapped.set(cls, { Native: () => addon()[name], made })
    for (const key of [...getters, ...secrets]) {
      backs(cls.name, { [key]: [`${name}.${key}`] })
      Object.defineProperty(cls.prototype, key, {
        configurable: true,
        get() {
          return nativeOf(this)[key]
        },
      })
    }
    attach(cls.prototype, cls.name, name, { twins, methods }, nativeOf)
    describe(cls, getters)
  }
}

/** `console.log(obj)` and `util.inspect(obj)` of a `cls`: its class and `getters` as they are now. */
function describe(cls, getters) {
  Object.defineProperty(cls.prototype, inspect.custom, {
    configurable: true,
    value(depth, options, show = inspect) {
      if (depth < 0) return options.stylize(`[${cls.name}]`, 'special')
      const values = {}
      for (const key of getters) {
        try {
          values[key] = this[key]
        } catch (error) {
          values[key] = `<${error?.message ?? error}>` // inspecting must not throw
        }
      }
      return `${cls.name} ${show(values, { ...options, depth: options.depth === null ? null : options.depth - 1 })}`
    },
  })
}

module.exports = { SYNC, Wrapper, functions, backs, backing, abortError, drive, describe }
