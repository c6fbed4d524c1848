// Deliberate mistakes: `tsc --strict` must report an error on each line marked
// `// mistake: <what>` and on no other line (check.mjs), so that a mistake the types silently
// accept fails the test. Never run, only type-checked.
import { Client } from 'mqtt-statestore'
import { startLocalServer } from 'mqtt-statestore/testing'

export async function mistakes(): Promise<void> {
  await Client.connect({ host: 'localhost', prot: 1883 }) // mistake: misspelt option
  Client.connectSync({ port: 1883, defaultTimout: 5_000 }) // mistake: misspelt option
  await Client.fromEnv({ clientID: 'me' }) // mistake: misspelt option
  await Client.connect('mqtt://localhost', { clientID: 'me' }) // mistake: misspelt option beside a URL
  Client.connectSync('mqtt://localhost', 'client_id=me') // mistake: options as a string
  Client.fromEnvSync({ tls: true, returnString: true }) // mistake: misspelt option
  await Client.connect({ keepAlive: '60s' }) // mistake: a duration as text
  await Client.connect({ returnStrings: 'yes' }) // mistake: not a boolean
  const client = await Client.connect({ port: 1883 })
  const text = await Client.connect({ port: 1883, returnStrings: true })
  await client.set('k', 'v', { condition: 'NX' }) // mistake: conditions are lower case
  await client.set('k', 'v', { fencingTokn: 'x' }) // mistake: misspelt option
  await client.get('k', { timout: 5 }) // mistake: misspelt option
  await client.setMany([['k', 'v', 'w']]) // mistake: not a pair
  await client.setMany({ k: 5 }) // mistake: a value that is no string or bytes
  for (const item of await client.getMany(['k'])) item.value // mistake: an item may be null or an error
  const asText: string | undefined = (await client.get('k'))?.value // mistake: a Buffer client's values are Buffers
  const asBytes: Buffer | undefined = (await text.get('k'))?.value // mistake: a string client's values are strings
  if ((await client.delete('k')).outcome === 'not_found') return // mistake: the outcome is 'notFound'
  client.observe('k').on('delete', (event) => {
    if (event.kind === 'deleted') return // mistake: the kind is 'delete'
  })
  await client.lock('locks/a', { ttl: 1_000, timeOut: 5 }) // mistake: misspelt option
  for await (const key of text.keys('*')) key.toString('hex') // mistake: keys are already strings
  const buffers: Client<Buffer> = text // mistake: a string client is not a Buffer client
  await startLocalServer({ prot: 0 }) // mistake: misspelt option
  client.setSync('k', 'v', { signal: AbortSignal.timeout(5) }) // mistake: a Sync twin takes no signal
  const lock = client.createLock('locks/a', { ttl: 1_000 })
  lock.lockSync({ signal: AbortSignal.timeout(5) }) // mistake: lockSync takes no options
  console.log(asText, asBytes, buffers)
}
