// Bad input of every kind (TypeErrors naming the parameter, core's INVALID_ARGUMENT for bad
// values, never a crash) and timeouts (a broker with no state store behind it).
import assert from 'node:assert/strict'
import net from 'node:net'
import { createRequire } from 'node:module'
import { after, before, describe, test } from 'node:test'

import { Client, ERROR_TABLE, ErrorCodes, compareVersions } from 'mqtt-statestore'
import { deadline, freePort, serve, startLocalServer, unique } from './helpers.mjs'

const T = { timeout: 30_000 }
let server
let client

before(async () => {
  server = await startLocalServer()
  client = await Client.connect(server.connectOptions)
})
after(async () => {
  await client?.close()
  await server?.stop()
})

const notBytes = [5, null, undefined, {}, [], true, () => {}, Symbol('s'), 10n, new Date(0), new ArrayBuffer(2)]

/** Asserts `call` throws (sync) or rejects (Promise) with a TypeError mentioning `name`. */
async function assertTypeError(call, name) {
  let result
  try {
    result = call()
  } catch (error) {
    assert.ok(error instanceof TypeError, `${name}: ${error}`)
    assert.ok(error.message.includes(`"${name}"`), `${error.message} should name ${name}`)
    return
  }
  await assert.rejects(result, (error) => {
    assert.ok(error instanceof TypeError, `${name}: ${error}`)
    assert.ok(error.message.includes(`"${name}"`), `${error.message} should name ${name}`)
    return true
  })
}

