// Connection state and events: the local server stopped and started again on the same port,
// giving up after reconnectMaxAttempts, and listeners that do not outlive close().
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { ErrorCodes } from 'mqtt-statestore'
import { Client, deadline, startLocalServer } from './helpers.mjs'

const T = { timeout: 60_000 }
const KEEP_ALIVE = 5_000 // the shortest keep-alive allowed, ms
const QUICK = { keepAlive: KEEP_ALIVE, reconnectInitialDelay: 50, reconnectMaxDelay: 200 }

/** The next event of `events` in `state`, skipping others, within `ms`. */
function until(events, state, ms) {
  // next(), not `for await`: leaving that loop would end the stream.
  const wait = (async () => {
    for (let next = await events.next(); !next.done; next = await events.next()) {
      assert.equal(next.value.kind, 'connection')
      if (next.value.state === state) return next.value
    }
    throw new Error(`the connection events ended before ${state}`)
  })()
  return deadline(wait, ms, `a ${state} event`)
}

test('a stopped server is reconnecting with a reason, then connected when it is back', T, async () => {
  let server = await startLocalServer()
  const port = server.port
  const client = await Client.connect({ ...server.connectOptions, ...QUICK })
  try {
    assert.equal(client.connectionState, 'connected')
    const events = client.connectionEvents()
    await server.stop()
    const dropped = await until(events, 'reconnecting', 2 * KEEP_ALIVE)
    assert.ok(dropped.reason.includes(`127.0.0.1:${port}`), dropped.reason)
    assert.equal(dropped.attempt, 1)
    assert.ok(dropped.delay >= 0, String(dropped.delay))
    assert.equal(client.connectionState, 'reconnecting')

    server = await startLocalServer({ port })
    const back = await until(events, 'connected', 30_000)
    assert.equal(back.reason, null)
    assert.equal(back.sessionLost, true)
    assert.equal(await client.get('k'), null)

    await client.close()
    await until(events, 'closed', 10_000)
    assert.deepEqual(await events.next(), { done: true, value: undefined })
    assert.equal(client.connectionState, 'closed')
  } finally {
    await client.close()
    await server.stop()
  }
})

test('after reconnectMaxAttempts it gives up: a waiting call fails at once with the reason', T, async () => {
  const server = await startLocalServer()
  const client = await Client.connect({ ...server.connectOptions, ...QUICK, reconnectMaxAttempts: 2 })
  try {
    const seen = []
    let reconnecting
    const dropped = new Promise((resolve) => (reconnecting = resolve))
    const gaveUp = new Promise((resolve) =>
      client.on('connectionState', (e) => {
        seen.push(e.state)
        if (e.state === 'reconnecting') reconnecting(e)
        if (e.state === 'gave_up') resolve(e)
      }),
    )
    await server.stop()
    await deadline(dropped, 2 * KEEP_ALIVE, 'a reconnecting event')
    const waiting = client.get('k', { timeout: 3_600_000 })
    waiting.catch(() => {}) // checked below, once reconnecting has given up
    const last = await deadline(gaveUp, 30_000, 'a gave_up event')
    assert.equal(last.attempt, 2)
    assert.ok(last.reason.includes(`127.0.0.1:${server.port}`), last.reason)
    // Far below the call's hour: it ends when reconnecting gives up.
    await assert.rejects(deadline(waiting, 30_000, 'the waiting call'), (error) => {
      assert.equal(error.code, ErrorCodes.CONNECTION)
      assert.ok(error.message.includes(last.reason) && error.message.includes('gave up'), error.message)
      return true
    })
    assert.equal(client.connectionState, 'gave_up')
    await assert.rejects(client.get('k'), { code: ErrorCodes.CONNECTION })
    assert.throws(() => client.on('connection', () => {}), TypeError)
  } finally {
    await client.close()
  }
})

test('a connectionState listener does not keep the process alive after close()', T, async () => {
  const script = `
    import { Client } from 'mqtt-statestore'
    import { startLocalServer } from 'mqtt-statestore/testing'
    const server = await startLocalServer()
    const client = await Client.connect(server.connectOptions)
    const states = []
    client.on('connectionState', (e) => states.push(e.state))
    await client.close()
    await server.stop()
    process.on('exit', () => console.log(states.join(',')))
  `
  const cwd = path.dirname(fileURLToPath(import.meta.url))
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (chunk) => (out += chunk))
  const code = await deadline(new Promise((resolve) => child.on('exit', resolve)), 30_000, 'the exit of a process with a listener')
  assert.equal(code, 0)
  assert.equal(out.trim(), 'closed')
})
