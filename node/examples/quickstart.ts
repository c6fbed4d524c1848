// The same tour in TypeScript: type-checked by `tsc --noEmit --strict -p examples` in the tests.
// Run it with a TypeScript runner, or compile it.
import { Client, ErrorCodes, compareVersions, setLogHandler, type AbortError, type LogRecord, type StatestoreError, type StoreEvent } from 'mqtt-statestore'
import { startLocalServer } from 'mqtt-statestore/testing'

async function main(): Promise<void> {
  const server = await startLocalServer()
  const client = await Client.connect({ ...server.connectOptions, defaultTimeout: 5_000 })

  const first = await client.set('color', 'blue', { expiry: 60_000 })
  const second = await client.set('color', Buffer.from('green'), { condition: 'always' })
  if (first.version && second.version) console.log(compareVersions(first.version, second.version) < 0)

  const value = await client.get('color')
  if (value !== null) console.log(value.value.toString('utf8'), value.version)

  const strings = await Client.connect({ ...server.connectOptions, returnStrings: true })
  const text: string | undefined = (await strings.get('color'))?.value
  console.log(text)

  const changes = client.observe('color')
  changes.on('set', (event: StoreEvent) => console.log('set', event.value?.toString()))
  await changes.ready
  changes.close()

  const lock = client.createLock('locks/counter', { ttl: 10_000 })
  const written = await lock.update('counter', (old) => String(Number(old?.toString() ?? '0') + 1))
  console.log(written?.toString())

  setLogHandler((record: LogRecord) => console.log(record.level, record.target, record.message), { level: 'warn' })
  const guard = await client.lock('locks/report', { ttl: 10_000, signal: AbortSignal.timeout(5_000) })
  await client.set('report', 'done', { fencingToken: guard.fencingToken })
  await guard.release()
  setLogHandler(null)
  try {
    await client.get('report', { signal: AbortSignal.abort('not now') })
  } catch (error) {
    if ((error as AbortError).name === 'AbortError') console.log('aborted:', (error as AbortError).cause)
  }

  const election = client.election('leader', 'node-a', { ttl: 5_000 })
  const token: string = await election.campaign({ timeout: 5_000 })
  console.log(token, await election.leader())
  await election.resign()

  for await (const key of client.keys('*')) console.log(key.toString())

  try {
    await client.get('k', { timeout: 1 })
  } catch (error) {
    const e = error as StatestoreError
    if (e.code === ErrorCodes.TIMEOUT) console.log('timed out', e.errno)
  }

  const sync = client.getSync('color')
  console.log(sync?.version)
  await strings.close()
  await client.close()
  await server.stop()
}

void main()
