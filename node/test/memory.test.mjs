// Memory of synchronous programs: values returned to a loop of `…Sync` calls that never yields
// to the event loop are freed by garbage collection, not by finalizers waiting for the event
// loop (external Buffers held about 1.3 KiB per 1 KiB value read: +39 MiB over 30 000 getSync).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { after, before, test } from 'node:test'

import { deadline, startLocalServer } from './helpers.mjs'

const entry = createRequire(import.meta.url).resolve('mqtt-statestore')
const CALLS = 30_000
// Measured on a 2-core machine: external Buffers +39 MiB, engine-owned copies +3 MiB.
const BOUND_MIB = 16
let server

before(async () => {
  server = await startLocalServer()
})
after(async () => {
  await server?.stop()
})

/** Runs `body` (with `client` connected) in a child process; resolves its JSON output. */
async function inChild(body) {
  const source = `
const { Client } = require(${JSON.stringify(entry)})
const client = Client.connectSync(${JSON.stringify(server.connectOptions)})
const rss = () => process.memoryUsage().rss / 1048576
${body}
client.closeSync()
`
  const child = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  const code = await deadline(new Promise((resolve) => child.once('exit', resolve)), 100_000, 'child').catch((e) => {
    child.kill('SIGKILL')
    throw e
  })
  assert.equal(code, 0, err)
  return JSON.parse(out)
}

test(`${CALLS} getSync of a 1 KiB value in a loop that never yields: RSS stays flat`, { timeout: 120_000 }, async () => {
  const r = await inChild(`
client.setSync('memory', Buffer.alloc(1024, 7))
let bytes = 0
for (let i = 0; i < 3000; i++) bytes += client.getSync('memory').value.length
const before = rss()
for (let i = 0; i < ${CALLS}; i++) bytes += client.getSync('memory').value.length
console.log(JSON.stringify({ growth: rss() - before, bytes }))
`)
  assert.equal(r.bytes, (CALLS + 3000) * 1024)
  assert.ok(r.growth < BOUND_MIB, `RSS grew by ${r.growth.toFixed(1)} MiB over ${CALLS} calls (bound ${BOUND_MIB} MiB)`)
})

test('keys and lock holders read synchronously stay flat too', { timeout: 120_000 }, async () => {
  const r = await inChild(`
const big = 'x'.repeat(1024)
for (let i = 0; i < 20; i++) client.setSync('memkeys:' + big + i, 'v')
const lock = client.createLock('memlock:' + big, { ttl: 10_000 })
const guard = lock.lockSync()
let n = 0
const round = () => {
  for (const key of client.keysSync('memkeys:*')) n += key.length
  n += lock.holderSync().length + guard.holderName.length
}
for (let i = 0; i < 100; i++) round()
const before = rss()
for (let i = 0; i < 1500; i++) round()
guard.releaseSync()
console.log(JSON.stringify({ growth: rss() - before, n }))
`)
  assert.ok(r.n > 0)
  assert.ok(r.growth < BOUND_MIB, `RSS grew by ${r.growth.toFixed(1)} MiB (bound ${BOUND_MIB} MiB)`)
})
