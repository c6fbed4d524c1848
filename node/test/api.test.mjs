// Every operation, as a Promise method and as its Sync twin, against the in-process local
// state store. Each test has a deadline (the runner's --test-timeout and its own).
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { inspect } from 'node:util'
import { after, before, describe, test } from 'node:test'

import { Client, ErrorCodes, compareVersions } from 'mqtt-statestore'
import { deadline, nextEvent, startLocalServer, unique } from './helpers.mjs'

const T = { timeout: 30_000 }

/** The same operations through the Promise API and through the Sync twins. */
const flavours = {
  promise: (c) => ({
    set: (...a) => c.set(...a),
    get: (...a) => c.get(...a),
    delete: (...a) => c.delete(...a),
    vdel: (...a) => c.vdel(...a),
    unobserve: (...a) => c.unobserve(...a),
    keys: async (p) => {
      const out = []
      for await (const k of c.keys(p)) out.push(k)
      return out
    },
    observe: async (k) => {
      const o = c.observe(k)
      await o.ready
      return o
    },
    lock: (...a) => c.lock(...a),
    tryLock: (...a) => c.tryLock(...a),
    release: (g) => g.release(),
    update: (lock, key, fn) => lock.update(key, fn),
    tryAcquire: (l, o) => l.tryAcquire(o),
    acquire: (l, o) => l.acquire(o),
    renew: (l) => l.renew(),
    releaseLease: (l) => l.release(),
    holder: (l) => l.holder(),
    campaign: (e, o) => e.campaign(o),
    tryCampaign: (e) => e.tryCampaign(),
    resign: (e) => e.resign(),
    leader: (e) => e.leader(),
    close: () => c.close(),
  }),
  sync: (c) => ({
    set: async (...a) => c.setSync(...a),
    get: async (...a) => c.getSync(...a),
    delete: async (...a) => c.deleteSync(...a),
    vdel: async (...a) => c.vdelSync(...a),
    unobserve: async (...a) => c.unobserveSync(...a),
    keys: async (p) => [...c.keysSync(p)],
    observe: async (k) => c.observeSync(k),
    lock: async (...a) => c.lockSync(...a),
    tryLock: async (...a) => c.tryLockSync(...a),
    release: async (g) => g.releaseSync(),
    update: async (lock, key, fn) => lock.updateSync(key, fn),
    tryAcquire: async (l, o) => l.tryAcquireSync(o),
    acquire: async (l, o) => l.acquireSync(o),
    renew: async (l) => l.renewSync(),
    releaseLease: async (l) => l.releaseSync(),
    holder: async (l) => l.holderSync(),
    campaign: async (e, o) => e.campaignSync(o),
    tryCampaign: async (e) => e.tryCampaignSync(),
    resign: async (e) => e.resignSync(),
    leader: async (e) => e.leaderSync(),
    close: async () => c.closeSync(),
  }),
}

let server
let client
let other

before(async () => {
  server = await deadline(startLocalServer(), 20_000, 'local server')
  client = await deadline(Client.connect(server.connectOptions), 10_000, 'connect')
  other = Client.connectSync({ ...server.connectOptions, clientId: unique('other') })
})

after(async () => {
  await client?.close()
  other?.closeSync()
  await server?.stop()
})

