// Connection security through the Node binding: the shared cases of
// tests/chaos/secure.json on the fixtures of `statestore-chaos secure`, with the Promise and
// the Sync connect. Failures are STATESTORE_CONNECTION, never a fallback to plaintext; no
// error message, stack or util.inspect() output of an error or a client shows a password.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { after, before, describe, test } from 'node:test'
import { inspect } from 'node:util'

const pkg = process.env.CHAOS_NODE_PACKAGE ?? new URL('../../../node/', import.meta.url).href
const { Client } = await import(new URL('index.mjs', pkg).href)
const cases = JSON.parse(readFileSync(new URL('../secure.json', import.meta.url), 'utf8'))

const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase())

describe('connection security', () => {
  let fixtures
  let child
  before(async () => {
    assert.ok(process.env.CHAOS_BIN, 'CHAOS_BIN (the statestore-chaos binary) is not set: run scripts/test-chaos.sh')
    child = spawn(process.env.CHAOS_BIN, ['secure'], { stdio: ['pipe', 'pipe', 'inherit'] })
    const lines = createInterface({ input: child.stdout })
    let timer
    const line = await Promise.race([
      new Promise((resolve) => lines.once('line', resolve)),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('statestore-chaos secure did not start')), 30000) }),
    ]).finally(() => clearTimeout(timer))
    fixtures = JSON.parse(line)
  })
  after(async () => {
    if (!child) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.stdin.end()
    const timer = setTimeout(() => child.kill('SIGKILL'), 10000)
    await exited
    clearTimeout(timer)
  })

  function options (c) {
    const resolved = { host: '127.0.0.1', port: fixtures.ports[c.port], defaultTimeout: cases.timeout_ms }
    for (const [name, value] of Object.entries(c.options)) {
      const v = value.startsWith('$') ? fixtures[value.slice(1)] : value
      resolved[camel(name)] = name === 'tls' ? v === 'true' : v
    }
    return resolved
  }

  function showsNoSecret (text, c) {
    const secrets = [fixtures.password, fixtures.sat_token]
    if (c.options.password && !c.options.password.startsWith('$')) secrets.push(c.options.password)
    for (const secret of secrets) assert.ok(!text.includes(secret), `${c.name}: a password is shown: ${text}`)
  }

  for (const sync of [false, true]) {
    for (const c of cases.cases) {
      test(`${c.name} (${sync ? 'connectSync' : 'connect'})`, async () => {
        let client
        try {
          client = sync ? Client.connectSync(options(c)) : await Client.connect(options(c))
        } catch (error) {
          assert.equal(error.code, `STATESTORE_${c.expect}`, `${c.name}: ${error}`)
          showsNoSecret(`${error.message} ${error.stack} ${inspect(error)}`, c)
          return
        }
        assert.equal(c.expect, 'OK', `${c.name}: connected, expected ${c.expect}`)
        showsNoSecret(inspect(client, { depth: 10, showHidden: true }), c)
        assert.ok((await client.set('secure', c.name)).applied)
        assert.equal((await client.get('secure')).value.toString(), c.name)
        await client.close()
      })
    }
  }
})
