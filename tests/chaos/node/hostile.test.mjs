// Hostile input through the Node binding: generated keys, values, options and
// argument types (fast-check), for the Promise methods and their Sync twins; calls after
// close; close racing calls in flight; the malicious-server catalogue (tests/chaos/hostile.json)
// against `statestore-chaos hostile`. Every call succeeds or fails with a clear error (a
// STATESTORE_* error other than STATESTORE_INTERNAL, or a TypeError/RangeError); the process
// never crashes or hangs (node --test --test-timeout).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { after, before, describe, test } from 'node:test'

import fc from 'fast-check'

const pkg = process.env.CHAOS_NODE_PACKAGE ?? new URL('../../../node/', import.meta.url).href
const { Client } = await import(new URL('index.mjs', pkg).href)
const { startLocalServer } = await import(new URL('testing.mjs', pkg).href)
const catalogue = JSON.parse(readFileSync(new URL('../hostile.json', import.meta.url), 'utf8'))

const RUNS = Number(process.env.CHAOS_FC_RUNS ?? 150)

/** Whether `error` is a clear failure (not a bug caught at the boundary, not a random throw). */
function isClear (error) {
  if (typeof error?.code === 'string' && error.code.startsWith('STATESTORE_')) {
    return error.code !== 'STATESTORE_INTERNAL'
  }
  return error instanceof TypeError || error instanceof RangeError
}

async function clear (call) {
  try {
    return { ok: true, value: await call() }
  } catch (error) {
    assert.ok(isClear(error), `unclear failure: ${error?.stack ?? error}`)
    return { ok: false, error }
  }
}

function clearSync (call) {
  try {
    return { ok: true, value: call() }
  } catch (error) {
    assert.ok(isClear(error), `unclear failure: ${error?.stack ?? error}`)
    return { ok: false, error }
  }
}

// Anything a caller may pass: fast-check's anything() plus the byte-like types and oddities.
const anything = fc.oneof(
  fc.anything(),
  fc.uint8Array({ maxLength: 300 }),
  fc.string({ maxLength: 100 }),
  fc.string({ unit: 'binary', maxLength: 50 }), // lone surrogates
  fc.constantFrom(null, undefined, NaN, Infinity, -Infinity, -0, 2 ** 64, Symbol('s'), () => 1, new Map(), new Date()),
  fc.bigInt(),
  fc.uint8Array({ maxLength: 50 }).map((a) => Buffer.from(a)),
  fc.uint8Array({ maxLength: 50 }).map((a) => new DataView(a.buffer)),
)
const number = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -1, 2 ** 53, 2 ** 64, NaN, Infinity), fc.string({ maxLength: 4 }), fc.constant(null), fc.bigInt())

