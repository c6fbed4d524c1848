// The Node writers of the chaos run (the `statestore` package in node/): the writer protocol
// of tests/chaos/README.md through the Promise methods, or with `sync` through their blocking
// `…Sync` twins (each awaited once, so that observation events are handled between calls).
//
//   node writer.mjs [sync] HOST PORT LOCK COUNTER PREFIX DURATION_MS TIMEOUT_MS LOG
import { openSync, writeSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

const { Client } = await import(process.env.CHAOS_NODE_PACKAGE ?? new URL('../../../node/index.mjs', import.meta.url).href)

const OWN_KEYS = 8
const LOCK_TTL = 3000
const LOCK_WAIT = 8000
const PAUSE = 20
const QUIET_WAIT = 90000

const args = process.argv.slice(2)
const sync = args[0] === 'sync'
if (sync) args.shift()
if (args.length !== 8) {
  console.error('usage: writer.mjs [sync] HOST PORT LOCK COUNTER PREFIX DURATION_MS TIMEOUT_MS LOG')
  process.exit(2)
}
const [host, port, lockName, counter, prefix, durationMs, timeoutArg, logPath] = args
const timeoutMs = Number(timeoutArg)
const fd = openSync(logPath, 'w')
// Synchronous appends: each record is in the file as soon as it happened.
const write = (record) => writeSync(fd, JSON.stringify(record) + '\n')
const now = () => Date.now()
const text = (v) => (v == null ? null : Buffer.isBuffer(v) ? v.toString('utf8') : String(v))

function codeOf (error) {
  if (typeof error?.code === 'string' && error.code.startsWith('STATESTORE_')) {
    return { code: error.code.slice('STATESTORE_'.length), unknown: Boolean(error.outcomeUnknown) }
  }
  // Anything else (a TypeError, a crash of the wrapper) is unclear: the checker flags it.
  return { code: 'INTERNAL', unknown: false }
}

function op (name, key, start, bound, error, extra = {}) {
  const record = { t: 'op', op: name, key, start, end: now(), timeout_ms: bound, ok: !error, code: 'OK', unknown: false }
  if (error) {
    Object.assign(record, codeOf(error), { message: String(error.message) })
    delete extra.applied
  }
  write(Object.assign(record, extra))
}

async function retrying (name, key, end, attempt) {
  for (;;) {
    const start = now()
    try {
      const result = await attempt()
      op(name, key, start, timeoutMs)
      return result
    } catch (error) {
      op(name, key, start, timeoutMs, error)
      if (now() >= end) throw error
      await sleep(200)
    }
  }
}

// The calls the workload makes, through the Promise methods or the Sync twins.
const api = sync
  ? {
      set: async (c, k, v, o) => c.setSync(k, v, o),
      get: async (c, k) => c.getSync(k),
      lock: async (l) => l.lockSync(),
      release: async (g) => g.releaseSync(),
      connect: async (o) => Client.connectSync(o),
      close: async (c) => c.closeSync(),
    }
  : {
      set: (c, k, v, o) => c.set(k, v, o),
      get: (c, k) => c.get(k),
      lock: (l) => l.lock(),
      release: (g) => g.release(),
      connect: (o) => Client.connect(o),
      close: (c) => c.close(),
    }

const incr = (token, old, outcome, code) => write({ t: 'incr', token, old, new: old + 1, outcome, code, ts: now() })

async function increment (client, lock) {
  const bound = LOCK_WAIT + timeoutMs
  let start = now()
  let guard
  try {
    guard = await api.lock(lock)
    op('lock', lockName, start, bound)
  } catch (error) {
    op('lock', lockName, start, bound, error)
    return
  }
  const acquired = now()
  const token = guard.fencingToken
  let endHow = 'not_written'
  let old = null
  start = now()
  try {
    const read = await api.get(client, counter)
    op('incr_get', counter, start, timeoutMs, null, { value: read ? text(read.value) : null })
    old = read ? Number(text(read.value)) : 0
    if (!Number.isSafeInteger(old)) throw Object.assign(new Error(`counter ${text(read.value)}`), { code: 'STATESTORE_UNEXPECTED_PAYLOAD' })
  } catch (error) {
    if (old === null) op('incr_get', counter, start, timeoutMs, error)
    old = null
  }
  if (old !== null) {
    if (!guard.isHeld) {
      incr(token, old, 'failed', 'NOT_HELD')
      endHow = 'lost'
    } else {
      const next = String(old + 1)
      start = now()
      try {
        const result = await api.set(client, counter, next, { fencingToken: token, persist: true })
        op('incr_set', counter, start, timeoutMs, null, { value: next, applied: result.applied })
        incr(token, old, 'ok', 'OK')
      } catch (error) {
        op('incr_set', counter, start, timeoutMs, error, { value: next })
        const c = codeOf(error)
        incr(token, old, c.unknown ? 'unknown' : 'failed', c.code)
      }
      endHow = 'released'
    }
  }
  const released = now()
  start = now()
  try {
    await api.release(guard)
    op('release', lockName, start, timeoutMs)
  } catch (error) {
    op('release', lockName, start, timeoutMs, error)
  }
  write({ t: 'hold', token, holder: text(guard.holderName), acq: acquired, end: released, end_how: endHow })
}

write({ t: 'start', flavour: sync ? 'node-sync' : 'node', pid: process.pid, ts: now() })
const end = now() + Number(durationMs)
const stdinClosed = new Promise((resolve) => {
  process.stdin.on('end', resolve)
  process.stdin.on('close', resolve)
  process.stdin.resume()
})
const client = await retrying('connect', '', end, () =>
  api.connect({ host, port: Number(port), defaultTimeout: timeoutMs, reconnectInitialDelay: 100, reconnectMaxDelay: 1000 }))
const observation = await retrying('observe', counter, end, async () => {
  const observation = client.observe(counter)
  await observation.ready
  return observation
})
const events = (async () => {
  try {
    for await (const event of observation) {
      write({ t: 'event', kind: event.kind, value: text(event.value), ts: now() })
    }
  } catch (error) {
    write({ t: 'event_error', message: String(error?.message), ts: now() })
  }
})()
const lock = client.createLock(lockName, { ttl: LOCK_TTL, timeout: LOCK_WAIT })
for (let seq = 1; now() < end; seq++) {
  const key = `${prefix}k${seq % OWN_KEYS}`
  const value = `${key}#${seq}`
  let start = now()
  try {
    const result = await api.set(client, key, value, { persist: true })
    op('set', key, start, timeoutMs, null, { value, applied: result.applied })
  } catch (error) {
    op('set', key, start, timeoutMs, error, { value })
  }
  start = now()
  try {
    const read = await api.get(client, key)
    op('get', key, start, timeoutMs, null, { value: read ? text(read.value) : null })
  } catch (error) {
    op('get', key, start, timeoutMs, error)
  }
  if (seq % 3 === 0) await increment(client, lock)
  await sleep(PAUSE)
}
write({ t: 'quiet', ts: now() })
await Promise.race([stdinClosed, sleep(QUIET_WAIT)])
observation.close()
await Promise.race([events, sleep(timeoutMs)])
const start = now()
try {
  await api.close(client)
  op('close', '', start, timeoutMs)
} catch (error) {
  op('close', '', start, timeoutMs, error)
}
write({ t: 'end', ts: now() })
process.exit(0)
