// AbortSignal on Promise methods (`{ signal }`, as fs/promises and fetch take it): aborted
// before the call, during it (the call is cancelled in core), after it settled, and one signal
// shared by many calls (its listeners are removed as each call settles).
import assert from 'node:assert/strict'
import { getEventListeners } from 'node:events'
import { after, before, test } from 'node:test'

import { Client, ErrorCodes } from 'mqtt-statestore'
import { deadline, startLocalServer, unique } from './helpers.mjs'

const T = { timeout: 30_000 }
let server
let a
let b

before(async () => {
  server = await startLocalServer()
  ;[a, b] = await Promise.all([Client.connect(server.connectOptions), Client.connect(server.connectOptions)])
})

after(async () => {
  await Promise.all([a?.close(), b?.close()])
  await server?.stop()
})

/** The AbortError of Node's convention, carrying `reason` as its cause. */
function isAbort(reason) {
  return (error) => {
    assert.equal(error.name, 'AbortError', error.stack)
    assert.equal(error.code, 'ABORT_ERR')
    assert.equal(error.cause, reason)
    assert.ok(error instanceof Error)
    return true
  }
}

test('an already aborted signal rejects at once and sends nothing', T, async () => {
  const key = unique('before')
  const reason = new Error('changed my mind')
  const signal = AbortSignal.abort(reason)
  await assert.rejects(a.set(key, 'v', { signal }), isAbort(reason))
  await assert.rejects(a.get(key, { signal }), isAbort(reason))
  await assert.rejects(a.delete(key, { signal }), isAbort(reason))
  await assert.rejects(a.vdel(key, 'v', { signal }), isAbort(reason))
  await assert.rejects(a.lock(unique('lock'), { ttl: 5_000, signal }), isAbort(reason))
  await assert.rejects(a.lease(unique('lease'), 'me').acquire({ ttl: 5_000, signal }), isAbort(reason))
  await assert.rejects(a.election(unique('election'), 'me', { ttl: 5_000 }).campaign({ signal }), isAbort(reason))
  assert.equal(await a.get(key), null, 'the aborted set was not sent')
  assert.equal(getEventListeners(signal, 'abort').length, 0)
})

test('aborting a lock acquisition waiting on contention leaves the lock free for others', T, async () => {
  const name = unique('contended')
  const held = await a.lock(name, { ttl: 10_000 })
  const controller = new AbortController()
  const waiting = b.lock(name, { ttl: 10_000, signal: controller.signal })
  // b is waiting: a second holder is refused while a holds it.
  assert.equal(await b.tryLock(name, { ttl: 10_000 }), null)
  const reason = new Error('give up')
  controller.abort(reason)
  await deadline(assert.rejects(waiting, isAbort(reason)), 10_000, 'the aborted lock()')
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0)
  await held.release()
  // The cancelled waiter took nothing: a third party gets the lock, and keeps it.
  const c = await Client.connect(server.connectOptions)
  try {
    const guard = await c.tryLock(name, { ttl: 10_000 })
    assert.ok(guard, 'the lock is free after the aborted waiter')
    assert.equal((await c.createLock(name, { ttl: 10_000 }).holder()).toString(), guard.holderName.toString())
    await guard.release()
  } finally {
    await c.close()
  }
})

test('aborting during a wait rejects with AbortError: lease.lost, campaign, update', T, async () => {
  const lease = a.lease(unique('held'), 'me')
  await lease.acquire({ ttl: 10_000 })
  const controller = new AbortController()
  const lost = lease.lost({ signal: controller.signal })
  controller.abort() // reason: a DOMException AbortError
  await deadline(assert.rejects(lost, isAbort(controller.signal.reason)), 10_000, 'lost()')
  assert.ok(lease.isHeld, 'aborting the wait did not release the lease')
  await lease.release()

  const name = unique('election')
  const leader = await a.election(name, 'a', { ttl: 10_000 })
  await leader.campaign()
  const second = new AbortController()
  const campaigning = b.election(name, 'b', { ttl: 10_000 }).campaign({ signal: second.signal })
  second.abort('stop')
  await deadline(assert.rejects(campaigning, isAbort('stop')), 10_000, 'campaign()')
  await leader.resign()

  // update: aborted while fn runs, nothing is written and the lock is released.
  const key = unique('counter')
  const lockName = unique('update-lock')
  const third = new AbortController()
  await assert.rejects(
    b.createLock(lockName, { ttl: 10_000 }).update(key, () => {
      third.abort('late')
      return 'written?'
    }, { signal: third.signal }),
    isAbort('late'),
  )
  assert.equal(await b.get(key), null)
  const free = await a.tryLock(lockName, { ttl: 10_000 })
  assert.ok(free, 'the aborted update released its lock')
  await free.release()
})

test('aborting after the call settled changes nothing', T, async () => {
  const key = unique('after')
  const controller = new AbortController()
  const r = await a.set(key, 'v', { signal: controller.signal })
  assert.equal(r.applied, true)
  const guard = await a.lock(unique('kept'), { ttl: 10_000, signal: controller.signal })
  controller.abort()
  assert.equal((await a.get(key)).value.toString(), 'v')
  assert.ok(guard.isHeld, 'a lock acquired before the abort stays held')
  await guard.release()
})

test('one signal for thousands of calls: no listener left behind', T, async () => {
  const controller = new AbortController()
  const { signal } = controller
  const key = unique('many')
  await a.set(key, 'v')
  for (let round = 0; round < 5; round++) {
    const calls = Array.from({ length: 400 }, () => a.get(key, { signal }))
    assert.equal(getEventListeners(signal, 'abort').length, 400)
    await Promise.all(calls)
    assert.equal(getEventListeners(signal, 'abort').length, 0)
  }
  // Failures settle too.
  await assert.rejects(a.get('', { signal }), { code: ErrorCodes.INVALID_ARGUMENT })
  assert.equal(getEventListeners(signal, 'abort').length, 0)
})

test('a signal must be an AbortSignal; Sync twins take none', T, async () => {
  await assert.rejects(a.get('k', { signal: 'abort' }), { code: 'ERR_INVALID_ARG_TYPE', message: /options\.signal/ })
  await assert.rejects(a.lock('k', { ttl: 1000, signal: {} }), { code: 'ERR_INVALID_ARG_TYPE', message: /options\.signal/ })
  assert.throws(() => a.getSync('k', { signal: new AbortController().signal }), { code: 'ERR_INVALID_ARG_VALUE', message: /signal/ })
  assert.throws(() => a.setSync('k', 'v', { signal: new AbortController().signal }), { code: 'ERR_INVALID_ARG_VALUE' })
})
