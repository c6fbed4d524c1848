'use strict'
// setLogHandler: the library's log records (reconnects, refused renewals, dropped
// notifications...) delivered to a function on this thread.
const native = require('./native.js')
const { backs } = require('./call.js')

let current = null

// The one function the addon calls: after setLogHandler(null) returns, records still queued
// for this thread are dropped here, so none reaches a handler that was removed.
function deliver(record) {
  if (current !== null) current(record)
}

/**
 * Delivers the library's log records at `options.level` (default `'info'`; core refuses a
 * name it does not know) and more severe to `handler({ level, target, message })` on this
 * thread (each worker sets its own); `null` stops. Never keeps the process alive; records that
 * arrive faster than this thread takes them are dropped rather than slowing the library down.
 */
function setLogHandler(handler, options) {
  native.setLogHandler(handler, options, deliver)
  current = handler
}
backs('', { setLogHandler: ['setLogHandler'] })

module.exports = { setLogHandler }
