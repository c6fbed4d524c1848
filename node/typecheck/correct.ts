// Correct uses of the package's types: `tsc --strict` must accept every line (check.mjs).
// Never run, only type-checked.
import {
  Client,
  type AcquireResult,
  type Bytes,
  type ConnectionState,
  type ConnectOptions,
  type DeleteOptions,
  type DeleteResult,
  type Election,
  type GetOptions,
  type StatestoreError,
  type Lease,
  type Lock,
  type LockGuard,
  type LockOptions,
  type Loss,
  type SetOptions,
  type SetResult,
  type StoreEvent,
  type ValueResult,
  type Version,
} from 'mqtt-statestore'
import { startLocalServer } from 'mqtt-statestore/testing'

export async function scoped(port: number): Promise<void> {
  await using client = await Client.connect({ port })
  using changes = client.observe('k')
  for await (const event of changes) console.log(event.kind)
}

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
  const byUrl: Client<string> = await Client.connect('mqtt://localhost?client_id=me', { returnStrings: true, keepAlive: 30_000 })
  const byUrlSync: Client<Buffer> = Client.connectSync('mqtts://broker?ca_file=/etc/ca.pem')
  console.log(leader, fromEnv.clientId, either.clientId, buffers.clientId, byUrl.clientId, byUrlSync.clientId)
}

// Each Sync twin is its Promise method's type: the same parameters less `signal`, the value
// itself (index.d.ts derives the twins; these pin what users see).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const same = <A, B>(verdict: Same<A, B>): Same<A, B> => verdict

export function twins(client: Client<string>, guard: LockGuard<string>, lease: Lease<string>, lock: Lock<string>, election: Election<string>): void {
  same<typeof client.setSync, (key: Bytes, value: Bytes, options?: SetOptions) => SetResult>(true)
  same<typeof client.getSync, (key: Bytes, options?: GetOptions) => ValueResult<string> | null>(true)
  same<typeof client.deleteSync, (key: Bytes, options?: DeleteOptions) => DeleteResult>(true)
  same<typeof client.vdelSync, (key: Bytes, value: Bytes, options?: DeleteOptions) => DeleteResult>(true)
  same<typeof client.unobserveSync, (key: Bytes) => void>(true)
  same<typeof client.getManySync, (keys: Iterable<Bytes>, options?: GetOptions) => Array<ValueResult<string> | null | StatestoreError>>(true)
  same<typeof client.setManySync, (items: Iterable<readonly [Bytes, Bytes]> | Readonly<Record<string, Bytes>>, options?: SetOptions) => Array<SetResult | StatestoreError>>(true)
  same<typeof client.deleteManySync, (keys: Iterable<Bytes>, options?: DeleteOptions) => Array<DeleteResult | StatestoreError>>(true)
  for (const item of client.getManySync(['a', Buffer.from('b')])) {
    if (item instanceof Error) console.log(item.code)
    else if (item !== null) console.log(item.value.length)
  }
  client.setManySync(new Map([['a', '1']]), { condition: 'nx', expiry: 1_000 })
  client.setManySync({ a: '1', b: Buffer.from('2') })
  Client.connectSync({ maxInFlight: 16 })
  same<typeof client.lockSync, (name: Bytes, options: LockOptions) => LockGuard<string>>(true)
  same<typeof client.tryLockSync, (name: Bytes, options: LockOptions) => LockGuard<string> | null>(true)
  same<typeof client.closeSync, () => void>(true)
  same<typeof guard.releaseSync, () => void>(true)
  same<typeof guard.renewSync, () => void>(true)
  same<typeof lease.tryAcquireSync, (options: { ttl: number }) => AcquireResult<string>>(true)
  same<typeof lease.acquireSync, (options: { ttl: number; timeout?: number }) => Version>(true)
  same<typeof lease.releaseSync, () => boolean>(true)
  same<typeof lease.holderSync, () => string | null>(true)
  same<typeof lease.lostSync, (options?: { timeout?: number }) => Loss | null>(true)
  same<typeof lock.holderSync, () => string | null>(true)
  same<typeof election.campaignSync, (options?: { timeout?: number }) => Version>(true)
  same<typeof election.resignSync, () => void>(true)
  same<typeof election.leaderSync, () => string | null>(true)
  const guardOf: LockGuard<string> = lock.lockSync()
  const maybe: LockGuard<string> | null = lock.tryLockSync()
  const attempt: AcquireResult<string> = election.tryCampaignSync()
  console.log(guardOf, maybe, attempt)
}

async function connectionState(client: Client): Promise<void> {
  const state: ConnectionState = client.connectionState
  client.on('connectionState', (e) => console.log(e.state, e.reason, e.attempt, e.delay, e.sessionLost))
  for await (const e of client.connectionEvents()) if (e.state === 'gave_up') console.log(state, e.reason)
  await Client.connect({ reconnectMaxAttempts: 3, reconnectMaxElapsed: 60_000 })
}
void connectionState
