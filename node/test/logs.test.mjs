// setLogHandler: core's log records delivered on the JavaScript thread. A real record (the
// connection to the broker lost), the level filter, null stopping delivery, no secret or value in any
// record, and a process with a handler set exiting by itself.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { after, test } from 'node:test'
import { Worker } from 'node:worker_threads'

import { Client, ErrorCodes, setLogHandler } from 'mqtt-statestore'
import { deadline, nextEvent, startLocalServer, unique } from './helpers.mjs'

const T = { timeout: 60_000 }
const QUICK = { reconnectInitialDelay: 20, reconnectMaxDelay: 200 }
const LOST = 'connection to the broker lost'

after(() => setLogHandler(null))

/** Collects records; `waitFor(pred)` resolves with the first record matching `pred`. */
function collector() {
  const records = []
  const waiters = []
  const handler = (record) => {
    records.push(record)
    for (const w of [...waiters]) {
      if (w.pred(record)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(record)
      }
    }
  }
  const waitFor = (pred, what) => {
    const found = records.find(pred)
    if (found) return Promise.resolve(found)
    return deadline(new Promise((resolve) => waiters.push({ pred, resolve })), 20_000, what)
  }
  return { records, handler, waitFor }
}

/** Stops `server` and starts it again on its port; resolves once `observation` resynced. */
async function bounce(server, observation, options = {}) {
  const { port } = server
  await server.stop()
  const restarted = await startLocalServer({ ...options, port })
  const event = await nextEvent(observation, 20_000)
  assert.equal(event.kind, 'resynced')
  return restarted
}

/**
 * Sets a collecting handler at `level`, connects a client observing a key to a local server
 * (with `credentials`), and runs `body` with the collector, the client, `outage()` (stops and
 * restarts the server; resolves once the client resynced) and `server()`; then cleans up.
 */
async function withOutages(level, credentials, body) {
  const logs = collector()
  setLogHandler(logs.handler, { level })
  let server = await startLocalServer(credentials)
  const client = await Client.connect({ ...server.connectOptions, ...credentials, ...QUICK })
  try {
    const observation = client.observe(unique('k'))
    await observation.ready
    const outage = async () => {
      server = await bounce(server, observation, credentials)
    }
    return await body({ ...logs, client, outage, server: () => server })
  } finally {
    setLogHandler(null)
    await client.close()
    await server.stop()
  }
}

test('a lost connection is a warn record from the client event loop', T, async () => {
  await withOutages('info', {}, async ({ records, waitFor, outage }) => {
    await outage()
    const record = await waitFor((r) => r.message.includes(LOST), 'the lost-connection record')
    assert.equal(record.level, 'warn')
    assert.equal(record.target, 'statestore::client::event_loop')
    assert.match(record.message, /error=/, 'the fields follow the message')
    assert.deepEqual(Object.keys(record).sort(), ['fields', 'level', 'message', 'target'])
    assert.equal(typeof record.fields.error, 'string', 'the fields also apart')
    assert.ok(record.message.includes(`error=${record.fields.error}`))
    // 'info': the debug records of the failed reconnection attempts were not delivered.
    for (const r of records) assert.ok(['error', 'warn', 'info'].includes(r.level), `${r.level}: ${r.message}`)
  })
})

test('null stops delivery', T, async () => {
  await withOutages('debug', {}, async ({ records, waitFor, outage }) => {
    await outage()
    await waitFor((r) => r.message.includes(LOST), 'the first lost-connection record')
    setLogHandler(null)
    const seen = records.length
    // Two more outages: each logs a lost connection before its resync is delivered.
    await outage()
    await outage()
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(records.length, seen, `delivered after null: ${JSON.stringify(records.slice(seen))}`)
    // And a new handler gets records again.
    const again = collector()
    setLogHandler(again.handler, { level: 'warn' })
    await outage()
    await again.waitFor((r) => r.message.includes(LOST), 'a record after setting a handler again')
    assert.equal(records.length, seen)
  })
})

