// Real parts for the tests: the in-process local state store, Mosquitto on a free loopback
// port, and the statestore-server binary attached to it. Every wait has a deadline.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
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

function canConnect(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

async function waitForPort(port, child, ms, what) {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`)
    if (await canConnect(port)) return
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`${what} did not listen on ${port} within ${ms} ms`)
}

function mosquittoBinary() {
  return fs.existsSync('/usr/sbin/mosquitto') ? '/usr/sbin/mosquitto' : 'mosquitto'
}

/** A Mosquitto broker on a free port; `restart()` kills it and starts it again on that port. */
export async function startMosquitto() {
  const port = await freePort()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'statestore-node-mosquitto-'))
  const conf = path.join(dir, 'mosquitto.conf')
  fs.writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\nuser root\nlog_dest stderr\nlog_type error\n`)
  let child = null
  const start = async () => {
    child = spawn(mosquittoBinary(), ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] })
    child.stderr.resume()
    await waitForPort(port, child, 10_000, 'mosquitto')
  }
  const stop = async () => {
    if (!child || child.exitCode !== null) return
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGKILL')
    await deadline(exited, 5_000, 'mosquitto exit')
  }
  await start()
  return {
    port,
    host: '127.0.0.1',
    stop,
    async restart() {
      await stop()
      await start()
    },
    async close() {
      await stop()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The statestore-server binary (built by scripts/test-node.sh). */
export function serverBinary() {
  if (process.env.STATESTORE_SERVER_BIN) return process.env.STATESTORE_SERVER_BIN
  for (const profile of ['debug', 'release']) {
    const candidate = path.join(repo, 'target', profile, 'statestore-server')
    if (fs.existsSync(candidate)) return candidate
  }
  throw new Error('statestore-server binary not found: run `cargo build -p statestore-server` or set STATESTORE_SERVER_BIN')
}

/** The statestore-server binary attached to the broker at `brokerPort`, once ready. */
export async function startServerBinary(brokerPort) {
  const child = spawn(serverBinary(), ['--broker', `mqtt://127.0.0.1:${brokerPort}`, '--log-level', 'error'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stderr.resume()
  let output = ''
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += chunk
      if (output.includes('ready')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`statestore-server exited with ${code}: ${output}`)))
  })
  await deadline(ready, 20_000, 'statestore-server ready line')
  return {
    async stop() {
      if (child.exitCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await deadline(exited, 5_000, 'statestore-server exit')
    },
  }
}

/** Waits for the next event of `observation` (async iterator) within `ms`. */
export async function nextEvent(observation, ms = 10_000) {
  const r = await deadline(observation.next(), ms, 'next event')
  if (r.done) throw new Error('the observation ended')
  return r.value
}