describe('hostile input', () => {
  let server
  let client
  before(async () => {
    server = await startLocalServer()
    client = await Client.connect({ ...server.connectOptions, defaultTimeout: 5000 })
  })
  after(async () => {
    await client.close()
    await server.stop()
  })

  test('any bytes round-trip, empty keys are refused', async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), fc.uint8Array({ maxLength: 2000 }), async (key, value) => {
      const result = await clear(() => client.set(key, value))
      if (key.length === 0) {
        assert.equal(result.ok, false, 'an empty key must be refused')
        assert.equal(result.error.code, 'STATESTORE_INVALID_ARGUMENT')
        return
      }
      assert.ok(result.ok, `set failed: ${result.error}`)
      const read = client.getSync(key)
      assert.deepEqual(new Uint8Array(read.value), value)
    }), { numRuns: RUNS })
  })

  test('strings with lone surrogates are refused; other text is written as UTF-8', async () => {
    await fc.assert(fc.asyncProperty(fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }), async (text) => {
      const result = await clear(() => client.set(text, text))
      // A lone surrogate has no UTF-8 form: refused, never sent as U+FFFD (another key).
      if (/\p{Surrogate}/u.test(text)) {
        assert.equal(result.ok, false, 'a string with a lone surrogate must be refused')
        assert.equal(result.error.code, 'STATESTORE_INVALID_ARGUMENT', String(result.error))
        return
      }
      if (result.ok) {
        const read = await client.get(text)
        assert.deepEqual(read.value, Buffer.from(text, 'utf8'))
      }
    }), { numRuns: RUNS })
  })

  test('wrong types for keys and values, Promise and Sync', async () => {
    await fc.assert(fc.asyncProperty(anything, anything, async (key, value) => {
      await clear(() => client.set(key, value))
      await clear(() => client.get(key))
      await clear(() => client.delete(key))
      await clear(() => client.vdel(key, value))
      clearSync(() => client.setSync(key, value))
      clearSync(() => client.getSync(key))
    }), { numRuns: RUNS })
  })

  test('options out of range or of the wrong type', async () => {
    const options = fc.record({
      timeout: number, expiry: number, condition: fc.oneof(fc.constantFrom('nx', 'nex', 'always', 'NX'), anything),
      fencingToken: anything, persist: anything, extra: anything,
    }, { requiredKeys: [] })
    await fc.assert(fc.asyncProperty(fc.oneof(options, anything), async (opts) => {
      await clear(() => client.set('opts', 'v', opts))
      await clear(() => client.get('opts', opts))
      await clear(() => client.delete('opts', opts))
      clearSync(() => client.setSync('opts', 'v', opts))
    }), { numRuns: RUNS })
  })

  test('lock arguments', async () => {
    await fc.assert(fc.asyncProperty(anything, fc.record({ ttl: number, timeout: number, autoRenew: anything }, { requiredKeys: [] }), async (name, opts) => {
      const made = clearSync(() => client.createLock(name, opts))
      if (made.ok) {
        const guard = await clear(() => made.value.tryLock())
        if (guard.ok && guard.value) await guard.value.release()
      }
    }), { numRuns: RUNS })
  })

  test('connect options out of range', async () => {
    const names = ['host', 'port', 'keepAlive', 'sessionExpiry', 'defaultTimeout', 'reconnectInitialDelay', 'reconnectMaxDelay', 'reconnectMaxAttempts', 'reconnectMaxElapsed',
      'maxPacketSize', 'maxInFlight', 'clientId', 'caFile', 'username', 'password', 'passwordFile', 'satTokenFile', 'cleanStart', 'tls', 'noSuchOption']
    await fc.assert(fc.asyncProperty(fc.dictionary(fc.constantFrom(...names), fc.oneof(number, anything), { maxKeys: 3 }), async (opts) => {
      // Port 1 on loopback refuses at once; a short timeout bounds the attempt anyway.
      const result = await clear(() => Client.connect({ host: '127.0.0.1', port: 1, defaultTimeout: 1000, ...opts }))
      if (result.ok) await result.value.close()
    }), { numRuns: 60 })
  })

  test('objects that throw from their getters and conversions, proxies, shared and detached buffers', async () => {
    const boom = () => { throw new EvalError('boom from user code') }
    const throwing = { get timeout () { boom() }, get persist () { boom() }, toString: boom, valueOf: boom, [Symbol.toPrimitive]: boom }
    const proxy = new Proxy({}, { get: boom, has: boom, ownKeys: boom, getOwnPropertyDescriptor: boom })
    const shared = new Uint8Array(new SharedArrayBuffer(16))
    const detached = new Uint8Array(8)
    structuredClone(detached.buffer, { transfer: [detached.buffer] })
    const odd = [throwing, proxy, shared, detached, new Uint8Array(new ArrayBuffer(8), 4, 0), Object.create(null)]
    for (const value of odd) {
      for (const call of [() => client.set(value, 'v'), () => client.set('k', value), () => client.get(value),
        () => client.set('k', 'v', value), () => client.setSync('k', 'v', value), () => Client.connect(value)]) {
        try {
          const result = await call()
          if (result && typeof result.close === 'function') await result.close()
        } catch (error) {
          // The caller's own exception may come through, or a clear error: never a crash.
          assert.ok(error instanceof EvalError || isClear(error), `unclear failure: ${error?.stack ?? error}`)
        }
      }
    }
  })

  test('worker threads terminated in the middle of calls and observations', async () => {
    const { Worker } = await import('node:worker_threads')
    const source = `
      const { workerData } = require('node:worker_threads')
      const { Client } = require(workerData.pkg)
      ;(async () => {
        const client = await Client.connect(workerData.options)
        client.observe('worker-key')
        for (let i = 0; ; i++) {
          await client.set('worker-key', String(i))
          client.getSync('worker-key')
        }
      })()
    `
    const pkgPath = new URL('index.js', pkg).pathname
    for (let round = 0; round < 5; round++) {
      const workers = Array.from({ length: 4 }, () =>
        new Worker(source, { eval: true, workerData: { pkg: pkgPath, options: server.connectOptions } }))
      await new Promise((resolve) => setTimeout(resolve, 300))
      const codes = await Promise.all(workers.map((w) => w.terminate()))
      assert.equal(codes.length, 4)
    }
    // The process and the main thread's client are fine.
    assert.ok((await client.set('after-workers', 'v')).applied)
  })

  test('huge and empty values', async () => {
    assert.ok((await client.set('empty', Buffer.alloc(0))).applied)
    assert.equal((await client.get('empty')).value.length, 0)
    const big = Buffer.alloc(3 * 1024 * 1024, 7)
    assert.ok((await client.set('big', big)).applied)
    assert.deepEqual((await client.get('big')).value, big)
    const tooBig = await clear(() => client.set('too-big', Buffer.alloc(5 * 1024 * 1024)))
    assert.equal(tooBig.ok, false)
  })

  test('every call after close fails with STATESTORE_CLOSED', async () => {
    const closed = await Client.connect(server.connectOptions)
    await closed.close()
    const calls = [
      () => closed.set('k', 'v'), () => closed.get('k'), () => closed.delete('k'), () => closed.vdel('k', 'v'),
      async () => { for await (const _ of closed.keys('*')) { /* drain */ } },
      async () => { await closed.observe('k').ready }, () => closed.unobserve('k'), () => closed.lock('l', { ttl: 1000 }),
      () => closed.lease('l', 'me').tryAcquire({ ttl: 1000 }), () => closed.election('e', 'me', { ttl: 1000 }).tryCampaign(),
      async () => closed.setSync('k', 'v'), async () => closed.getSync('k'),
    ]
    for (const call of calls) {
      await assert.rejects(call, (error) => error.code === 'STATESTORE_CLOSED', String(call))
    }
    await closed.close() // idempotent
  })

  test('close while many calls are in flight', async () => {
    for (let round = 0; round < 20; round++) {
      const racing = await Client.connect(server.connectOptions)
      const observation = racing.observe('race')
      await observation.ready
      const calls = []
      for (let i = 0; i < 200; i++) calls.push(racing.set(`race${i}`, 'v'), racing.get(`race${i}`))
      const closing = racing.close()
      const results = await Promise.allSettled([...calls, closing])
      for (const result of results) {
        if (result.status === 'rejected') assert.equal(result.reason.code, 'STATESTORE_CLOSED', String(result.reason))
      }
      const end = await observation.next()
      assert.equal(end.done, true, 'the observation ended with the client')
    }
  })
})