for (const [flavour, make] of Object.entries(flavours)) {
  describe(`${flavour} API`, () => {
    test('set and get: strings, Buffers and Uint8Arrays; versions order', T, async () => {
      const op = make(client)
      const key = unique('kv')
      const first = await op.set(key, 'blue')
      assert.equal(first.applied, true)
      assert.match(first.version, /^\d{15}:\d{5}:.+$/)
      let got = await op.get(key)
      assert.ok(Buffer.isBuffer(got.value))
      assert.equal(got.value.toString(), 'blue')
      assert.equal(got.version, first.version)
      const second = await op.set(Buffer.from(key), new Uint8Array([0, 255, 65]))
      assert.ok(compareVersions(first.version, second.version) < 0)
      assert.ok(first.version < second.version, 'versions compare as strings')
      got = await op.get(new TextEncoder().encode(key))
      assert.deepEqual([...got.value], [0, 255, 65])
      assert.equal(await op.get(unique('absent')), null)
    })

    test('set options: nx, nex, expiry, persist, timeout', T, async () => {
      const op = make(client)
      const key = unique('opt')
      assert.equal((await op.set(key, 'a', { condition: 'nx' })).applied, true)
      assert.equal((await op.set(key, 'b', { condition: 'nx' })).applied, false)
      assert.equal((await op.set(key, 'a', { condition: 'nex', timeout: 5_000 })).applied, true)
      assert.equal((await op.set(key, 'c', { condition: 'nex' })).applied, false)
      assert.equal((await op.get(key)).value.toString(), 'a')
      assert.equal((await op.set(key, 'p', { persist: true, condition: 'always' })).applied, true)
      const expiring = unique('exp')
      await op.set(expiring, 'soon', { expiry: 300 })
      const observation = await op.observe(expiring)
      const event = await nextEvent(observation)
      assert.equal(event.kind, 'delete')
      assert.equal(await op.get(expiring), null)
      observation.close()
    })

    test('delete and vdel', T, async () => {
      const op = make(client)
      const key = unique('del')
      await op.set(key, 'mine')
      const mismatch = await op.vdel(key, 'theirs')
      assert.equal(mismatch.outcome, 'valueMismatch')
      assert.equal(mismatch.deleted, false)
      const v = await op.vdel(key, 'mine')
      assert.equal(v.outcome, 'deleted')
      assert.equal(v.deleted, true)
      assert.equal((await op.delete(key)).outcome, 'notFound')
      await op.set(key, 'again')
      assert.equal((await op.delete(key, { timeout: 5_000 })).deleted, true)
    })

    test('fencing tokens on set and delete', T, async () => {
      const op = make(client)
      const lockName = unique('fence-lock')
      const key = unique('fenced')
      const guard = await op.lock(lockName, { ttl: 10_000 })
      assert.match(guard.fencingToken, /^\d{15}:\d{5}:.+$/)
      assert.equal((await op.set(key, 'v', { fencingToken: guard.fencingToken })).applied, true)
      await assert.rejects(op.set(key, 'unfenced'), { code: ErrorCodes.FENCING_TOKEN_REQUIRED })
      assert.equal((await op.delete(key, { fencingToken: guard.fencingToken })).deleted, true)
      await op.release(guard)
    })

    test('a key left fenced by a released lock is cleaned up as the error says', T, async () => {
      const op = make(client)
      const key = unique('left-fenced')
      const guard = await op.lock(unique('fence-lock'), { ttl: 10_000 })
      await op.set(key, 'half-done', { fencingToken: guard.fencingToken })
      await op.release(guard)
      await assert.rejects(op.delete(key), (error) => {
        assert.equal(error.code, ErrorCodes.FENCING_TOKEN_REQUIRED)
        assert.match(error.message, /read its current version with GET and delete it with that version/)
        return true
      })
      const value = await op.get(key)
      assert.equal((await op.delete(key, { fencingToken: value.version })).deleted, true)
      assert.equal((await op.set(key, 'fresh')).applied, true)
    })

    test('observe: set, delete, unobserve ends the stream', T, async () => {
      const op = make(client)
      const key = unique('obs')
      const observation = await op.observe(key)
      await other.set(key, 'one')
      let e = await nextEvent(observation)
      assert.equal(e.kind, 'set')
      assert.equal(e.value.toString(), 'one')
      assert.equal(e.key.toString(), key)
      assert.match(e.version, /^\d{15}:/)
      await other.delete(key)
      e = await nextEvent(observation)
      assert.equal(e.kind, 'delete')
      assert.equal(e.value, null)
      await op.unobserve(key)
      const end = await deadline(observation.next(), 10_000, 'end of stream')
      assert.equal(end.done, true)
    })

    test('keys', T, async () => {
      const op = make(client)
      const prefix = unique('scan')
      for (let i = 0; i < 25; i++) await op.set(`${prefix}:${i}`, 'x')
      const keys = (await op.keys(`${prefix}:*`)).map((k) => k.toString()).sort()
      assert.equal(keys.length, 25)
      assert.ok(keys.every((k) => k.startsWith(prefix)))
    })

    test('locks: lock, tryLock, update', T, async () => {
      const op = make(client)
      const name = unique('lock')
      const guard = await op.lock(name, { ttl: 10_000 })
      assert.equal(guard.isHeld, true)
      assert.equal(await op.tryLock(name, { ttl: 10_000 }), null)
      await op.release(guard)
      assert.equal(guard.isHeld, false)
      const again = await op.tryLock(name, { ttl: 10_000 })
      assert.ok(again)
      await op.release(again)

      const lock = client.createLock(unique('counter-lock'), { ttl: 10_000 })
      const key = unique('counter')
      const bump = (old) => String(Number(old?.toString() ?? '0') + 1)
      assert.equal((await op.update(lock, key, bump)).toString(), '1')
      assert.equal((await op.update(lock, key, bump)).toString(), '2')
      assert.equal(await op.update(lock, key, () => null), null)
      assert.equal(await op.get(key), null)
      // A throwing fn writes nothing and releases the lock.
      await op.set(key, 'kept', { fencingToken: guard.fencingToken }).catch(() => {})
      const before = await op.get(key)
      await assert.rejects(op.update(lock, key, () => {
        throw new Error('boom')
      }), /boom/)
      assert.deepEqual(await op.get(key), before)
      assert.equal(await lock.holder(), null)
    })

    test('leases: tryAcquire, acquire, renew, holder, release', T, async () => {
      const op = make(client)
      const key = unique('lease')
      const mine = client.lease(key, 'me')
      const theirs = other.lease(key, 'them')
      const got = await op.tryAcquire(mine, { ttl: 10_000 })
      assert.equal(got.acquired, true)
      assert.equal(mine.fencingToken, got.fencingToken)
      assert.equal(mine.isHeld, true)
      const refused = await op.tryAcquire(theirs, { ttl: 10_000 })
      assert.equal(refused.acquired, false)
      assert.equal(refused.holder.toString(), 'me')
      await op.renew(mine)
      assert.equal((await op.holder(mine)).toString(), 'me')
      assert.equal(await op.releaseLease(mine), true)
      const token = await op.acquire(theirs, { ttl: 10_000, timeout: 5_000 })
      assert.match(token, /^\d{15}:/)
      assert.equal(await op.releaseLease(theirs), true)
      assert.equal(await op.holder(mine), null)
    })

    test('elections: campaign, leader, observe, resign', T, async () => {
      const op = make(client)
      const name = unique('election')
      const a = client.election(name, 'node-a', { ttl: 5_000 })
      const b = other.election(name, 'node-b', { ttl: 5_000 })
      const token = await op.campaign(a, { timeout: 5_000 })
      assert.match(token, /^\d{15}:/)
      assert.equal(a.isLeader, true)
      assert.equal(a.fencingToken, token)
      assert.equal((await op.leader(b)).toString(), 'node-a')
      assert.equal((await op.tryCampaign(b)).acquired, false)
      const changes = flavour === 'sync' ? b.observeSync() : b.observe()
      await changes.ready
      const first = await nextEvent(changes)
      assert.equal(first.kind, 'elected')
      assert.equal(first.holder.toString(), 'node-a')
      await op.resign(a)
      const vacant = await nextEvent(changes)
      assert.equal(vacant.kind, 'vacant')
      assert.equal((await op.tryCampaign(b)).acquired, true)
      await op.resign(b)
      changes.close()
    })

    test('close: later calls fail with STATESTORE_CLOSED', T, async () => {
      const own = await Client.connect(server.connectOptions)
      const op = make(own)
      await op.set(unique('c'), 'v')
      await op.close()
      assert.equal(own.isClosed, true)
      await assert.rejects(op.get('k'), (e) => e instanceof Error && e.code === ErrorCodes.CLOSED && e.errno === 8)
      await op.close() // idempotent
    })
  })
}

