'use strict'
// setLogHandler: the library's log records (reconnects, refused renewals, dropped
// notifications...) delivered to a function on this thread.
const native = require('./native.js')
const args = require('./args.js')

const LEVELS = ['error', 'warn', 'info', 'debug', 'trace']
let current = null

// The one function the addon calls: after setLogHandler(null) returns, records still queued
// for this thread are dropped here, so none reaches a handler that was removed.
function deliver(record) {
  if (current !== null) current(record)
}

/**
 * Delivers the library's log records at `options.level` (default `'info'`) and more severe to
 * `handler({ level, target, message })` on this thread (each worker sets its own); `null`
 * stops. Never keeps the process alive; records that arrive faster than this thread takes them
 * are dropped rather than slowing the library down.
 */
function setLogHandler(handler, options) {
  if (handler !== null && typeof handler !== 'function') throw args.typeError('handler', 'of type function or null', handler)
  const { level = 'info' } = args.options(options, 'options', ['level'])
  if (!LEVELS.includes(level)) {
    const error = new TypeError(`The "options.level" argument must be one of ${LEVELS.map((l) => `'${l}'`).join(', ')}. Received ${typeof level === 'string' ? `'${level}'` : typeof level}`)
    error.code = 'ERR_INVALID_ARG_VALUE'
    throw error
  }
  if (handler === null) {
    current = null
    native.setLogHandler(null, level)
  } else {
    native.setLogHandler(deliver, level)
    current = handler
  }
}

module.exports = { setLogHandler }