describe('malicious server', () => {
  let hostile
  let port
  before(async () => {
    const binary = process.env.CHAOS_BIN
    assert.ok(binary, 'CHAOS_BIN (the statestore-chaos binary) is not set: run scripts/test-chaos.sh')
    hostile = spawn(binary, ['hostile', '--for', '600s'], { stdio: ['pipe', 'pipe', 'inherit'] })
    const lines = createInterface({ input: hostile.stdout })
    let timer
    const [line] = await Promise.race([
      new Promise((resolve) => lines.once('line', (l) => resolve([l]))),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('statestore-chaos hostile did not start')), 30000) }),
    ]).finally(() => clearTimeout(timer))
    assert.match(line, /^hostile ready on /)
    port = Number(line.trim().split(':').pop())
  })
  after(async () => {
    // Closing stdin stops it and its Mosquitto; killed if it has not ended in 10 s.
    if (!hostile) return
    const exited = new Promise((resolve) => hostile.once('exit', resolve))
    hostile.stdin.end()
    const timer = setTimeout(() => hostile.kill('SIGKILL'), 10000)
    await exited
    clearTimeout(timer)
  })

  function judge (call, result, took) {
    const what = `${call.op} ${call.key}`
    assert.ok(took < catalogue.timeout_ms + 5000, `${what} took ${took} ms`)
    const code = result.ok ? 'OK' : result.error.code?.replace(/^STATESTORE_/, '')
    assert.ok(call.expect.includes(code), `${what}: ${result.ok ? 'ok' : result.error}, expected ${call.expect}`)
    const value = result.ok ? result.value?.value : null
    if (value) {
      if (call.value_len !== undefined) assert.equal(value.length, call.value_len, what)
      if (call.value_hex !== undefined) assert.equal(Buffer.from(value).toString('hex'), call.value_hex, what)
    }
  }

  const ops = {
    get: (c, k, sync) => (sync ? c.getSync(k) : c.get(k)),
    set: (c, k, sync) => (sync ? c.setSync(k, 'v') : c.set(k, 'v')),
    delete: (c, k, sync) => (sync ? c.deleteSync(k) : c.delete(k)),
  }

  for (const sync of [false, true]) {
    test(`the catalogue, ${sync ? 'Sync twins' : 'Promise methods'}`, async () => {
      const client = await Client.connect({ host: '127.0.0.1', port, defaultTimeout: catalogue.timeout_ms })
      for (const call of [...catalogue.calls, catalogue.after]) {
        const start = Date.now()
        const result = await clear(async () => ops[call.op](client, call.key, sync))
        judge(call, result, Date.now() - start)
      }
      await client.close()
    })
  }

  test('a notification storm with broken notifications delivers exactly the valid ones', async () => {
    const client = await Client.connect({ host: '127.0.0.1', port, defaultTimeout: catalogue.timeout_ms })
    const { notify } = catalogue
    const observation = client.observe(notify.key)
    const sets = []
    const deadline = setTimeout(() => observation.close(), 60000)
    for await (const event of observation) {
      assert.equal(event.kind, 'set')
      sets.push(event.value)
      if (event.value.toString() === notify.final) break
    }
    clearTimeout(deadline)
    assert.equal(sets.length, notify.storm + 2)
    assert.equal(sets[0].length, notify.huge_len)
    assert.deepEqual(sets.slice(1, -1).map(String), Array.from({ length: notify.storm }, (_, n) => String(n)))
    await client.close()
  })
})
