// The state store attached to a real Mosquitto (the test kit's): operations through both APIs,
// expiry notifications, and a broker restart (the observation resyncs and says so).
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import { Client } from 'mqtt-statestore'
import { deadline, nextEvent, serve, unique } from './helpers.mjs'

const T = { timeout: 60_000 }
let broker

before(async () => {
  broker = await serve('mosquitto')
})

after(async () => {
  await broker?.close()
})

test('operations on Mosquitto, Promise and Sync', T, async () => {
  const client = await Client.connect({ host: broker.host, port: broker.port })
  try {
    const key = unique('mq')
    assert.equal((await client.set(key, 'v1', { condition: 'nx' })).applied, true)
    assert.equal(client.setSync(key, 'v2', { condition: 'nx' }).applied, false)
    assert.equal((await client.get(key)).value.toString(), 'v1')
    assert.equal(client.getSync(key).value.toString(), 'v1')
    assert.equal(client.vdelSync(key, 'v1').deleted, true)
    assert.equal((await client.delete(key)).outcome, 'notFound')
    const guard = client.lockSync(unique('mqlock'), { ttl: 5_000 })
    assert.equal((await client.set(key, 'fenced', { fencingToken: guard.fencingToken })).applied, true)
    await guard.release()
  } finally {
    await client.close()
  }
})

test('expiry notifies a delete', T, async () => {
  const client = await Client.connect({ host: broker.host, port: broker.port })
  try {
    const key = unique('mqexp')
    const observation = client.observe(key)
    await observation.ready
    await client.set(key, 'short', { expiry: 200 })
    assert.equal((await nextEvent(observation)).kind, 'set')
    assert.equal((await nextEvent(observation)).kind, 'delete')
    observation.close()
  } finally {
    await client.close()
  }
})

test('a broker restart gives a resynced event with the current value', T, async () => {
  const client = await Client.connect({ host: broker.host, port: broker.port, reconnectMaxDelay: 500, defaultTimeout: 5_000 })
  try {
    const key = unique('mqresync')
    await client.set(key, 'before')
    const observation = client.observe(key)
    await observation.ready
    const seen = new Promise((resolve) => observation.on('resynced', resolve))
    await broker.restart()
    // The server reattaches by itself; the client reconnects, re-registers and reads the key.
    const event = await deadline(seen, 40_000, 'resynced event')
    assert.equal(event.kind, 'resynced')
    // Without persistence in the server the value may survive (the server kept running).
    assert.ok(event.value === null || event.value.toString() === 'before')
    // And notifications flow again after the resync.
    const next = new Promise((resolve) => observation.on('set', resolve))
    await deadline(
      (async () => {
        for (;;) {
          try {
            await client.set(key, 'after', { timeout: 2_000 })
            return
          } catch (error) {
            if (error.code !== 'STATESTORE_TIMEOUT' && error.code !== 'STATESTORE_CONNECTION_LOST') throw error
          }
        }
      })(),
      30_000,
      'set after restart',
    )
    const set = await deadline(next, 20_000, 'set event after resync')
    assert.equal(set.value.toString(), 'after')
    observation.close()
  } finally {
    await client.close()
  }
})
