// Real parts for the tests: the in-process local state store, and the test kit's servers
// (Mosquitto, alone or with the state store attached; `serve`). Every wait has a deadline.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'
import { after, before } from 'node:test'

import { Client } from 'mqtt-statestore'
import { startLocalServer } from 'mqtt-statestore/testing'

export { Client, startLocalServer }

const here = path.dirname(fileURLToPath(import.meta.url))
/** The repository (tests also run from a copy in a temp project: STATESTORE_REPO says where). */
export const repo = process.env.STATESTORE_REPO || path.resolve(here, '..', '..')

/** Rejects after `ms` with a message naming `what`. */
export function deadline(promise, ms, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

/**
 * The local state store and one client for a test file: started before its tests, closed and
 * stopped after them. Read `server` and `client` from the returned object inside tests.
 */
export function sharedServer() {
  const shared = { server: undefined, client: undefined }
  before(async () => {
    shared.server = await startLocalServer()
    shared.client = await Client.connect(shared.server.connectOptions)
  })
  after(async () => {
    await shared.client?.close()
    await shared.server?.stop()
  })
  return shared
}

let counter = 0
/** A key unique to this process and call, so tests sharing a server never collide. */
export function unique(prefix = 'k') {
  counter += 1
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** The test kit's launcher (`cargo build -p statestore-testkit`, built by scripts/test-node.sh). */
export function testkitBinary() {
  if (process.env.STATESTORE_TESTKIT_BIN) return process.env.STATESTORE_TESTKIT_BIN
  const target = process.env.CARGO_TARGET_DIR || path.join(repo, 'target')
  for (const profile of ['debug', 'release']) {
    const candidate = path.join(target, profile, 'statestore-testkit')
    if (fs.existsSync(candidate)) return candidate
  }
  throw new Error('statestore-testkit not found: run `cargo build -p statestore-testkit` or set STATESTORE_TESTKIT_BIN')
}

/**
 * `statestore-testkit serve KIND` (tests/testkit), the servers every suite starts: 'embedded',
 * 'mosquitto' (Mosquitto with the state store attached) or 'mosquitto-alone'. It ends when its
 * standard input, held by this process, closes. Resolves { host, port, restart(), leftover(),
 * close() }: `restart()` restarts Mosquitto on the same port, its sessions lost.
 */
export async function serve(kind) {
  const child = spawn(testkitBinary(), ['serve', kind], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const queue = []
  let waiter = null
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    if (waiter) waiter(line)
    else queue.push(line)
    waiter = null
  })
  const nextLine = () => (queue.length > 0 ? Promise.resolve(queue.shift()) : new Promise((resolve) => (waiter = resolve)))
  const answer = async (expected) => {
    const line = await deadline(
      Promise.race([nextLine(), exited.then((code) => `exited with ${code}`)]),
      30_000,
      `statestore-testkit serve ${kind}: ${expected}`,
    )
    if (!line.startsWith(expected)) throw new Error(`statestore-testkit serve ${kind}: expected ${expected}, got ${line}`)
    return line
  }
  const port = Number((await answer('ready on ')).split(':').pop())
  return {
    host: '127.0.0.1',
    port,
    async restart() {
      child.stdin.write('restart\n')
      await answer('restarted')
    },
    /** Whether the session kept for the gone client `clientId` still holds its subscriptions: the topic that reached it, or null. */
    async leftover(clientId) {
      child.stdin.write(`leftover ${clientId}\n`)
      const topic = (await answer('leftover ')).slice('leftover '.length)
      return topic === 'none' ? null : topic
    },
    async close() {
      child.stdin.end()
      await deadline(exited, 10_000, `statestore-testkit serve ${kind} ending`).catch((error) => {
        child.kill('SIGKILL')
        throw error
      })
    },
  }
}

/** Waits for the next event of `observation` (async iterator) within `ms`. */
export async function nextEvent(observation, ms = 10_000) {
  const r = await deadline(observation.next(), ms, 'next event')
  if (r.done) throw new Error('the observation ended')
  return r.value
}
