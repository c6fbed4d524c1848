'use strict'
// Argument checks: a wrong type is a TypeError naming the parameter (Node's own
// ERR_INVALID_ARG_TYPE style), raised before anything reaches the addon.

function describe(value) {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (typeof value === 'function') return `function ${value.name || '<anonymous>'}`
  if (typeof value === 'object') {
    const name = value.constructor && value.constructor.name
    return name ? `an instance of ${name}` : 'an object'
  }
  let shown = String(value)
  if (shown.length > 28) shown = shown.slice(0, 25) + '...'
  if (typeof value === 'string') shown = `'${shown}'`
  return `type ${typeof value} (${shown})`
}

function typeError(name, expected, value) {
  const error = new TypeError(`The "${name}" argument must be ${expected}. Received ${describe(value)}`)
  error.code = 'ERR_INVALID_ARG_TYPE'
  return error
}

// String.prototype.isWellFormed is Node >= 20; a `u` regex matches a surrogate only when it
// is not half of a pair.
const LONE_SURROGATE = /\p{Surrogate}/u
const wellFormed =
  typeof String.prototype.isWellFormed === 'function' ? (s) => s.isWellFormed() : (s) => !LONE_SURROGATE.test(s)

/**
 * A string argument as the addon takes it: valid Unicode. A lone surrogate has no UTF-8 form
 * (the conversion would send U+FFFD, a different key than the caller meant): core's
 * STATESTORE_INVALID_ARGUMENT naming the argument, as every binding refuses it.
 */
function text(value, name) {
  if (!wellFormed(value)) require('./native.js').refuseText(name)
  return value
}

/** A key or value: a string (UTF-8) or bytes; returns what the addon takes (string or Buffer). */
function bytes(value, name) {
  if (typeof value === 'string') return text(value, name)
  if (Buffer.isBuffer(value)) return value
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  throw typeError(name, 'of type string or an instance of Buffer or Uint8Array', value)
}

/**
 * A duration in milliseconds (undefined stays undefined). Only the type is checked here: a
 * negative or non-finite number is refused by core (STATESTORE_INVALID_ARGUMENT, naming it),
 * as in every binding.
 */
function duration(value, name, { required = false } = {}) {
  if (value === undefined || value === null) {
    if (required) throw typeError(name, 'of type number (milliseconds)', value)
    return undefined
  }
  if (typeof value !== 'number') throw typeError(name, 'of type number (milliseconds)', value)
  return value
}

function boolean(value, name) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'boolean') throw typeError(name, 'of type boolean', value)
  return value
}

function string(value, name) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw typeError(name, 'of type string', value)
  return text(value, name)
}

function fn(value, name) {
  if (typeof value !== 'function') throw typeError(name, 'of type function', value)
  return value
}

/**
 * An options object (or undefined): every key must be one of `allowed`, so a misspelt option
 * is an error instead of being ignored.
 */
function options(value, name, allowed) {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) throw typeError(name, 'of type object', value)
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      const error = new TypeError(`Unknown option "${key}" in "${name}"; expected one of: ${allowed.join(', ')}`)
      error.code = 'ERR_INVALID_ARG_VALUE'
      throw error
    }
  }
  return value
}

/** A version or fencing token: its string form (a FencingToken/Version object is accepted). */
function token(value, name) {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'string') return text(value, name)
  if (typeof value === 'object' && typeof value.toString === 'function' && value.constructor && value.constructor.name === 'Version') return value.toString()
  throw typeError(name, 'of type string (a version or fencing token)', value)
}

module.exports = { bytes, duration, boolean, string, text, fn, options, token, typeError }
