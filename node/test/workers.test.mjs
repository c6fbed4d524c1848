// The addon in worker_threads: each worker connects its own client, uses the Promise and the
// Sync API, and the workers contend for one lock with a fenced counter.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Worker } from 'node:worker_threads'

import { Client } from 'mqtt-statestore'
import { deadline, startLocalServer, unique } from './helpers.mjs'

let server
before(async () => {
  server = await startLocalServer()
})
after(async () => {
  await server?.stop()
})

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const { Client } = require('mqtt-statestore')
;(async () => {
  const { host, port, name, key, rounds, closeClient } = workerData
  const client = await Client.connect({ host, port })
  const lock = client.createLock(name, { ttl: 10000, timeout: 60000 })
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      await lock.update(key, (old) => String(Number(old ? old.toString() : '0') + 1))
    } else {
      lock.updateSync(key, (old) => String(Number(old ? old.toString() : '0') + 1))
    }
  }
  const observation = client.observe(key)
  await observation.ready
  if (closeClient) await client.close()
  parentPort.postMessage('done')
})().catch((error) => {
  parentPort.postMessage('error: ' + error.stack)
})
`

function runWorker(data) {
  const worker = new Worker(WORKER, { eval: true, workerData: data })
  const result = new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  const exited = new Promise((resolve) => worker.once('exit', resolve))
  return { result, exited }
}

test('4 workers contend for a lock; counter exact; workers exit', { timeout: 90_000 }, async () => {
  const name = unique('worker-lock')
  const key = unique('worker-counter')
  // Half close their client, half leave it open: the worker's teardown must cope with both.
  const workers = Array.from({ length: 4 }, (_, i) => runWorker({ ...server.connectOptions, name, key, rounds: 4, closeClient: i % 2 === 0 }))
  const results = await deadline(Promise.all(workers.map((w) => w.result)), 60_000, 'workers')
  assert.deepEqual(results, ['done', 'done', 'done', 'done'])
  // A worker with an open client and observation still exits (nothing keeps its loop alive).
  const codes = await deadline(Promise.all(workers.map((w) => w.exited)), 10_000, 'worker exit')
  assert.deepEqual(codes, [0, 0, 0, 0])
  const client = await Client.connect(server.connectOptions)
  assert.equal((await client.get(key)).value.toString(), '16')
  await client.close()
})

test('a terminated worker with calls in flight does not crash the process', { timeout: 30_000 }, async () => {
  const source = `
const { parentPort, workerData } = require('node:worker_threads')
const { Client } = require('mqtt-statestore')
;(async () => {
  const client = await Client.connect(workerData)
  const key = 'terminated-' + process.pid
  client.observe(key).on('set', () => {})
  for (let i = 0; i < 200; i++) client.set(key, String(i)).catch(() => {})
  parentPort.postMessage('busy')
})()`
  const worker = new Worker(source, { eval: true, workerData: server.connectOptions })
  await deadline(new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  }), 10_000, 'worker busy')
  await deadline(worker.terminate(), 10_000, 'terminate')
  // The main thread's own client still works afterwards.
  const client = await Client.connect(server.connectOptions)
  await client.set(unique('after-terminate'), 'ok')
  await client.close()
})

/**
 * Runs `main` (an async function body) in a child process whose worker runs `worker`; the
 * worker posts 'blocking' right before its blocking call. Resolves { code, signal, stdout,
 * stderr }; the child is killed if it has not exited within the deadline.
 */
async function childWithBlockedWorker(worker, main) {
  const { spawn } = await import('node:child_process')
  const { createRequire } = await import('node:module')
  const entry = createRequire(import.meta.url).resolve('mqtt-statestore')
  const source = `
const { Worker } = require('node:worker_threads')
const { Client } = require(${JSON.stringify(entry)})
const options = ${JSON.stringify(server.connectOptions)}
const WORKER = ${JSON.stringify(`
const { parentPort, workerData: options } = require('node:worker_threads')
const { Client } = require(${JSON.stringify(entry)})
const client = Client.connectSync(options)
${worker}`)}
;(async () => {
  const worker = new Worker(WORKER, { eval: true, workerData: options })
  worker.on('error', (e) => { console.error('worker error', e); process.exit(4) })
  await new Promise((resolve) => worker.once('message', resolve))
  ${main}
})().catch((e) => { console.error(e); process.exit(3) })
`
  const proc = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (d) => (stdout += d))
  proc.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal, stdout, stderr })))
  return deadline(exited, 20_000, 'child with a blocked worker').catch((error) => {
    proc.kill('SIGKILL')
    throw error
  })
}

test('worker.terminate() ends a worker blocked in nextSync() with no timeout', { timeout: 60_000 }, async () => {
  const exit = await childWithBlockedWorker(
    `const o = client.observeSync('blocked-next-' + process.pid)
parentPort.postMessage('blocking')
o.nextSync()`,
    `const code = await worker.terminate()
console.log('terminated ' + code)
process.exitCode = 0`,
  )
  assert.equal(exit.signal, null, exit.stderr)
  assert.equal(exit.code, 0, exit.stderr)
  assert.match(exit.stdout, /terminated 1/)
})

test('process.exit() in the main thread ends a worker blocked in lockSync()', { timeout: 60_000 }, async () => {
  const holder = await Client.connect(server.connectOptions)
  const name = unique('blocked-lock')
  const guard = await holder.lock(name, { ttl: 30_000 })
  try {
    const exit = await childWithBlockedWorker(
      `parentPort.postMessage('blocking')
client.lockSync(${JSON.stringify(name)}, { ttl: 10000 })`,
      `console.log('exiting')
process.exit(0)`,
    )
    assert.equal(exit.signal, null, exit.stderr)
    assert.equal(exit.code, 0, exit.stderr)
    assert.match(exit.stdout, /exiting/)
  } finally {
    await guard.release()
    await holder.close()
  }
})
