// Correct uses of the package's types: `tsc --strict` must accept every line (check.mjs).
// Never run, only type-checked.
import { Client, type ConnectOptions, type DeleteResult, type StoreEvent, type ValueResult } from 'mqtt-statestore'
import { startLocalServer } from 'mqtt-statestore/testing'

export async function buffers(): Promise<void> {
  const server = await startLocalServer({ port: 0, maxKeys: 100 })
  const client: Client<Buffer> = await Client.connect({ ...server.connectOptions, clientId: 'me', keepAlive: 30_000 })
  const plain: Client = client // a bare Client is a Buffer client
  const value: ValueResult<Buffer> | null = await plain.get('k', { timeout: 1_000 })
  const bytes: Buffer | undefined = value?.value
  await client.set('k', 'v', { condition: 'nx', expiry: 1_000, persist: true })
  const deleted: DeleteResult = await client.delete('k')
  if (deleted.outcome === 'notFound') console.log(bytes)
  for await (const key of client.keys('user:*')) console.log(key.toString('hex'))
  const changes = client.observe('k')
  changes.on('set', (event: StoreEvent<Buffer>) => {
    if (event.kind === 'set') console.log(event.value?.byteLength)
  })
  const guard = await client.lock('locks/a', { ttl: 10_000, timeout: 5_000 })
  await client.set('k', 'v', { fencingToken: guard.fencingToken })
  await guard.release()
  const sync: Client<Buffer> = Client.connectSync({ host: server.host, port: server.port, defaultTimeout: 5_000 })
  sync.closeSync()
  await client.close()
  await server.stop()
}

export async function strings(options: ConnectOptions): Promise<void> {
  const text: Client<string> = await Client.connect({ ...options, returnStrings: true })
  const got = await text.get('k')
  const value: string | undefined = got?.value
  for await (const key of text.keys('*')) console.log(key.toUpperCase(), value)
  const leader: string | null = await text.election('e', 'me', { ttl: 5_000 }).leader()
  const fromEnv: Client<string> = Client.fromEnvSync({ returnStrings: true })
  // returnStrings known only at run time: either kind.
  const either: Client<Buffer | string> = await Client.connect(options)
  const buffers: Client<Buffer> = await Client.fromEnv({ returnStrings: false, tls: true, caFile: '/etc/ca.pem' })
  console.log(leader, fromEnv.clientId, either.clientId, buffers.clientId)
}