test('no password text in any record, even at trace; trace shows each request, never its value', T, async () => {
  const secret = 's3cret-PaSsWoRd-42'
  const value = 'a-value-that-no-record-shows'
  const credentials = { username: 'alice', password: secret }
  const records = await withOutages('trace', credentials, async ({ records, waitFor, outage, client, server }) => {
    const key = unique('k')
    await client.set(key, value)
    const sent = await waitFor((r) => r.message.startsWith('request sent') && r.fields.verb === 'SET', 'the SET request record')
    assert.equal(sent.level, 'trace')
    assert.equal(sent.fields.key, key)
    await waitFor((r) => r.message.startsWith('response received') && r.fields.response === 'OK', 'the SET response record')
    await outage()
    await waitFor((r) => r.message.includes(LOST), 'the lost-connection record')
    await assert.rejects(
      Client.connect({ ...server().connectOptions, username: 'alice', password: secret + 'x', defaultTimeout: 3_000 }),
      { code: ErrorCodes.CONNECTION },
    )
    return records
  })
  assert.ok(records.length > 0)
  for (const r of records) {
    assert.ok(!JSON.stringify(r).includes(secret), `${r.target}: ${r.message}`)
    assert.ok(!JSON.stringify(r).includes(value), `${r.target}: ${r.message}`)
  }
})

test('each worker thread has its own handler; a terminated worker\'s is removed', T, async () => {
  const worker = new Worker(
    `
const { parentPort } = require('node:worker_threads')
const { setLogHandler } = require('mqtt-statestore')
setLogHandler((record) => parentPort.postMessage(record), { level: 'warn' })
parentPort.on('message', () => {}) // stays alive (the handler alone does not keep it)
parentPort.postMessage('ready')
`,
    { eval: true },
  )
  const fromWorker = []
  let workerSaw
  const seenByWorker = new Promise((resolve) => (workerSaw = resolve))
  worker.on('message', (m) => {
    if (m === 'ready') return
    fromWorker.push(m)
    if (m.message.includes(LOST)) workerSaw(m)
  })
  await deadline(new Promise((resolve) => worker.once('message', resolve)), 20_000, 'worker ready')
  try {
    await withOutages('warn', {}, async ({ records, waitFor, outage }) => {
      await outage()
      await waitFor((r) => r.message.includes(LOST), 'the record on the main thread')
      const record = await deadline(seenByWorker, 20_000, 'the record in the worker')
      assert.equal(record.target, 'statestore::client::event_loop')
      await worker.terminate()
      await new Promise((resolve) => setImmediate(resolve))
      // The worker's environment is gone: records keep flowing to the main thread only.
      const seen = fromWorker.length
      const lost = (r) => r.message.includes(LOST)
      const count = records.filter(lost).length
      await outage()
      await waitFor(() => records.filter(lost).length > count, 'a second record on the main thread')
      assert.equal(fromWorker.length, seen)
    })
  } finally {
    await worker.terminate()
  }
})

test('wrong types are TypeErrors, an unknown level is core\'s INVALID_ARGUMENT listing the levels', T, () => {
  assert.throws(() => setLogHandler('log'), { code: 'ERR_INVALID_ARG_TYPE', message: /handler/ })
  assert.throws(() => setLogHandler(undefined), { code: 'ERR_INVALID_ARG_TYPE', message: /handler/ })
  for (const handler of [() => {}, null]) {
    assert.throws(() => setLogHandler(handler, { level: 'loud' }), {
      code: 'STATESTORE_INVALID_ARGUMENT',
      message: /options\.level: "loud" is not a log level; use one of 'error', 'warn', 'info', 'debug', 'trace'/,
    })
  }
  assert.throws(() => setLogHandler(() => {}, { level: 3 }), { code: 'ERR_INVALID_ARG_TYPE', message: /options\.level/ })
  assert.throws(() => setLogHandler(() => {}, { levle: 'info' }), { code: 'ERR_INVALID_ARG_VALUE', message: /levle/ })
  setLogHandler(null) // nothing set: fine
})

test('a process with a handler set exits by itself, records flowing', T, async () => {
  const server = await startLocalServer()
  const entry = createRequire(import.meta.url).resolve('mqtt-statestore')
  const source = `
const { Client, setLogHandler } = require(${JSON.stringify(entry)})
let n = 0
setLogHandler(() => { n += 1 }, { level: 'trace' })
;(async () => {
  const client = await Client.connect(${JSON.stringify({ ...server.connectOptions, ...QUICK })})
  for (let i = 0; i < 50; i++) await client.set('exit-' + i, 'v')
  console.log('done ' + n)
})().catch((e) => { console.error(e); process.exit(3) })
`
  try {
    const child = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const exit = await deadline(new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))), 20_000, 'child exit').catch((e) => {
      child.kill('SIGKILL')
      throw e
    })
    assert.deepEqual(exit, { code: 0, signal: null }, err)
    assert.match(out, /done \d+/)
  } finally {
    await server.stop()
  }
})