describe('wrong argument types are TypeErrors naming the parameter', () => {
  test('keys and values', T, async () => {
    for (const bad of notBytes) {
      await assertTypeError(() => client.set(bad, 'v'), 'key')
      await assertTypeError(() => client.setSync(bad, 'v'), 'key')
      await assertTypeError(() => client.set('k', bad), 'value')
      await assertTypeError(() => client.setSync('k', bad), 'value')
      await assertTypeError(() => client.get(bad), 'key')
      await assertTypeError(() => client.getSync(bad), 'key')
      await assertTypeError(() => client.delete(bad), 'key')
      await assertTypeError(() => client.deleteSync(bad), 'key')
      await assertTypeError(() => client.vdel('k', bad), 'value')
      await assertTypeError(() => client.vdelSync(bad, 'v'), 'key')
      await assertTypeError(() => client.observe(bad), 'key')
      await assertTypeError(() => client.observeSync(bad), 'key')
      await assertTypeError(() => client.unobserve(bad), 'key')
      await assertTypeError(() => client.unobserveSync(bad), 'key')
      await assertTypeError(() => client.keys(bad), 'pattern')
      await assertTypeError(() => client.lease(bad, 'h'), 'key')
      await assertTypeError(() => client.lease('k', bad), 'holder')
      await assertTypeError(() => client.lock(bad, { ttl: 1000 }), 'name')
      await assertTypeError(() => client.election('e', bad, { ttl: 1000 }), 'candidate')
    }
  })

  test('condition names are core\'s: every name core accepts works, an unknown one is its INVALID_ARGUMENT', T, async () => {
    const addon = createRequire(createRequire(import.meta.url).resolve('mqtt-statestore'))('./native.js')
    const canonical = addon.setConditions().map((names) => names[0])
    assert.deepEqual(canonical, ['always', 'nx', 'nex']) // the names index.d.ts promises
    const key = unique('condition')
    for (const names of addon.setConditions()) {
      for (const condition of names) {
        await client.delete(key)
        assert.equal((await client.set(key, 'v', { condition })).applied, true, condition)
        // Any ASCII case; the key now holds 'v', which only 'nx' refuses.
        assert.equal(client.setSync(key, 'v', { condition: condition.toUpperCase() }).applied, names[0] !== 'nx', condition)
      }
    }
    const refused = (e) =>
      e.code === ErrorCodes.INVALID_ARGUMENT && e.message.includes('options.condition') && canonical.every((c) => e.message.includes(`'${c}'`))
    await assert.rejects(() => client.set(key, 'v', { condition: 'sometimes' }), refused)
    assert.throws(() => client.setSync(key, 'v', { condition: '' }), refused)
  })

  test("index.d.ts's word unions are core's vocabulary, word for word", T, async () => {
    const require = createRequire(createRequire(import.meta.url).resolve('mqtt-statestore'))
    const vocabulary = Object.fromEntries(require('./native.js').vocabulary().map((v) => [v.name, v.words]))
    const dts = require('node:fs').readFileSync(require.resolve('./index.d.ts'), 'utf8')
    // Where index.d.ts spells each list: the text just before the union of quoted words.
    const unions = {
      condition: /condition\?: ((?:'[^']*'(?: \| )?)+)/,
      event_kind: /kind: ('set'(?: \| '[^']*')+)/,
      delete_outcome: /outcome: ((?:'[^']*'(?: \| )?)+)/,
      loss_reason: /reason: ((?:'[^']*'(?: \| )?)+)/,
      lease_state: /state: \{ state: ((?:'[^']*'(?: \| )?)+)/,
      option_kind: /kind: ('str'(?: \| '[^']*')+)/,
      connection_state: /type ConnectionState = ((?:'[^']*'(?: \| )?)+)/,
    }
    assert.deepEqual(Object.keys(vocabulary).sort(), Object.keys(unions).sort(), 'a list core has and index.d.ts does not')
    for (const [name, pattern] of Object.entries(unions)) {
      const union = dts.match(pattern)
      assert.ok(union, `index.d.ts spells no union for ${name}`)
      assert.deepEqual([...union[1].matchAll(/'([^']*)'/g)].map((m) => m[1]), vocabulary[name], name)
    }
  })

  test('options', T, async () => {
    await assertTypeError(() => client.set('k', 'v', 'nx'), 'options')
    await assertTypeError(() => client.set('k', 'v', { condition: 5 }), 'options.condition')
    await assertTypeError(() => client.set('k', 'v', { expiry: '10s' }), 'options.expiry')
    await assertTypeError(() => client.set('k', 'v', { fencingToken: 5 }), 'options.fencingToken')
    await assertTypeError(() => client.set('k', 'v', { persist: 'yes' }), 'options.persist')
    await assertTypeError(() => client.setSync('k', 'v', { timeout: {} }), 'options.timeout')
    await assertTypeError(() => client.get('k', { timeout: 'soon' }), 'options.timeout')
    await assertTypeError(() => client.delete('k', { fencingToken: [] }), 'options.fencingToken')
    await assertTypeError(() => client.set('k', 'v', { expiryy: 5 }), 'options')
    await assertTypeError(() => client.lock('l', {}), 'options.ttl')
    await assertTypeError(() => client.lockSync('l', { ttl: '10s' }), 'options.ttl')
    await assertTypeError(() => client.lease('k', 'h').tryAcquire({}), 'options.ttl')
    await assertTypeError(() => client.election('e', 'c', { ttl: null }), 'options.ttl')
    await assertTypeError(() => client.createLock('l', { ttl: 1000 }).update('k', 'not a function'), 'fn')
    await assertTypeError(() => client.createLock('l', { ttl: 1000 }).update('k', () => 42), 'the value returned by fn')
    // Infinity is no limit for a timeout (durations.test.mjs) but too long for an expiry or TTL.
    for (const bad of [-1, NaN, Infinity]) {
      assert.throws(() => client.setSync('k', 'v', { expiry: bad }), { code: 'STATESTORE_INVALID_ARGUMENT' })
      assert.throws(() => client.createLock('l', { ttl: bad }), { code: 'STATESTORE_INVALID_ARGUMENT' })
    }
    for (const bad of [-1, NaN]) {
      await assert.rejects(client.get('k', { timeout: bad }), { code: 'STATESTORE_INVALID_ARGUMENT' })
    }
  })

  test('local server options: a wrong type is a TypeError, a bad number the addon\'s error naming it', T, async () => {
    const { startLocalServer: start, startLocalServerSync: startSync } = await import('mqtt-statestore/testing')
    await assertTypeError(() => start({ port: '80' }), 'options.port')
    await assertTypeError(() => startSync({ maxKeys: true }), 'options.maxKeys')
    for (const port of [-1, 1.5, 65536, NaN, Infinity]) {
      await assert.rejects(start({ port }), (e) => !(e instanceof TypeError) && /options\.port: .* is not a port/.test(e.message), String(port))
    }
    for (const maxKeys of [-1, 0.5, NaN]) {
      assert.throws(() => startSync({ maxKeys }), (e) => !(e instanceof TypeError) && /options\.maxKeys: .* is not a number of keys/.test(e.message), String(maxKeys))
    }
  })

  test('connect options', T, async () => {
    await assertTypeError(() => Client.connect(5), 'options')
    // A string is a connection URL: one that is not is core's invalid argument, not a TypeError.
    await assert.rejects(Client.connect('localhost'), (e) => e.code === 'STATESTORE_INVALID_ARGUMENT' && /not a URL/.test(e.message))
    await assertTypeError(() => Client.connect({ hots: 'x' }), 'options')
    await assertTypeError(() => Client.connect({ host: 5 }), 'options.host')
    await assertTypeError(() => Client.connectSync({ port: {} }), 'options.port')
    await assertTypeError(() => Client.connect({ tls: 'yes' }), 'options.tls')
    await assertTypeError(() => Client.connect({ defaultTimeout: '10s' }), 'options.defaultTimeout')
    await assertTypeError(() => Client.connect({ returnStrings: 1 }), 'options.returnStrings')
    await assertTypeError(() => Client.fromEnv({ keepAlive: true }), 'overrides.keepAlive')
    assert.throws(() => new Client({}), TypeError)
  })

  test('the native classes refuse wrong types without crashing', T, async () => {
    const native = createRequire(import.meta.url)('mqtt-statestore/package.json') && createRequire(import.meta.url).resolve('mqtt-statestore')
    const addon = createRequire(native)('./native.js')
    const sync = new addon.NativeCall(true)
    assert.throws(() => addon.NativeClient.connect(sync, 5), { code: 'ERR_INVALID_ARG_TYPE', message: /"options"/ })
    assert.throws(() => addon.NativeClient.connect(sync, 'nope'), { code: ErrorCodes.INVALID_ARGUMENT })
    assert.throws(() => addon.NativeClient.connect('sync', {}))
    assert.throws(() => addon.NativeClient.connect({}, {}))
    assert.throws(() => new addon.NativeCall('yes'))
    assert.throws(() => new addon.NativeLock())
    assert.throws(() => addon.NativeClient.prototype.createLock.call({}, 'n', { ttl: 1000 }))
    // The testing package where it is installed; in a checkout, the addon built beside it.
    let testing
    try {
      testing = createRequire(import.meta.url)('mqtt-statestore-testing')
    } catch {
      testing = createRequire(native)('./testing/index.js')
    }
    assert.throws(() => testing.NativeLocalServer.startSync({ port: 'x' }))
    assert.throws(() => testing.NativeLocalServer.startSync({ port: 70000 }), /options\.port/)
    assert.throws(() => addon.setLogHandler('not a function', undefined, () => {}), { code: 'ERR_INVALID_ARG_TYPE', message: /"handler"/ })
    assert.throws(() => addon.setLogHandler(() => {}, { level: 'loud' }, () => {}), { code: ErrorCodes.INVALID_ARGUMENT })
    assert.throws(() => addon.setLogHandler(() => {}, undefined, 'not a function'))
  })
})

describe('compareVersions orders exactly and refuses what is not a version', () => {
  test('order: wall clock, counter, node id bytes, as exact integers', T, () => {
    assert.equal(compareVersions('001732363200000:00003:StateStore', '001732363200000:00004:StateStore'), -1)
    assert.equal(compareVersions('2:0:a', '10:0:a'), -1, 'numbers, not strings')
    assert.equal(compareVersions('1:0:b', '1:0:a'), 1)
    assert.equal(compareVersions('1:0:a', '1:0:a'), 0)
    // Above 2^53 doubles round these two to the same number.
    assert.equal(compareVersions('9007199254740993:0:n', '9007199254740992:0:n'), 1)
    assert.equal(compareVersions('1:18446744073709551615:n', '1:18446744073709551614:n'), 1)
    assert.equal(compareVersions('1:0:n:with:colons', '1:0:n:with:colons'), 0)
    assert.equal(compareVersions('1:0:\u00e9', '1:0:\uffff'), -1, 'UTF-8 bytes, as the service')
  })

  test("garbage is core's invalid-argument error naming the argument, never NaN", T, () => {
    const bad = (e, name) => e.code === ErrorCodes.INVALID_ARGUMENT && e.message.includes(`: ${name}: "`)
    for (const garbage of ['', 'abc', '1:2', ':1:n', '1::n', '-1:0:n', '1.5:0:n', '18446744073709551616:0:n', ' 1:0:n']) {
      assert.throws(() => compareVersions(garbage, '1:0:n'), (e) => bad(e, 'a'), garbage)
      assert.throws(() => compareVersions('1:0:n', garbage), (e) => bad(e, 'b'), garbage)
    }
    const wrongType = (name) => (e) => e instanceof TypeError && e.message.includes(`"${name}"`)
    assert.throws(() => compareVersions(undefined, '1:0:n'), wrongType('a'))
    assert.throws(() => compareVersions('1:0:n', 5), wrongType('b'))
  })
})

describe('bad values are STATESTORE_INVALID_ARGUMENT errors from core', () => {
  const invalid = (e) => e instanceof Error && e.code === ErrorCodes.INVALID_ARGUMENT && e.errno === 1 && e.category === 'ARGUMENT'

  test('operations', T, async () => {
    await assert.rejects(client.set('', 'v'), invalid)
    assert.throws(() => client.setSync('', 'v'), invalid)
    await assert.rejects(client.get(Buffer.alloc(0)), invalid)
    await assert.rejects(client.set('k', 'v', { expiry: 0 }), invalid)
    await assert.rejects(client.set('k', 'v', { fencingToken: 'not-a-token' }), invalid)
    assert.throws(() => client.deleteSync('k', { fencingToken: '12:ab:x' }), invalid)
    assert.throws(() => client.keys(''), invalid)
    assert.throws(() => client.lock('l', { ttl: 0 }).catch(() => {}) && client.createLock('l', { ttl: 0 }), invalid)
    await assert.rejects(client.createLock('same', { ttl: 1000 }).update('same', () => 'x'), invalid)
  })

  test('connect', T, async () => {
    await assert.rejects(Client.connect({ host: '' }), invalid)
    await assert.rejects(Client.connect({ port: 70000 }), invalid)
    await assert.rejects(Client.connect({ port: 'abc' }), invalid)
    assert.throws(() => Client.connectSync({ clientId: 'a+b' }), invalid)
    await assert.rejects(Client.connect({ caFile: '/nonexistent/ca.pem', port: server.port }), (e) => e.code.startsWith('STATESTORE_'))
  })

  test("a core error has its fields as own properties, and its stack starts at the caller's code", T, async () => {
    const refusedHere = () => client.setSync('', 'v')
    let error
    try {
      refusedHere()
    } catch (e) {
      error = e
    }
    assert.deepEqual(Object.keys(error), ['code', 'coreCode', 'errno', 'category', 'outcomeUnknown'])
    const entry = ERROR_TABLE.find((e) => e.name === 'INVALID_ARGUMENT')
    const fields = { code: 'STATESTORE_INVALID_ARGUMENT', coreCode: entry.code, errno: entry.code, category: entry.category, outcomeUnknown: false }
    assert.deepEqual({ ...error }, fields)
    const frames = error.stack.split('\n').filter((line) => line.trimStart().startsWith('at '))
    assert.ok(frames.some((line) => line.includes('refusedHere')), error.stack)
    assert.deepEqual({ ...(await client.set('', 'v').catch((e) => e)) }, fields)
  })

  test('error table and codes', T, async () => {
    assert.equal(ErrorCodes.TIMEOUT, 'STATESTORE_TIMEOUT')
    assert.equal(ErrorCodes.FENCING_TOKEN_LOWER_VERSION, 'STATESTORE_FENCING_TOKEN_LOWER_VERSION')
    assert.ok(ERROR_TABLE.some((e) => e.name === 'CANCELLED' && e.code === 11))
    assert.ok(ERROR_TABLE.every((e) => typeof e.description === 'string' && e.description.length > 0))
  })
})

describe('timeouts and unreachable brokers', () => {
  let broker
  before(async () => {
    broker = await serve('mosquitto-alone')
  })
  after(async () => {
    await broker?.close()
  })

  test('a broker without a state store: calls time out (Promise and Sync)', T, async () => {
    const c = await Client.connect({ host: broker.host, port: broker.port })
    try {
      await assert.rejects(c.get('k', { timeout: 200 }), (e) => e.code === ErrorCodes.TIMEOUT && e.errno === 2 && e.outcomeUnknown === true)
      await assert.rejects(c.set('k', 'v', { timeout: 200 }), { code: ErrorCodes.TIMEOUT })
      assert.throws(() => c.setSync('k', 'v', { timeout: 200 }), { code: ErrorCodes.TIMEOUT })
      assert.throws(() => c.deleteSync('k', { timeout: 200 }), { code: ErrorCodes.TIMEOUT })
      assert.throws(() => c.getSync('k', { timeout: 200 }), { code: ErrorCodes.TIMEOUT })
    } finally {
      await c.close()
    }
  })

  test('the default timeout applies to calls without one', T, async () => {
    const c = Client.connectSync({ host: broker.host, port: broker.port, defaultTimeout: 300 })
    try {
      await assert.rejects(c.vdel('k', 'v'), { code: ErrorCodes.TIMEOUT })
    } finally {
      c.closeSync()
    }
  })

  test('nothing listening: connect fails with STATESTORE_CONNECTION', T, async () => {
    const port = await freePort()
    await assert.rejects(deadline(Client.connect({ host: '127.0.0.1', port, defaultTimeout: 2_000 }), 10_000, 'connect'), { code: ErrorCodes.CONNECTION })
    assert.throws(() => Client.connectSync({ host: '127.0.0.1', port, defaultTimeout: 2_000 }), { code: ErrorCodes.CONNECTION })
  })

  test('a server that never answers MQTT: connect gives up after the default timeout', T, async () => {
    const silent = net.createServer((socket) => socket.on('error', () => {}))
    await new Promise((r) => silent.listen(0, '127.0.0.1', r))
    try {
      await assert.rejects(
        deadline(Client.connect({ host: '127.0.0.1', port: silent.address().port, defaultTimeout: 500 }), 10_000, 'connect'),
        (e) => e.code === ErrorCodes.CONNECTION || e.code === ErrorCodes.TIMEOUT,
      )
    } finally {
      silent.close()
    }
  })

  test('a lock wait with a timeout gives up', T, async () => {
    const holder = await Client.connect(server.connectOptions)
    try {
      const name = unique('held')
      const guard = await holder.lock(name, { ttl: 10_000 })
      await assert.rejects(client.lock(name, { ttl: 10_000, timeout: 300 }), { code: ErrorCodes.TIMEOUT })
      await guard.release()
    } finally {
      await holder.close()
    }
  })
})

describe('strings that are not valid Unicode (a lone surrogate) are refused, naming the argument', () => {
  const lone = ['a\uD800b', '\uDC00', 'x\uDBFF']
  /** Asserts `call` throws or rejects with core's INVALID_ARGUMENT naming `name`. */
  async function refused(call, name) {
    const check = (error) => {
      assert.equal(error.code, ErrorCodes.INVALID_ARGUMENT, `${name}: ${error}`)
      assert.ok(error.message.includes(name), `${error.message} should name ${name}`)
      assert.match(error.message, /not valid Unicode/)
      return true
    }
    let result
    try {
      result = call()
    } catch (error) {
      return check(error)
    }
    await assert.rejects(Promise.resolve(result), check)
  }

  test('keys, values, patterns, tokens, names, holders and candidates', T, async () => {
    const key = unique('surrogate')
    const { version } = await client.set(key, 'v')
    for (const bad of lone) {
      await refused(() => client.set(bad, 'v'), 'key')
      await refused(() => client.setSync(bad, 'v'), 'key')
      await refused(() => client.set(key, bad), 'value')
      await refused(() => client.setSync(key, bad), 'value')
      await refused(() => client.get(bad), 'key')
      await refused(() => client.getSync(bad), 'key')
      await refused(() => client.delete(bad), 'key')
      await refused(() => client.deleteSync(bad), 'key')
      await refused(() => client.vdel(key, bad), 'value')
      await refused(() => client.vdelSync(key, bad), 'value')
      await refused(() => client.observe(bad), 'key')
      await refused(() => client.unobserve(bad), 'key')
      await refused(() => client.keys(bad), 'pattern')
      await refused(() => client.set(key, 'v', { fencingToken: version + bad }), 'options.fencingToken')
      await refused(() => client.deleteSync(key, { fencingToken: version + bad }), 'options.fencingToken')
      await refused(() => client.set(key, 'v', { condition: bad }), 'options.condition')
      await refused(() => client.createLock(bad, { ttl: 1000 }), 'name')
      await refused(() => client.lockSync(bad, { ttl: 1000 }), 'name')
      await refused(() => client.createLock(key + '-lock', { ttl: 1000 }).update(bad, () => 'v'), 'key')
      await refused(() => client.lease(bad, 'me'), 'key')
      await refused(() => client.lease(key + '-lease', bad), 'holder')
      await refused(() => client.election(bad, 'me', { ttl: 1000 }), 'name')
      await refused(() => client.election(key + '-election', bad, { ttl: 1000 }), 'candidate')
      await refused(() => compareVersions(version + bad, version), 'a')
    }
    // Nothing was written under a replacement character.
    const written = []
    for await (const k of client.keys('*\uFFFD*')) written.push(k)
    assert.deepEqual(written, [])
    assert.equal((await client.get(key)).value.toString(), 'v')
  })

  test('connection settings and the local server options', T, async () => {
    const { startLocalServer: start } = await import('mqtt-statestore/testing')
    for (const bad of lone) {
      for (const option of ['host', 'clientId', 'username', 'password', 'caFile', 'passwordFile', 'satTokenFile']) {
        await refused(() => Client.connect({ ...server.connectOptions, [option]: bad }), `options.${option}`)
        await refused(() => Client.connectSync({ ...server.connectOptions, [option]: bad }), `options.${option}`)
      }
      await refused(() => Client.connect({ host: server.host, port: `1${bad}` }), 'options.port')
      await refused(() => Client.fromEnv({ host: bad }), 'overrides.host')
      await refused(() => start({ username: bad, password: 'p' }), 'options.username')
      await refused(() => start({ username: 'u', password: bad }), 'options.password')
    }
  })
})
