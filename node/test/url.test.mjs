// Connecting with a connection URL: both flavours, options overriding the URL, a malformed URL
// refused naming the part without showing the password, wrong argument types.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { Client, sharedServer } from './helpers.mjs'

const T = { timeout: 60_000 }
const shared = sharedServer()

function url(query = '') {
  return `mqtt://${shared.server.host}:${shared.server.port}${query}`
}

test('a URL connects with its query options, in both flavours', T, async () => {
  const client = await Client.connect(url('?client_id=node-url-1&keep_alive=30s'))
  try {
    assert.equal(client.clientId, 'node-url-1')
    assert.ok((await client.set('node-url-key', 'v')).applied)
  } finally {
    await client.close()
  }
  const sync = Client.connectSync(url('?client_id=node-url-2'), { returnStrings: true })
  try {
    assert.equal(sync.clientId, 'node-url-2')
    assert.equal(sync.getSync('node-url-key').value, 'v')
  } finally {
    sync.closeSync()
  }
})

test('options beside the URL override it', T, async () => {
  // keep_alive=1s alone is refused (below 5 s); the option wins.
  const client = await Client.connect(url('?keep_alive=1s&client_id=a'), { keepAlive: 30_000, clientId: 'node-url-3' })
  try {
    assert.equal(client.clientId, 'node-url-3')
  } finally {
    await client.close()
  }
  await assert.rejects(Client.connect(url('?keep_alive=1s')), (e) => e.code === 'STATESTORE_INVALID_ARGUMENT' && e.message.includes('keep_alive'))
})

test('a malformed URL names the part and hides the password', T, async () => {
  const error = await Client.connect('mqtt://ann:Do-Not-Print-Me@127.0.0.1:70000').then(
    () => assert.fail('connected'),
    (e) => e,
  )
  assert.equal(error.code, 'STATESTORE_INVALID_ARGUMENT')
  assert.ok(error.message.includes('port') && error.message.includes('ann:***@'), error.message)
  assert.ok(!error.message.includes('Do-Not-Print-Me') && !String(error.stack).includes('Do-Not-Print-Me'))
  assert.throws(() => Client.connectSync('mqtt://h?colour=red'), (e) => e.code === 'STATESTORE_INVALID_ARGUMENT' && e.message.includes('colour'))
})

test('wrong argument types are TypeErrors', T, async () => {
  await assert.rejects(Client.connect(42), TypeError)
  await assert.rejects(Client.connect({ host: '127.0.0.1' }, { port: 1 }), TypeError)
  assert.throws(() => Client.connectSync('mqtt://h', 'not options'), TypeError)
})
