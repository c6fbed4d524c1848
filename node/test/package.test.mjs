// The package as users load it: CommonJS and ESM entry points, mqtt-statestore/testing, the
// version, and
// index.d.ts declaring every method the runtime has.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { test } from 'node:test'

import { declared } from '../typecheck/declared.mjs'

import * as esm from 'mqtt-statestore'
import * as esmTesting from 'mqtt-statestore/testing'

const require = createRequire(import.meta.url)
const T = { timeout: 20_000 }

test('require and import give the same classes', T, () => {
  const cjs = require('mqtt-statestore')
  assert.equal(esm.Client, cjs.Client)
  assert.equal(esm.default.Client, cjs.Client)
  assert.equal(typeof cjs.compareVersions, 'function')
  const testing = require('mqtt-statestore/testing')
  assert.equal(esmTesting.startLocalServer, testing.startLocalServer)
  assert.equal(typeof testing.startLocalServerSync, 'function')
})

test('version is the package version, from the addon', T, () => {
  const cjs = require('mqtt-statestore')
  assert.match(cjs.version, /^\d+\.\d+\.\d+/)
  assert.equal(cjs.version, require('mqtt-statestore/package.json').version)
  assert.equal(esm.version, cjs.version)
})

test('mqtt-statestore/testing starts a server clients can use (Promise and Sync)', T, async () => {
  const server = esmTesting.startLocalServerSync()
  assert.equal(server.host, '127.0.0.1')
  assert.ok(server.port > 0)
  const client = esm.Client.connectSync(server.connectOptions)
  client.setSync('k', 'v')
  assert.equal(client.getSync('k').value.toString(), 'v')
  client.closeSync()
  server.stopSync()
  const again = await esm.Client.startLocalServer()
  await again.stop()
  await again.stop() // idempotent
})

test('index.d.ts declares every public method and export', T, () => {
  const dir = path.dirname(require.resolve('mqtt-statestore'))
  const dts = fs.readFileSync(path.join(dir, 'index.d.ts'), 'utf8')
  const cjs = require('mqtt-statestore')
  for (const name of Object.keys(cjs)) {
    assert.match(dts, new RegExp(`export declare (class|function|const) ${name}\\b`), `export ${name}`)
  }
  // As a type checker sees the classes: with the members merged in from interfaces (the Sync
  // twins index.d.ts derives from the Promise methods).
  const { classes: declaredClasses } = declared(dir, 'index.d.ts')
  const classes = ['Client', 'Observation', 'KeyIterator', 'Lock', 'LockGuard', 'Lease', 'Election']
  for (const cls of classes) {
    const members = declaredClasses.get(cls)
    assert.ok(members, cls)
    const proto = cjs[cls].prototype
    const names = Object.getOwnPropertyNames(proto).filter((n) => n !== 'constructor')
    const statics = Object.getOwnPropertyNames(cjs[cls]).filter((n) => !['length', 'name', 'prototype'].includes(n))
    for (const name of [...names, ...statics]) {
      assert.ok(members.has(name), `${cls}.${name} is not declared in index.d.ts`)
    }
  }
})
