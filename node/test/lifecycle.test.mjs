// Shutdown: close with calls in flight settles every Promise; a process exits by itself after
// close(); a process that ends (or calls process.exit) with clients, observations and calls
// still open exits cleanly with status 0 within 2 s, its clients closed as close() does.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { after, before, test } from 'node:test'

import { Client, ErrorCodes } from 'mqtt-statestore'
import { deadline, serve, startLocalServer, unique } from './helpers.mjs'

const entry = createRequire(import.meta.url).resolve('mqtt-statestore')
let server
let writer

before(async () => {
  server = await startLocalServer()
  writer = await Client.connect(server.connectOptions)
})
after(async () => {
  await writer?.close()
  await server?.stop()
})

/** Runs `body` in a child Node process, `options` (the local server's by default) in scope; resolves { code, signal, ms, stderr }. */
function child(body, options = server.connectOptions) {
  const source = `
const { Client } = require(${JSON.stringify(entry)})
const options = ${JSON.stringify(options)}
;(async () => { ${body} })().catch((e) => { console.error(e); process.exit(3) })
`
  const started = Date.now()
  const proc = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  let stdout = ''
  proc.stderr.on('data', (d) => (stderr += d))
  proc.stdout.on('data', (d) => (stdout += d))
  return {
    proc,
    stdout: () => stdout,
    done: new Promise((resolve) => {
      proc.once('exit', (code, signal) => resolve({ code, signal, ms: Date.now() - started, stderr, stdout }))
    }),
  }
}

/** Waits for the child to print `marker`, then measures how long it takes to exit. */
async function exitsWithin(run, marker, ms) {
  await deadline(
    new Promise((resolve) => {
      const check = () => (run.stdout().includes(marker) ? resolve() : setTimeout(check, 10))
      check()
    }),
    15_000,
    `child printing ${marker}`,
  )
  const from = Date.now()
  const exit = await deadline(run.done, 15_000, 'child exit').catch((error) => {
    run.proc.kill('SIGKILL')
    throw error
  })
  return { ...exit, afterMarker: Date.now() - from, limit: ms }
}

function assertClean(exit) {
  assert.equal(exit.signal, null, `killed by ${exit.signal}: ${exit.stderr}`)
  assert.equal(exit.code, 0, `exit status ${exit.code}: ${exit.stderr}`)
  assert.ok(exit.afterMarker < exit.limit, `exited ${exit.afterMarker} ms after its work ended (limit ${exit.limit}): ${exit.stderr}`)
}

test('close with calls in flight: every Promise settles', { timeout: 30_000 }, async () => {
  const client = await Client.connect(server.connectOptions)
  const key = unique('inflight')
  const observation = client.observe(key)
  await observation.ready
  const pendingNext = observation.next()
  const calls = []
  for (let i = 0; i < 300; i++) {
    calls.push(client.set(`${key}:${i}`, 'v'))
    calls.push(client.get(`${key}:${i}`))
  }
  const closing = client.close()
  const results = await deadline(Promise.allSettled(calls), 20_000, 'calls after close')
  for (const r of results) {
    if (r.status === 'rejected') assert.equal(r.reason.code, ErrorCodes.CLOSED, r.reason.message)
  }
  await deadline(closing, 10_000, 'close')
  assert.deepEqual(await deadline(pendingNext, 10_000, 'pending next()'), { done: true, value: undefined })
  await assert.rejects(client.set(key, 'late'), { code: ErrorCodes.CLOSED })
})

test('a process exits by itself after close(), observations included', { timeout: 30_000 }, async () => {
  const run = child(`
    const client = await Client.connect(options)
    const a = client.observe('exit-a'); await a.ready
    a.on('set', () => {})
    const b = client.observe('exit-b'); await b.ready
    const loop = (async () => { for await (const e of b) {} })()
    await client.set('exit-a', 'x')
    await client.close()
    await loop
    console.log('closed')
  `)
  assertClean(await exitsWithin(run, 'closed', 2_000))
})

test('a process ending with open clients, observations and a held lock exits with 0 in 2 s', { timeout: 30_000 }, async () => {
  const key = unique('open')
  // Listeners keep a process alive while their observation is open (like a socket's): they are
  // closed here, the rest stays open while events keep arriving.
  const run = child(`
    const clients = await Promise.all([1, 2, 3].map(() => Client.connect(options)))
    const listening = []
    for (const c of clients) {
      const o = c.observe(${JSON.stringify(key)}); await o.ready
      o.on('set', () => {})
      listening.push(o)
      const pulled = c.observe(${JSON.stringify(key)}); await pulled.ready
    }
    const lock = await clients[0].lock(${JSON.stringify(key)} + '-lock', { ttl: 5000 })
    clients[1].lease(${JSON.stringify(key)} + '-lease', 'me')
    await clients[2].set(${JSON.stringify(key)}, 'v')
    for (const o of listening) o.close()
    console.log('open')
  `)
  // Events keep arriving while the child tears down its environment.
  const writing = setInterval(() => writer.set(key, String(Date.now())).catch(() => {}), 2)
  try {
    assertClean(await exitsWithin(run, 'open', 2_000))
  } finally {
    clearInterval(writing)
  }
})

