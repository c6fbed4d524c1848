'use strict'
// How a native operation delivers its result (its last argument, a NativeCall): a Promise
// (nothing passed), the blocking `…Sync` twin (SYNC), or a Promise an AbortSignal can cancel.
const native = require('./native.js')
const args = require('./args.js')

/** Passed last to a native operation: block the JavaScript thread until its result. */
const SYNC = new native.NativeCall(true)

const CANCELLED = 'STATESTORE_CANCELLED'

/** Node's AbortError convention (fs/promises, fetch): `name`, `code`, the reason as `cause`. */
function abortError(signal) {
  const error = new Error('The operation was aborted', { cause: signal.reason })
  error.name = 'AbortError'
  error.code = 'ABORT_ERR'
  return error
}

/** `options.signal`: undefined or an AbortSignal (as Node's validateAbortSignal checks it). */
function signal(value, name) {
  if (value === undefined) return undefined
  if (value === null || typeof value !== 'object' || !('aborted' in value) || typeof value.addEventListener !== 'function') {
    throw args.typeError(name, 'an instance of AbortSignal', value)
  }
  return value
}

/**
 * Starts `start(call)` (a native operation returning a Promise) so that `signal` can cancel
 * it: already aborted, it rejects at once without starting; aborted later, the call is
 * cancelled in core and the Promise rejects with an AbortError. The listener is removed as
 * soon as the call settles, so one signal can serve any number of calls.
 */
function abortable(abortSignal, start) {
  if (abortSignal === undefined) return start(undefined)
  if (abortSignal.aborted) return Promise.reject(abortError(abortSignal))
  const call = new native.NativeCall(false)
  const onAbort = () => call.cancel()
  abortSignal.addEventListener('abort', onAbort, { once: true })
  let pending
  try {
    pending = start(call)
  } catch (error) {
    abortSignal.removeEventListener('abort', onAbort)
    return Promise.reject(error)
  }
  return pending.then(
    (value) => {
      abortSignal.removeEventListener('abort', onAbort)
      return value
    },
    (error) => {
      abortSignal.removeEventListener('abort', onAbort)
      throw abortSignal.aborted && error && error.code === CANCELLED ? abortError(abortSignal) : error
    },
  )
}

module.exports = { SYNC, abortable, abortError, signal }
