// The tour of docs/node.md: node examples/quickstart.js [host:port]
// Without an address it starts the in-process local state store (statestore/testing).
const { Client } = require('mqtt-statestore')
const { startLocalServer } = require('mqtt-statestore/testing')

async function main() {
  let server = null
  let [host, port] = (process.argv[2] || '').split(':')
  if (!host) {
    server = await startLocalServer()
    ;({ host, port } = server)
  }
  const client = await Client.connect({ host, port: Number(port) })

  const r = await client.set('color', 'blue', { expiry: 60_000 }) // { applied, version }
  console.log('set', r)
  const v = await client.get('color') // { value: Buffer, version } | null
  console.log('get', v.value.toString(), v.version)
  console.log('nx', (await client.set('lock', 'me', { condition: 'nx' })).applied)

  const changes = client.observe('color')
  await changes.ready
  await client.set('color', 'green')
  for await (const event of changes) {
    console.log('event', event.kind, event.value.toString())
    break
  }

  const guard = await client.lock('locks/report', { ttl: 10_000 })
  await client.set('report', 'done', { fencingToken: guard.fencingToken })
  await guard.release()

  for await (const key of client.keys('*')) console.log('key', key.toString())

  client.setSync('color', 'red')
  console.log('sync', client.getSync('color').value.toString())

  await client.delete('color')
  await client.vdel('lock', 'me')
  await client.close()
  if (server) await server.stop()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
