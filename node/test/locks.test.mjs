// Locks contended by 8 concurrent holders (8 clients): never two holders at once, and a
// counter written with the fencing token ends exact.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import { Client } from 'mqtt-statestore'
import { startLocalServer, unique } from './helpers.mjs'

const T = { timeout: 90_000 }
const HOLDERS = 8
const ROUNDS = 5
let server
let clients = []

before(async () => {
  server = await startLocalServer()
  clients = await Promise.all(Array.from({ length: HOLDERS }, () => Client.connect(server.connectOptions)))
})

after(async () => {
  await Promise.all(clients.map((c) => c.close()))
  await server?.stop()
})

test('8 holders: never two at once, fenced counter exact', T, async () => {
  const name = unique('contended')
  const key = unique('counter')
  let holding = 0
  let most = 0
  await Promise.all(
    clients.map(async (client) => {
      const lock = client.createLock(name, { ttl: 10_000, timeout: 60_000 })
      for (let i = 0; i < ROUNDS; i++) {
        const guard = await lock.lock()
        holding += 1
        most = Math.max(most, holding)
        try {
          const old = await client.get(key)
          const n = old === null ? 0 : Number(old.value.toString())
          // Yield to the event loop so that another holder would have a chance to interleave.
          await new Promise((r) => setImmediate(r))
          await client.set(key, String(n + 1), { fencingToken: guard.fencingToken })
        } finally {
          holding -= 1
          await guard.release()
        }
      }
    }),
  )
  assert.equal(most, 1, 'two holders at once')
  assert.equal((await clients[0].get(key)).value.toString(), String(HOLDERS * ROUNDS))
})

test('8 holders through update(): counter exact', T, async () => {
  const name = unique('updating')
  const key = unique('updated')
  await Promise.all(
    clients.map(async (client) => {
      const lock = client.createLock(name, { ttl: 10_000, timeout: 60_000 })
      for (let i = 0; i < ROUNDS; i++) {
        await lock.update(key, async (old) => {
          await new Promise((r) => setImmediate(r))
          return String(Number(old?.toString() ?? '0') + 1)
        })
      }
    }),
  )
  assert.equal((await clients[0].get(key)).value.toString(), String(HOLDERS * ROUNDS))
})

test('a write with a stale fencing token is refused', T, async () => {
  const name = unique('stale')
  const key = unique('stale-key')
  const first = await clients[0].lock(name, { ttl: 10_000 })
  await clients[0].set(key, 'one', { fencingToken: first.fencingToken })
  await first.release()
  const second = await clients[1].lock(name, { ttl: 10_000 })
  await clients[1].set(key, 'two', { fencingToken: second.fencingToken })
  await assert.rejects(clients[0].set(key, 'late', { fencingToken: first.fencingToken }), { code: 'STATESTORE_FENCING_TOKEN_LOWER_VERSION' })
  await second.release()
})

test('an update function that waits for its own lock fails at once', T, async () => {
  const client = clients[0]
  const name = unique('reentry')
  const lock = client.createLock(name, { ttl: 10_000 })
  const same = client.createLock(name, { ttl: 10_000 })
  const refusals = []
  const refused = (call) => {
    assert.throws(call, (error) => {
      refusals.push(error)
      return error.code === 'STATESTORE_INVALID_ARGUMENT' && /wait for itself/.test(error.message)
    })
  }
  const written = lock.updateSync(unique('target'), () => {
    refused(() => lock.updateSync(unique('other'), () => 'x'))
    refused(() => same.lockSync())
    return 'outer'
  })
  assert.equal(written.toString(), 'outer')
  // The async update's function is checked the same way while it runs.
  await lock.update(unique('target'), () => {
    refused(() => same.lockSync())
    return 'outer'
  })
  assert.equal(refusals.length, 3)
  // Outside the function the lock is an ordinary lock again.
  same.lockSync().releaseSync()
})

test('lost with no time to wait answers null for a lease that is not held, every time', T, async () => {
  const [client] = clients
  const key = unique('lost-now')
  const never = client.lease(key, 'never')
  const released = client.lease(key, 'released')
  assert.equal(released.state.state, 'notHeld')
  await released.acquire({ ttl: 10_000 })
  assert.equal(released.state.state, 'held')
  await released.release()
  assert.equal(released.state.state, 'notHeld')
  for (let round = 0; round < 300; round++) {
    assert.equal(never.lostSync({ timeout: 0 }), null)
    assert.equal(released.lostSync({ timeout: 0 }), null)
    assert.equal(await never.lost({ timeout: 0 }), null)
  }
})

test('lost is the loss or null for every timeout, the same as in every language', T, async () => {
  // Core's one meaning: no timeout waits until lost or released, 0 answers now, a number of
  // ms waits at most that long; still held when the time is up is null, not an error.
  const [client] = clients
  const held = client.lease(unique('lost-held'), 'me', { autoRenew: true })
  await held.acquire({ ttl: 10_000 })
  assert.equal(await held.lost({ timeout: 0 }), null)
  assert.equal(held.lostSync({ timeout: 0 }), null)
  assert.equal(await held.lost({ timeout: 200 }), null)
  assert.equal(held.lostSync({ timeout: 200 }), null)
  assert.equal(held.isHeld, true)
  await held.release()
  for (const timeout of [undefined, 0, 1000]) {
    assert.equal(await held.lost({ timeout }), null)
    assert.equal(held.lostSync({ timeout }), null)
  }
  const expiring = client.lease(unique('lost-expiring'), 'me')
  await expiring.acquire({ ttl: 300 })
  for (const timeout of [undefined, 0, 1000]) {
    assert.equal((await expiring.lost({ timeout }))?.reason, 'expired', `lost(${timeout})`)
    assert.equal(expiring.lostSync({ timeout })?.reason, 'expired', `lostSync(${timeout})`)
  }
})

test('a held lock and an election answer lost as a lease does', T, async () => {
  const [client] = clients
  const guard = await client.createLock(unique('lost-lock'), { ttl: 10_000 }).lock()
  assert.equal(await guard.lost({ timeout: 0 }), null)
  assert.equal(guard.lostSync({ timeout: 100 }), null) // still held when the time is up
  await guard.release()
  assert.equal(await guard.lost(), null) // released: no loss
  const expiring = await client.createLock(unique('lost-lock-expiring'), { ttl: 300, autoRenew: false }).lock()
  assert.equal((await expiring.lost({ timeout: 20_000 }))?.reason, 'expired')
  assert.equal(expiring.lostSync()?.reason, 'expired')

  const election = client.election(unique('lost-election'), 'me', { ttl: 10_000 })
  assert.equal(election.lostSync({ timeout: 0 }), null) // never elected
  await election.campaign()
  assert.equal(await election.lost({ timeout: 100 }), null)
  await election.resign()
  assert.equal(await election.lost(), null) // resigned: no loss
})
