// Every duration option, with the numbers that could abort a process: one rule (core's
// bindings::duration): negative and NaN are STATESTORE_INVALID_ARGUMENT naming the option;
// Infinity and numbers too large for any clock mean no limit for a wait, and are refused as too
// long where the time is sent to the service (expiry, TTL).
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { Client, sharedServer, unique } from './helpers.mjs'

const T = { timeout: 30_000 }
const BAD = [-1, -0.5, -Infinity, NaN]
const HUGE = [Infinity, 2 ** 63, 1e308, 1.8e22]
const shared = sharedServer()

function nextAfterSet(key, timeout) {
  const observation = shared.client.observeSync(key)
  try {
    shared.client.setSync(key, 'v')
    const event = observation.nextSync({ timeout })
    assert.equal(event?.key.toString(), key)
  } finally {
    observation.close()
  }
}

// Waits: a huge value is no limit, so each of these must simply complete.
const WAITS = {
  'setSync timeout': (k, t) => shared.client.setSync(k, 'v', { timeout: t }),
  'set timeout': (k, t) => shared.client.set(k, 'v', { timeout: t }),
  'getSync timeout': (k, t) => shared.client.getSync(k, { timeout: t }),
  'get timeout': (k, t) => shared.client.get(k, { timeout: t }),
  'deleteSync timeout': (k, t) => shared.client.deleteSync(k, { timeout: t }),
  'vdel timeout': (k, t) => shared.client.vdel(k, 'v', { timeout: t }),
  'nextSync timeout': (k, t) => nextAfterSet(k, t),
  'lock timeout': (k, t) => shared.client.createLock(k, { ttl: 5000, timeout: t }).lockSync().releaseSync(),
  'lease acquireSync timeout': (k, t) => shared.client.lease(k, 'me').acquireSync({ ttl: 5000, timeout: t }),
  'lease acquire timeout': (k, t) => shared.client.lease(k, 'me').acquire({ ttl: 5000, timeout: t }),
  'lease lostSync timeout': (k, t) => shared.client.lease(k, 'me').lostSync({ timeout: t }),
  'lease lost timeout': (k, t) => shared.client.lease(k, 'me').lost({ timeout: t }),
  'campaignSync timeout': (k, t) => shared.client.election(k, 'me', { ttl: 5000 }).campaignSync({ timeout: t }),
}

// Times sent to the service: a huge value is refused before anything is sent.
const SENT = {
  'setSync expiry': (k, t) => shared.client.setSync(k, 'v', { expiry: t }),
  'set expiry': (k, t) => shared.client.set(k, 'v', { expiry: t }),
  'lock ttl': (k, t) => shared.client.createLock(k, { ttl: t }).lockSync(),
  'lease tryAcquireSync ttl': (k, t) => shared.client.lease(k, 'me').tryAcquireSync({ ttl: t }),
  'lease acquire ttl': (k, t) => shared.client.lease(k, 'me').acquire({ ttl: t }),
  'election ttl': (k, t) => shared.client.election(k, 'me', { ttl: t }).campaignSync(),
}

/** Runs `call` (sync or Promise) and returns what it threw or rejected with, or undefined. */
async function outcome(call) {
  try {
    await call()
    return undefined
  } catch (error) {
    return error
  }
}

describe('durations follow one rule in every option', () => {
  for (const [name, call] of Object.entries({ ...WAITS, ...SENT })) {
    test(`${name}: negative and NaN are STATESTORE_INVALID_ARGUMENT naming the option`, T, async () => {
      for (const bad of BAD) {
        const error = await outcome(() => call(unique('dur'), bad))
        assert.equal(error?.code, 'STATESTORE_INVALID_ARGUMENT', `${name} ${bad}: ${error}`)
        assert.match(error.message, /(timeout|ttl|expiry).*>= 0/, `${name} ${bad}`)
      }
    })
  }
  for (const [name, call] of Object.entries(WAITS)) {
    test(`${name}: Infinity and huge numbers are no limit`, T, async () => {
      for (const huge of HUGE) {
        const error = await outcome(() => call(unique('dur'), huge))
        assert.equal(error, undefined, `${name} ${huge}`)
      }
    })
  }
  for (const [name, call] of Object.entries(SENT)) {
    test(`${name}: Infinity and huge numbers are refused as too long`, T, async () => {
      for (const huge of HUGE) {
        const key = unique('dur')
        const error = await outcome(() => call(key, huge))
        assert.equal(error?.code, 'STATESTORE_INVALID_ARGUMENT', `${name} ${huge}: ${error}`)
        assert.match(error.message, /too long/)
        assert.equal(shared.client.getSync(key), null)
      }
    })
  }
  test('connect options read durations by the same rule', T, async () => {
    for (const defaultTimeout of [Infinity, 1.8e22]) {
      const other = await Client.connect({ ...shared.server.connectOptions, defaultTimeout })
      assert.equal(await other.get(unique('dur')), null)
      await other.close()
    }
    for (const bad of [-1, NaN]) {
      await assert.rejects(Client.connect({ ...shared.server.connectOptions, defaultTimeout: bad }), {
        code: 'STATESTORE_INVALID_ARGUMENT',
        message: /defaultTimeout|default_timeout/,
      })
    }
  })
})
