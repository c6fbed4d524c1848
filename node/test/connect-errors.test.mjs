// A failed connection says where and what to try, for each way it fails: nothing listening, a
// port that accepts TCP and never answers, and a port that answers another protocol.
import assert from 'node:assert/strict'
import net from 'node:net'
import { test } from 'node:test'

import { Client } from 'mqtt-statestore'
import { freePort } from './helpers.mjs'

const T = { timeout: 30_000 }

/** A listening server that runs `onConnection` for each socket; resolves to [server, port]. */
function listen(onConnection) {
  return new Promise((resolve, reject) => {
    const server = net.createServer(onConnection)
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve([server, server.address().port]))
  })
}

async function refusal(port, options, ...hints) {
  const error = await Client.connect({ host: '127.0.0.1', port, ...options }).then(
    () => assert.fail('connected'),
    (e) => e,
  )
  assert.equal(error.code, 'STATESTORE_CONNECTION', String(error))
  assert.ok(error.message.includes(`cannot connect to 127.0.0.1:${port}: `), error.message)
  for (const hint of hints) assert.ok(error.message.includes(hint), error.message)
}

test('nothing listening: the address, refused, and how to start a broker', T, async () => {
  await refusal(await freePort(), {}, 'connection refused', 'statestore serve')
})

test('a port that never answers: the address and the time waited', T, async () => {
  const sockets = []
  const [server, port] = await listen((socket) => sockets.push(socket))
  try {
    await refusal(port, { defaultTimeout: 1000 }, 'no answer from an MQTT broker within 1s')
  } finally {
    for (const socket of sockets) socket.destroy()
    server.close()
  }
})

test('a port that speaks another protocol: not MQTT 5', T, async () => {
  const [server, port] = await listen((socket) => {
    socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'))
  })
  try {
    await refusal(port, {}, 'does not speak MQTT 5')
  } finally {
    server.close()
  }
})
