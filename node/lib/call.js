'use strict'
// How the package calls the addon. Each public class wraps one addon class (`Wrapper.define`),
// and every addon method that takes a NativeCall first becomes a Promise method and its
// blocking `…Sync` twin: nothing (a Promise), SYNC (the result itself, the thread blocked), or
// one per call that an AbortSignal cancels. The addon checks every argument, its JavaScript
// type (TypeErrors naming the parameter) and its value, before anything is sent.
const { inspect } = require('node:util')
const native = require('./native.js')

/** Passed first to a native operation: block the JavaScript thread until its result. */
const SYNC = new native.NativeCall(true)

/** Node's AbortError convention (fs/promises, fetch): `name`, `code`, the reason as `cause`. */
function abortError(signal) {
  const error = new Error('The operation was aborted', { cause: signal.reason })
  error.name = 'AbortError'
  error.code = 'ABORT_ERR'
  return error
}

/**
 * Runs `start(call)` with a NativeCall that `signal` cancels: aborted, the Promise rejects with
 * an AbortError (the addon fails a call whose signal has already aborted before sending it).
 * The listener is added once the addon has checked the signal and removed as soon as the call
 * settles, so that one signal can serve any number of calls.
 */
function abortable(signal, start) {
  const call = new native.NativeCall(false)
  const failed = (error) => {
    throw signal?.aborted === true && error?.code === 'STATESTORE_CANCELLED' ? abortError(signal) : error
  }
  let pending
  try {
    pending = start(call)
  } catch (error) {
    return Promise.reject(error).catch(failed)
  }
  const onAbort = () => call.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  const settled = () => signal.removeEventListener('abort', onAbort)
  return Promise.resolve(pending).then(
    (value) => {
      settled()
      return value
    },
    (error) => {
      settled()
      return failed(error)
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
  if (sync) return resume('next')
  try {
    return Promise.resolve(resume('next'))
  } catch (error) {
    return Promise.reject(error)
  }
}

/** The addon members behind each public member (`Client.set`: `NativeClient.set`), for typecheck/backing.mjs. */
const backing = new Map()

function backs(owner, members) {
  for (const [member, natives] of Object.entries(members)) backing.set(owner ? `${owner}.${member}` : member, natives)
}

/**
 * The Promise method and the `…Sync` twin over the addon method `name` of `target(this)`:
 * `result` makes what the caller gets from the addon's result; `lazy`, the Promise method
 * returns `result(promise)` at once (an Observation that listeners can join while it opens).
 */
function twinsOf(name, target, result, lazy) {
  const promise = function (...given) {
    let pending
    try {
      const addon = target(this)
      pending = addon[name](undefined, ...given)
      // Given options.signal, the addon hands it back instead of starting: the call is made
      // again with a NativeCall the signal cancels.
      if (!(pending instanceof Promise)) pending = abortable(pending, (call) => addon[name](call, ...given))
    } catch (error) {
      // A lazy method throws a bad argument at once, as it returns its result at once.
      if (lazy) throw error
      pending = Promise.reject(error)
    }
    return lazy ? result(pending) : result ? pending.then(result) : pending
  }
  const sync = function (...given) {
    const value = target(this)[name](SYNC, ...given)
    return result ? result(value) : value
  }
  return [promise, sync]
}

/** The own methods of `object` (an addon class or its prototype), getters and `constructor` left out. */
function methodsOf(object) {
  return Object.entries(Object.getOwnPropertyDescriptors(object))
    .filter(([key, d]) => typeof d.value === 'function' && key !== 'constructor')
    .map(([key]) => key)
}

/** Puts the method `value` on `into` (a class or its prototype) as `key`, as a class's own are. */
function put(into, key, value) {
  Object.defineProperty(into, key, { configurable: true, writable: true, value: Object.defineProperty(value, 'name', { value: key }) })
}

/**
 * Puts on `into` a Promise method and its `…Sync` twin for each method of `Native()` (an addon
 * class, or its prototype), over the addon object `target(this)`, and a plain method for each
 * of `plain`: `label` names them in `backing`, `owner` the addon class. `results` make the
 * caller's value from the addon's (by method name; `lazy` ones are given the Promise);
 * `twins: false`, only the `plain` methods are made.
 */
function attach(into, label, owner, Native, target, { plain = {}, results = {}, lazy = [], hidden = [], twins = true }) {
  // Without twins, only `plain`: the addon (the testing one) need not be loaded yet.
  for (const key of twins ? methodsOf(Native()) : Object.keys(plain)) {
    if (hidden.includes(key)) continue
    const natives = [`${owner}.${key}`]
    if (key in plain) {
      const result = plain[key] ?? ((value) => value)
      put(into, key, function (...given) {
        return result(target(this)[key](...given))
      })
      backs(label, { [key]: natives })
      continue
    }
    const [promise, sync] = twinsOf(key, target, results[key], lazy.includes(key))
    put(into, key, promise)
    put(into, `${key}Sync`, sync)
    backs(label, { [key]: natives, [`${key}Sync`]: natives })
  }
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
   * Writes the members of `cls` (a subclass) over the addon class `native` (in `addon()`, the
   * client's addon unless said): `made` says how users get one; `getters` are the addon's
   * getters shown as they are (`secrets`: ones `inspect` leaves out); every method of the
   * addon class is a Promise method and its `…Sync` twin, except `plain` ones (calls that
   * answer at once) and `hidden` ones (the package's own); `results`, `lazy` and `twins` as
   * `attach` takes them; `statics`, the same for the addon class's static methods, on `cls`.
   */
  static define(cls, { native: name, made, getters = [], secrets = [], addon = () => native, statics, ...methods }) {
    const Native = () => addon()[name]
    wrapped.set(cls, { Native, made })
    for (const key of [...getters, ...secrets]) {
      backs(cls.name, { [key]: [`${name}.${key}`] })
      Object.defineProperty(cls.prototype, key, {
        configurable: true,
        get() {
          return nativeOf(this)[key]
        },
      })
    }
    attach(cls.prototype, cls.name, name, () => Native().prototype, nativeOf, methods)
    if (statics) attach(cls, cls.name, name, Native, Native, statics)
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

module.exports = { SYNC, Wrapper, nativeOf, abortable, backs, backing, abortError, drive, describe }
