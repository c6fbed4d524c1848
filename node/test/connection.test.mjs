// Connection settings end to end: TLS with a CA file (and refused without it), password from
// a file, a K8S-SAT token file that does not exist.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'

import { Client, ErrorCodes } from 'mqtt-statestore'
import { startLocalServer } from './helpers.mjs'

const T = { timeout: 30_000 }
let dir

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'statestore-node-tls-'))
  // A CA and a server certificate signed by it (rustls refuses a self-signed CA as the leaf).
  const run = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore', timeout: 20_000 })
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
  run('req', '-x509', ...ec, '-days', '2', '-subj', '/CN=statestore test CA', '-keyout', 'ca-key.pem', '-out', 'ca.pem')
  run('req', ...ec, '-subj', '/CN=localhost', '-keyout', 'key.pem', '-out', 'server.csr')
  fs.writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n')
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'cert.pem')
})
after(() => fs.rmSync(dir, { recursive: true, force: true }))

test('TLS: connects with the CA file; refused with system roots or plain TCP', T, async () => {
  const server = await startLocalServer({ tlsCert: path.join(dir, 'cert.pem'), tlsKey: path.join(dir, 'key.pem') })
  try {
    const client = await Client.connect({ host: 'localhost', port: server.port, caFile: path.join(dir, 'ca.pem') })
    assert.equal((await client.set('tls', 'yes')).applied, true)
    assert.equal(client.getSync('tls').value.toString(), 'yes')
    await client.close()
    assert.equal(server.url, `mqtts://127.0.0.1:${server.port}`)
    const fromUrl = await Client.connect(server.url, { caFile: path.join(dir, 'ca.pem') })
    assert.equal((await fromUrl.get('tls')).value.toString(), 'yes')
    await fromUrl.close()
    await assert.rejects(Client.connect({ host: 'localhost', port: server.port, tls: true, defaultTimeout: 3_000 }), { code: ErrorCodes.CONNECTION })
    await assert.rejects(Client.connect({ host: 'localhost', port: server.port, defaultTimeout: 2_000 }), { code: ErrorCodes.CONNECTION })
  } finally {
    await server.stop()
  }
})

test('password from a file', T, async () => {
  const server = await startLocalServer({ username: 'ann', password: 'from-file' })
  try {
    const file = path.join(dir, 'password')
    fs.writeFileSync(file, 'from-file\n')
    const client = Client.connectSync({ ...server.connectOptions, username: 'ann', passwordFile: file })
    client.setSync('k', 'v')
    client.closeSync()
    fs.writeFileSync(file, 'wrong\n')
    await assert.rejects(Client.connect({ ...server.connectOptions, username: 'ann', passwordFile: file, defaultTimeout: 3_000 }), { code: ErrorCodes.CONNECTION })
  } finally {
    await server.stop()
  }
})

test('a missing K8S-SAT token file is a clear error', T, async () => {
  await assert.rejects(Client.connect({ port: 1, satTokenFile: path.join(dir, 'no-such-token') }), (e) => {
    assert.ok(e.code === ErrorCodes.INVALID_ARGUMENT || e.code === ErrorCodes.CONNECTION, e.code)
    assert.match(e.message, /no-such-token/)
    return true
  })
})
