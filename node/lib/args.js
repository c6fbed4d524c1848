'use strict'
// Argument conversions: what the addon takes, from what JavaScript passes. Only JavaScript types
// are checked here (a TypeError naming the parameter, Node's ERR_INVALID_ARG_TYPE style): values
// (empty keys, durations' ranges, condition names, versions) are core's to refuse, with its
// STATESTORE_INVALID_ARGUMENT, as in every binding.

function describe(value) {
  if (value === null || value === undefined) return String(value)
  if (typeof value === 'function') return `function ${value.name || '<anonymous>'}`
  if (typeof value === 'object') return value.constructor?.name ? `an instance of ${value.constructor.name}` : 'an object'
  const shown = String(value).length > 28 ? String(value).slice(0, 25) + '...' : String(value)
  return `type ${typeof value} (${typeof value === 'string' ? `'${shown}'` : shown})`
}

function typeError(name, expected, value) {
  const error = new TypeError(`The "${name}" argument must be ${expected}. Received ${describe(value)}`)
  error.code = 'ERR_INVALID_ARG_TYPE'
  return error
}

// String.prototype.isWellFormed is Node >= 20; a `u` regex matches a surrogate only when it
// is not half of a pair.
const wellFormed = String.prototype.isWellFormed ? (s) => s.isWellFormed() : (s) => !/\p{Surrogate}/u.test(s)

/**
 * A string as the addon takes it: valid Unicode. A lone surrogate has no UTF-8 form (the
 * conversion would send U+FFFD, a different key than the caller meant) and core never sees the
 * string it was: core's STATESTORE_INVALID_ARGUMENT naming the argument, thrown from here.
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

/** An optional value of one JavaScript type (undefined and null: absent), then `convert`ed. */
const optional = (type, expected, convert = (value) => value) => (value, name) => {
  if (value === undefined || value === null) return undefined
  if (typeof value !== type) throw typeError(name, expected, value)
  return convert(value, name)
}

const MS = 'of type number (milliseconds)'
const VERSION = 'of type string (a version or fencing token)'
const duration = optional('number', MS)
const boolean = optional('boolean', 'of type boolean')
const string = optional('string', 'of type string', text)
const number = optional('number', 'of type number')
const token = optional('string', VERSION, text)
/** A number, or a string core reads as one (a port as the environment spells it). */
const numeric = (value, name) => (typeof value === 'string' ? text(value, name) : number(value, name))

/** `check` of a value that must be given. */
const must = (check, expected) => (value, name) => {
  if (value === undefined || value === null) throw typeError(name, expected, value)
  return check(value, name)
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
  const unknown = Object.keys(value).find((key) => !allowed.includes(key))
  if (unknown === undefined) return value
  const error = new TypeError(`Unknown option "${unknown}" in "${name}"; expected one of: ${allowed.join(', ')}`)
  error.code = 'ERR_INVALID_ARG_VALUE'
  throw error
}

/** The conversion of the parameter `name` by `check`. */
const param = (check, name) => (value) => check(value, name)

/**
 * The conversion of an options parameter, `spec` giving each option's check: the values by
 * name, or (`spread`) in `spec`'s order as arguments of their own. `extra` names are allowed
 * too (a Promise method's `signal`, which its caller reads).
 */
function fields(spec, { name = 'options', spread = false } = {}) {
  const names = Object.keys(spec)
  const convert = (value, extra = []) => {
    // No options object: nothing for the addon to read (on the hot path of set, delete...).
    if ((value === undefined || value === null) && !spread) return undefined
    const given = options(value, name, [...names, ...extra])
    const values = names.map((key) => spec[key](given[key], `${name}.${key}`))
    return spread ? values : Object.fromEntries(names.map((key, i) => [key, values[i]]))
  }
  return Object.assign(convert, { options: true, spread })
}

/** Each item of an iterable (not a string or bytes) converted by `item`, named `name[i]`. */
const each = (item) => (value, name) => {
  const iterable = value !== null && typeof value === 'object' && typeof value[Symbol.iterator] === 'function'
  if (!iterable || value instanceof Uint8Array) throw typeError(name, 'an iterable (an Array, a Set...)', value)
  return Array.from(value, (element, i) => item(element, `${name}[${i}]`))
}

/** The keys of a batch. */
const keys = (name) => param(each(bytes), name)

/**
 * The `[key, value]` pairs of a batch (an iterable of pairs such as an array or a Map, or a
 * plain object's own entries, as ioredis's `mset` takes them), as the addon takes them: the
 * keys, then the values.
 */
function pairs(name) {
  const pair = (value, at) => {
    if (!Array.isArray(value) || value.length !== 2) throw typeError(at, 'a [key, value] pair', value)
    return [bytes(value[0], `${at}[0]`), bytes(value[1], `${at}[1]`)]
  }
  const plain = (value) => value !== null && typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value))
  const convert = (value) => {
    const converted = each(pair)(plain(value) ? Object.entries(value) : value, name)
    return [converted.map((p) => p[0]), converted.map((p) => p[1])]
  }
  return Object.assign(convert, { spread: true })
}

const ttl = must(duration, MS)
const version = must(token, VERSION)

module.exports = { bytes, duration, ttl, version, boolean, string, number, numeric, token, fn, options, param, fields, keys, pairs, typeError }