test('process.exit with calls in flight and events flowing exits with 0', { timeout: 30_000 }, async () => {
  const key = unique('exit-now')
  const run = child(`
    const client = await Client.connect(options)
    const o = client.observe(${JSON.stringify(key)}); await o.ready
    o.on('set', () => {})
    for (let i = 0; i < 200; i++) client.set(${JSON.stringify(key)}, String(i)).catch(() => {})
    console.log('exiting')
    setImmediate(() => process.exit(0))
  `)
  assertClean(await exitsWithin(run, 'exiting', 2_000))
})

test('process.exit closes the clients still open: the sessions kept hold no subscription', { timeout: 60_000 }, async () => {
  const broker = await serve('embedded')
  try {
    const id = unique('exit-closes')
    const run = child(
      `
      const client = await Client.connect({ ...options, clientId: ${JSON.stringify(id)} })
      const o = client.observe('k'); await o.ready
      await client.get('k')
      console.log('exiting')
      process.exit(0)
    `,
      { host: broker.host, port: broker.port },
    )
    assertClean(await exitsWithin(run, 'exiting', 2_000))
    assert.equal(await broker.leftover(id), null)
  } finally {
    await broker.close()
  }
})

test('an exit listener the program adds after its first client still finds it open', { timeout: 60_000 }, async () => {
  const broker = await serve('embedded')
  try {
    const id = unique('exit-listener')
    const key = unique('exit-listener-key')
    const run = child(
      `
      const client = await Client.connect({ ...options, clientId: ${JSON.stringify(id)} })
      await client.get('k')
      process.on('exit', () => {
        client.setSync(${JSON.stringify(key)}, 'written at exit')
        console.log('written')
      })
      await new Promise((resolve) => setImmediate(resolve))
      console.log('exiting')
      process.exit(0)
    `,
      { host: broker.host, port: broker.port },
    )
    assertClean(await exitsWithin(run, 'exiting', 2_000))
    assert.match(run.stdout(), /written/)
    const reader = await Client.connect({ host: broker.host, port: broker.port })
    try {
      assert.equal((await reader.get(key))?.value.toString(), 'written at exit')
    } finally {
      await reader.close()
    }
    // The library's own listener still ran, after the program's.
    assert.equal(await broker.leftover(id), null)
  } finally {
    await broker.close()
  }
})

test('a pending for-await keeps the process alive until its client closes', { timeout: 30_000 }, async () => {
  const run = child(`
    const client = await Client.connect(options)
    const o = client.observe('alive'); await o.ready
    setTimeout(() => { console.log('closing'); client.close() }, 300)
    for await (const e of o) {}
    console.log('ended')
  `)
  const exit = await exitsWithin(run, 'closing', 2_000)
  assertClean(exit)
  assert.match(exit.stdout, /ended/)
})

test('an observation with listeners keeps the process alive until an event closes it', { timeout: 30_000 }, async () => {
  const key = unique('listening')
  const run = child(`
    const client = await Client.connect(options)
    const o = client.observe(${JSON.stringify(key)}); await o.ready
    o.on('set', (e) => {
      console.log('got ' + e.value.toString())
      o.close()
    })
    console.log('listening')
  `)
  // Nothing but the listener holds the child: it must still be there when the event comes,
  // and exit by itself once its handler closed the observation (its client left open).
  await deadline(
    new Promise((resolve) => {
      const check = () => (run.stdout().includes('listening') ? resolve() : setTimeout(check, 10))
      check()
    }),
    15_000,
    'child listening',
  )
  await writer.set(key, 'hello')
  const exit = await deadline(run.done, 15_000, 'child exit').catch((error) => {
    run.proc.kill('SIGKILL')
    throw error
  })
  assert.equal(exit.code, 0, exit.stderr)
  assert.match(exit.stdout, /got hello/, `the child exited before the notification came: ${exit.stdout}`)
})

test('a lease loss listener keeps the process alive until the lease is released', { timeout: 30_000 }, async () => {
  const run = child(`
    const client = await Client.connect(options)
    const lease = client.lease('keepalive-lease-' + process.pid, 'me')
    await lease.acquire({ ttl: 10000 })
    lease.lossEvents().on('lost', () => console.log('lost'))
    setImmediate(async () => { await lease.release(); console.log('released') })
  `)
  const exit = await deadline(run.done, 15_000, 'child exit').catch((error) => {
    run.proc.kill('SIGKILL')
    throw error
  })
  assert.equal(exit.code, 0, exit.stderr)
  assert.match(exit.stdout, /released/)
})