describe('API details', () => {
  test('every operation of the addon classes is a Promise method and a Sync twin of the package', T, async () => {
    const addon = createRequire(createRequire(import.meta.url).resolve('mqtt-statestore'))('./native.js')
    const pkg = await import('mqtt-statestore')
    // The methods that answer at once, the package's own, and those it writes itself.
    const plain = ['keys', 'lease', 'createLock', 'election', 'connectionEvents', 'lossEvents', 'beginUpdate']
    const pairs = { Client: addon.NativeClient, Lock: addon.NativeLock, LockGuard: addon.NativeGuard, Lease: addon.NativeLease, Election: addon.NativeElection }
    let operations = 0
    for (const [name, Native] of Object.entries(pairs)) {
      for (const [owner, source] of [[pkg[name].prototype, Native.prototype], [pkg[name], Native]]) {
        for (const [key, d] of Object.entries(Object.getOwnPropertyDescriptors(source))) {
          if (typeof d.value !== 'function' || key === 'constructor' || plain.includes(key)) continue
          assert.equal(typeof owner[key], 'function', `${name}.${key}`)
          assert.equal(typeof owner[`${key}Sync`], 'function', `${name}.${key}Sync`)
          operations += 1
        }
      }
    }
    assert.ok(operations >= 30, `${operations} operations`)
  })

  test('returnStrings gives strings for values, keys and events', T, async () => {
    const c = await Client.connect({ ...server.connectOptions, returnStrings: true })
    try {
      const key = unique('str')
      const observation = c.observe(key)
      await observation.ready
      await c.set(key, 'héllo')
      assert.deepEqual((await c.get(key)).value, 'héllo')
      const e = await nextEvent(observation)
      assert.equal(e.value, 'héllo')
      assert.equal(e.key, key)
      observation.close()
      const keys = []
      for await (const k of c.keys(key)) keys.push(k)
      assert.deepEqual(keys, [key])
    } finally {
      await c.close()
    }
  })

  test('console.log and util.inspect show each object\'s class and state', T, async () => {
    const shown = (value, options) => inspect(value, { breakLength: Infinity, ...options })
    const c = await Client.connect({ ...server.connectOptions, returnStrings: true })
    try {
      assert.equal(shown(c), `Client { clientId: '${c.clientId}', isClosed: false, connectionState: 'connected' }`)
      const key = unique('shown')
      const lease = c.lease(key, 'me')
      assert.equal(lease.key, key)
      assert.equal(lease.holderName, 'me')
      assert.match(shown(lease), new RegExp(`^Lease \\{ key: '${key}', holderName: 'me', isHeld: false, fencingToken: null,`))
      const lock = c.createLock(key + '-lock', { ttl: 5_000 })
      assert.equal(shown(lock), `Lock { name: '${key}-lock', ttl: 5000 }`)
      const guard = await lock.lock()
      assert.match(shown(guard), new RegExp(`^LockGuard \\{ name: '${key}-lock', holderName: '.+', isHeld: true, fencingToken: '\\d+:\\d+:.+' \\}$`))
      await guard.release()
      assert.match(shown(guard), /isHeld: false/)
      assert.equal(shown(c.election(key + '-el', 'me', { ttl: 5_000 })), `Election { name: '${key}-el', candidate: 'me', isLeader: false, fencingToken: null }`)
      const observation = c.observe(key)
      await observation.ready
      assert.equal(shown(observation), 'Observation { closed: false }')
      observation.close()
      assert.equal(shown(observation), 'Observation { closed: true }')
      assert.equal(shown({ nested: { deeper: lease } }, { depth: 1 }), '{ nested: { deeper: [Lease] } }')
      assert.equal(shown(server), `LocalServer { host: '${server.host}', port: ${server.port} }`)
    } finally {
      await c.close()
    }
    assert.match(shown(c), /isClosed: true, connectionState: 'closed' \}$/)
  })

  test('a client and an observation are disposable: await using / using close them', T, async () => {
    const c = await Client.connect(server.connectOptions)
    const observation = c.observe(unique('disposed'))
    await observation.ready
    observation[Symbol.dispose]()
    assert.equal(observation.closed, true)
    await c[Symbol.asyncDispose]()
    assert.equal(c.isClosed, true)
    assert.equal(c.connectionState, 'closed')
  })

  test('EventEmitter style: on(set|delete)', T, async () => {
    const key = unique('emit')
    const observation = client.observe(key)
    await observation.ready
    const seen = []
    const done = new Promise((resolve) => {
      observation.on('set', (e) => seen.push(['set', e.value.toString()]))
      observation.on('delete', (e) => {
        seen.push(['delete', e.value])
        resolve()
      })
    })
    await other.set(key, 'x')
    await other.delete(key)
    await deadline(done, 10_000, 'events')
    assert.deepEqual(seen, [['set', 'x'], ['delete', null]])
    observation.close()
  })

  test('two observations of one key both get the event; break ends one', T, async () => {
    const key = unique('two')
    const a = client.observe(key)
    const b = client.observe(key)
    await Promise.all([a.ready, b.ready])
    await other.set(key, 'v')
    assert.equal((await nextEvent(a)).kind, 'set')
    for await (const e of b) {
      assert.equal(e.kind, 'set')
      break
    }
    assert.equal(b.closed, true)
    await other.set(key, 'w')
    assert.equal((await nextEvent(a)).value.toString(), 'w')
    a.close()
  })

  test('nextSync with a timeout returns null when nothing comes', T, async () => {
    const observation = client.observeSync(unique('quiet'))
    assert.equal(observation.nextSync({ timeout: 50 }), null)
    observation.close()
    assert.throws(() => observation.nextSync({ timeout: 50 }), { code: ErrorCodes.CLOSED })
  })

  test('lock guard loss events: a released guard ends its stream without a loss', T, async () => {
    const guard = await client.lock(unique('loss'), { ttl: 10_000 })
    const losses = guard.lossEvents()
    await guard.release()
    const r = await deadline(losses.next(), 10_000, 'loss stream end')
    assert.equal(r.done, true)
  })

  test('clientId option and getter', T, async () => {
    const id = unique('id')
    const c = await Client.connect({ ...server.connectOptions, clientId: id })
    assert.equal(c.clientId, id)
    await c.close()
  })

  test('fromEnv reads AIO_* variables', T, async () => {
    const saved = { ...process.env }
    try {
      process.env.AIO_BROKER_HOSTNAME = server.host
      process.env.AIO_BROKER_TCP_PORT = String(server.port)
      process.env.AIO_MQTT_USE_TLS = 'false'
      const c = await Client.fromEnv()
      await c.set(unique('env'), 'v')
      await c.close()
      const s = Client.fromEnvSync({ clientId: unique('envsync') })
      s.setSync(unique('env'), 'v')
      s.closeSync()
      // Without AIO_BROKER_HOSTNAME: refused, saying what to do, unless the options give the host.
      delete process.env.AIO_BROKER_HOSTNAME
      await assert.rejects(Client.fromEnv(), { code: ErrorCodes.INVALID_ARGUMENT, message: /AIO_BROKER_HOSTNAME is not set.*give the host/ })
      const h = await Client.fromEnv({ host: server.host })
      await h.set(unique('env'), 'v')
      await h.close()
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
    }
  })

  test('batches: one item per key in order, a failed key as its Error, Sync twins alike', T, async () => {
    const k = unique('batch')
    const written = await client.setMany(new Map([[`${k}/a`, '1'], [`${k}/b`, Buffer.from('2')]]))
    assert.deepEqual(written.map((r) => r.applied), [true, true])
    const read = client.getManySync([`${k}/b`, `${k}/none`, `${k}/a`, `${k}/b`])
    assert.deepEqual(read.map((r) => r?.value.toString() ?? null), ['2', null, '1', '2'])
    const token = (await client.set(`${k}/lock`, 'me')).version
    await client.set(`${k}/fenced`, 'v1', { fencingToken: token })
    const old = '000000000000001:00000:x'
    const [free, fenced] = await client.setMany([[`${k}/free`, 'x'], [`${k}/fenced`, 'x']], { fencingToken: old })
    assert.equal(free.applied, true)
    assert.ok(fenced instanceof Error)
    assert.equal(fenced.code, 'STATESTORE_FENCING_TOKEN_LOWER_VERSION')
    const deleted = client.deleteManySync(new Set([`${k}/a`, `${k}/none`]))
    assert.deepEqual(deleted.map((r) => r.outcome), ['deleted', 'notFound'])
    assert.deepEqual(await client.getMany([]), [])
    // A plain object's own entries, as ioredis's mset takes them (Python: a mapping).
    assert.deepEqual(client.setManySync({ [`${k}/x`]: 'X', [`${k}/y`]: Buffer.from('Y') }).map((r) => r.applied), [true, true])
    assert.deepEqual((await client.getMany([`${k}/x`, `${k}/y`])).map((r) => r.value.toString()), ['X', 'Y'])
  })

  test('batch arguments: wrong types are TypeErrors naming the item, a bad key sends nothing', T, async () => {
    const k = unique('batchargs')
    assert.throws(() => client.getManySync(k), { code: 'ERR_INVALID_ARG_TYPE', message: /"keys" argument must be an iterable/ })
    await assert.rejects(client.getMany(['a', 5]), { code: 'ERR_INVALID_ARG_TYPE', message: /"keys\[1\]"/ })
    await assert.rejects(client.setMany([[k, 'v'], [k]]), { code: 'ERR_INVALID_ARG_TYPE', message: /"items\[1\]" argument must be a \[key, value\] pair/ })
    await assert.rejects(client.deleteMany(Buffer.from('ab')), { code: 'ERR_INVALID_ARG_TYPE' })
    await assert.rejects(client.setMany({ [k]: 5 }), { code: 'ERR_INVALID_ARG_TYPE', message: /"items\[0\]\[1\]"/ })
    await assert.rejects(client.getMany({ [k]: 'v' }), { code: 'ERR_INVALID_ARG_TYPE', message: /"keys" argument must be an iterable/ })
    await assert.rejects(client.setMany(new Date()), { code: 'ERR_INVALID_ARG_TYPE', message: /"items" argument/ })
    await assert.rejects(client.setMany([[k, 'v'], ['', 'v']]), { code: 'STATESTORE_INVALID_ARGUMENT', message: /batch item 1 .*the key is empty/ })
    assert.equal(await client.get(k), null)
  })

  test('many calls in flight on one client', T, async () => {
    const prefix = unique('many')
    const results = await Promise.all(Array.from({ length: 500 }, (_, i) => client.set(`${prefix}:${i}`, String(i))))
    assert.ok(results.every((r) => r.applied))
    const values = await Promise.all(Array.from({ length: 500 }, (_, i) => client.get(`${prefix}:${i}`)))
    assert.deepEqual(values.map((v) => v.value.toString()), Array.from({ length: 500 }, (_, i) => String(i)))
  })

  test('large binary values round-trip', T, async () => {
    const key = unique('big')
    const value = Buffer.alloc(1 << 20)
    for (let i = 0; i < value.length; i++) value[i] = i % 251
    await client.set(key, value)
    assert.ok((await client.get(key)).value.equals(value))
  })

  test('quota: STATESTORE_QUOTA_EXCEEDED from a server with maxKeys', T, async () => {
    const small = await startLocalServer({ maxKeys: 1 })
    const c = await Client.connect(small.connectOptions)
    try {
      await c.set('a', '1')
      await assert.rejects(c.set('b', '2'), (e) => e.code === 'STATESTORE_QUOTA_EXCEEDED' && e.category === 'SERVICE' && e.errno === 104)
    } finally {
      await c.close()
      await small.stop()
    }
  })

  test('password authentication on the local server', T, async () => {
    const secured = await startLocalServer({ username: 'ann', password: 'secret' })
    try {
      await assert.rejects(Client.connect({ ...secured.connectOptions, defaultTimeout: 3_000 }), (e) => e.code === 'STATESTORE_CONNECTION')
      const c = await Client.connect({ ...secured.connectOptions, username: 'ann', password: 'secret' })
      await c.set('k', 'v')
      await c.close()
      // The server's URL carries the account; its inspection does not show it.
      assert.equal(secured.url, `mqtt://ann:secret@127.0.0.1:${secured.port}`)
      assert.ok(!inspect(secured).includes('secret'), inspect(secured))
      const fromUrl = await Client.connect(secured.url)
      assert.equal((await fromUrl.get('k')).value.toString(), 'v')
      await fromUrl.close()
    } finally {
      await secured.stop()
    }
  })
})
