// Types of the `mqtt-statestore` package (hand-written over the addon's generated native.d.ts;
// test/package.test.mjs checks that every runtime method is declared here, typecheck/backing.mjs
// that every member declared here exists and that the addon members it calls are in native.d.ts
// and in the addon, the examples are type-checked with `tsc --noEmit --strict`, and
// typecheck/check.mjs makes sure tsc reports every deliberate mistake of typecheck/mistakes.ts).

/// <reference types="node" />

/** A key, value, pattern or name: a string (encoded as UTF-8) or bytes. */
export type Bytes = string | Buffer | Uint8Array

/**
 * A version or fencing token: a hybrid logical clock in its text form
 * `wallMs:counter:node` (e.g. `'001732363200000:00003:StateStore'`), zero-padded so that
 * plain string comparison orders versions of one server; {@link compareVersions} orders any.
 */
export type Version = string

/**
 * `options.signal` of Promise methods (like `fs/promises` and `fetch`): a signal that is
 * already aborted rejects the call at once without sending anything; aborting it later cancels
 * the call in the library and rejects with an `AbortError` (`name: 'AbortError'`,
 * `code: 'ABORT_ERR'`, `cause: signal.reason`). A write cancelled after it was sent may still
 * be applied. Aborting after the call settled does nothing. The Sync twins take no signal.
 */
export interface Abortable {
  signal?: AbortSignal
}

/** `T` without `signal`: what a Sync twin takes where its Promise method takes `T`. */
type WithoutSignal<T> = T extends Abortable
  ? keyof T extends 'signal'
    ? never // options that are only `Abortable`: the twin takes none
    : Omit<T, 'signal'>
  : T

/**
 * The blocking twins of the Promise methods of `T`: `name(…): Promise<R>` becomes
 * `nameSync(…): R`, with the same parameters less `signal`. Each operation is declared once,
 * as its Promise method, and its twin follows from it.
 */
type SyncTwins<T> = {
  [K in keyof T as T[K] extends (...args: never[]) => Promise<unknown> ? `${K & string}Sync` : never]: T[K] extends (
    ...args: infer A
  ) => Promise<infer R>
    ? (...args: { [I in keyof A]: WithoutSignal<A[I]> }) => R
    : never
}

/** The `AbortError` an aborted call rejects with. */
export interface AbortError extends Error {
  name: 'AbortError'
  code: 'ABORT_ERR'
  /** The signal's `reason`. */
  cause: unknown
}

/** Severity of a log record, from the most to the least severe. */
export type LogLevel = 'error' | 'warn' | 'info' | 'debug' | 'trace'

/** One record of the library's log. */
export interface LogRecord {
  level: LogLevel
  /** The module that logged it, e.g. `'statestore::client::event_loop'`. */
  target: string
  /** The message, followed by the record's fields as `name=value` (`error=...`). */
  message: string
  /** The record's fields by name, values as text (`{ error: '...' }`). */
  fields: Record<string, string>
}

/**
 * Delivers the library's log records (reconnects, refused renewals, dropped notifications...)
 * at `options.level` (default `'info'`) and more severe to `handler`, on the calling thread
 * (each worker thread sets its own); `null` stops, and no record reaches a removed handler.
 * A handler never keeps the process alive; records that come faster than the thread takes
 * them are dropped rather than slowing the library down. Secrets never appear in records.
 */
/** The library's version, e.g. `'0.1.0'` (the same in every language). */
export declare const version: string

export declare function setLogHandler(handler: ((record: LogRecord) => void) | null, options?: { level?: LogLevel }): void

/**
 * Orders two versions or fencing tokens as the service does (wall clock, then counter, as exact
 * integers up to 2^64 - 1, then node id bytes), by the library's core: -1, 0 or 1. A string that
 * is not `wallMs:counter:node` throws an error with `code: ErrorCodes.INVALID_ARGUMENT` naming the
 * argument; a value that is not a string throws a `TypeError`.
 */
export declare function compareVersions(a: Version, b: Version): number

/** The `code` strings of errors, by core name: `ErrorCodes.TIMEOUT === 'STATESTORE_TIMEOUT'`. */
export declare const ErrorCodes: Readonly<Record<ErrorName, ErrorCode>>

/** Core's error table: name, numeric code, category and a one-line description of each code. */
export declare const ERROR_TABLE: ReadonlyArray<{ name: ErrorName; code: number; category: ErrorCategory; description: string }>

/**
 * Every connection setting of the core: `jsName` is the `ConnectOptions` key, `kind` its type
 * (`duration`: milliseconds), `env` the `AIO_*` variable `fromEnv` reads it from.
 */
export declare const CONNECT_OPTIONS: ReadonlyArray<{
  name: string
  jsName: keyof ConnectOptions
  kind: 'str' | 'path' | 'port' | 'bool' | 'duration' | 'int'
  env: string | null
  default: string
  doc: string
}>

export type ErrorName =
  | 'OK' | 'INVALID_ARGUMENT' | 'TIMEOUT' | 'CONNECTION_LOST' | 'CONNECTION' | 'UNEXPECTED_PAYLOAD'
  | 'RPC' | 'CLOCK' | 'CLOSED' | 'RUNTIME' | 'NOT_HELD' | 'CANCELLED' | 'INTERNAL' | 'TIMESTAMP_SKEW'
  | 'FENCING_TOKEN_REQUIRED' | 'FENCING_TOKEN_SKEW' | 'FENCING_TOKEN_LOWER_VERSION' | 'QUOTA_EXCEEDED'
  | 'SYNTAX_ERROR' | 'NOT_AUTHORIZED' | 'UNKNOWN_COMMAND' | 'WRONG_NUMBER_OF_ARGUMENTS'
  | 'MISSING_TIMESTAMP' | 'MALFORMED_TIMESTAMP' | 'KEY_LENGTH_ZERO' | 'UNKNOWN_SERVICE_ERROR'

/** `'STATESTORE_' + name`, e.g. `'STATESTORE_TIMEOUT'`. */
export type ErrorCode = `STATESTORE_${ErrorName}`

export type ErrorCategory = 'ARGUMENT' | 'TIMEOUT' | 'CONNECTION' | 'SERVICE' | 'LEASE' | 'CLOSED' | 'RUNTIME' | 'INTERNAL'

/**
 * What every failed operation throws or rejects with: an `Error` with a stable string `code`.
 * (Wrong argument types are `TypeError`s with Node's `ERR_INVALID_ARG_TYPE` code instead.)
 */
export interface StatestoreError extends Error {
  /** `'STATESTORE_' + core name`, e.g. `'STATESTORE_TIMEOUT'`. */
  code: ErrorCode
  /** The numeric core code (same as `coreCode`). */
  errno: number
  /** The numeric core code. */
  coreCode: number
  category: ErrorCategory
  /** The request may have been applied although it failed (timeout, lost connection). */
  outcomeUnknown: boolean
}

/**
 * Connection settings (durations in milliseconds). Every setting of the core, by its camelCase
 * name; unknown names are a TypeError. Defaults: `localhost:1883`, plain TCP, no credentials.
 */
export interface ConnectOptions {
  /** Broker host name or IP address (default `'localhost'`; `AIO_BROKER_HOSTNAME`). */
  host?: string
  /** Broker TCP port (default 1883; `AIO_BROKER_TCP_PORT`). */
  port?: number | string
  /** MQTT client id; a random `statestore-…` id when absent. */
  clientId?: string
  /** MQTT keep-alive, ms (default 60 s). */
  keepAlive?: number
  /** How long the broker keeps the session after a disconnect, ms (default 1 h). */
  sessionExpiry?: number
  /** Start with a clean session (default true). */
  cleanStart?: boolean
  /** TLS with the system's root certificates (implied by `caFile`). */
  tls?: boolean
  /** CA certificates (PEM) that validate the broker. */
  caFile?: string
  /** Client certificate chain (PEM), for X.509 client authentication. */
  certFile?: string
  /** Private key of the client certificate (PEM). */
  keyFile?: string
  /** Password file of an encrypted key (refused with a clear error: unsupported). */
  keyPasswordFile?: string
  /** MQTT username. */
  username?: string
  /** MQTT password. */
  password?: string
  /** File holding the MQTT password (read at each connection). */
  passwordFile?: string
  /** Kubernetes service-account token file (`K8S-SAT` enhanced authentication). */
  satTokenFile?: string
  /** How often the token file is checked for rotation, ms (default 10 s). */
  satCheckInterval?: number
  /** Timeout of calls that set none, and of connecting, ms (default 10 s). */
  defaultTimeout?: number
  /** First reconnect delay, ms (default 128 ms, doubling). */
  reconnectInitialDelay?: number
  /** Longest reconnect delay, ms (default 60 s). */
  reconnectMaxDelay?: number
  /** Failed reconnection attempts after which the client gives up (state `'gave_up'`); 0 (default): never. */
  reconnectMaxAttempts?: number
  /** Time after a connection loss after which reconnecting gives up, ms; 0 (default): never. */
  reconnectMaxElapsed?: number
  /** Largest MQTT packet accepted, bytes. */
  maxPacketSize?: number
  /** Requests of one batch (`getMany`, `setMany`, `deleteMany`) in flight at once (default 64). */
  maxInFlight?: number
  /** Return values, keys and names as UTF-8 strings instead of Buffers. */
  returnStrings?: boolean
}

/** Options of `set` (durations in milliseconds). */
export interface SetOptions {
  /** `'always'` (default), `'nx'` (only if absent) or `'nex'` (absent or equal to the value). */
  condition?: 'always' | 'nx' | 'nex'
  /** The key expires after this many ms (at least 1). */
  expiry?: number
  /** Fencing token (from a lock) that the write must carry. */
  fencingToken?: Version
  /** Ask the service to keep the key across restarts (`aio-persistence`). */
  persist?: boolean
  /** Timeout of this call, ms. */
  timeout?: number
}

/** Options of `delete` and `vdel`. */
export interface DeleteOptions {
  fencingToken?: Version
  /** Timeout of this call, ms. */
  timeout?: number
}

/** Options of `get`. */
export interface GetOptions {
  /** Timeout of this call, ms. */
  timeout?: number
}

export interface SetResult {
  /** Whether the SET was applied (false: its condition did not hold). */
  applied: boolean
  /** The key's new version: the fencing token when this SET took a lock. */
  version: Version | null
}

export interface ValueResult<V = Buffer> {
  value: V
  version: Version | null
}

export interface DeleteResult {
  deleted: boolean
  outcome: 'deleted' | 'notFound' | 'valueMismatch'
  version: Version | null
}

export interface Loss {
  reason: 'expired' | 'takenOver' | 'clientClosed'
  holder?: Buffer | null
  message: string
}

/** One notification. Which fields are set depends on `kind`. */
export interface StoreEvent<V = Buffer> {
  /**
   * `set` (value), `delete`, `resynced` (after a reconnect: the current value, or null),
   * `elected` (holder: the leader), `vacant`, `lost` (loss).
   */
  kind: 'set' | 'delete' | 'resynced' | 'elected' | 'vacant' | 'lost' | 'connection'
  key: V
  value: V | null
  version: Version | null
  holder?: V
  loss?: Loss
  /** `connection` events (`client.connectionEvents()`): the new state. */
  state?: ConnectionState
  /** `connection`: why it dropped, an attempt failed or reconnecting gave up (names host:port). */
  reason?: string | null
  /** `connection`: the next attempt's number (`reconnecting`), the attempts made (`gave_up`). */
  attempt?: number
  /** `connection`: milliseconds before the next attempt (`reconnecting`), else null. */
  delay?: number | null
  /** `connection`: a reconnect found the broker's session gone. */
  sessionLost?: boolean
}

/** Where a client's connection stands. */
export type ConnectionState = 'connecting' | 'connected' | 'reconnecting' | 'gave_up' | 'closed'

/** A change of the connection's state (a `StoreEvent` of kind `connection`). */
export type ConnectionEvent = StoreEvent<Buffer> & { kind: 'connection'; state: ConnectionState; reason: string | null; attempt: number; delay: number | null; sessionLost: boolean }

export interface ObservationEvents<V> {
  set: [StoreEvent<V>]
  delete: [StoreEvent<V>]
  resynced: [StoreEvent<V>]
  elected: [StoreEvent<V>]
  vacant: [StoreEvent<V>]
  lost: [StoreEvent<V>]
  connection: [StoreEvent<V>]
  event: [StoreEvent<V>]
  error: [StatestoreError]
}

/**
 * A stream of events: `for await` over it, iterate it blocking (`for ... of`, `nextSync`), or
 * listen with `on('set' | 'delete' | 'resynced' | 'event', fn)`. Adding a listener switches it
 * to push mode (the iterators then get nothing new): use one style per stream. It ends when
 * closed, unobserved, or when its client closes. With listeners it keeps the process alive
 * until it ends (like a socket), so a program that only waits for notifications keeps running.
 */
export declare class Observation<V = Buffer> implements AsyncIterableIterator<StoreEvent<V>>, Iterable<StoreEvent<V>> {
  private constructor()
  /** Resolves once registered with the service: no change made after it is missed. */
  readonly ready: Promise<void>
  /** Whether the stream has ended. */
  readonly closed: boolean
  next(): Promise<IteratorResult<StoreEvent<V>, undefined>>
  return(): Promise<IteratorResult<StoreEvent<V>, undefined>>
  [Symbol.asyncIterator](): this
  /** Blocks for the next event: `null` after `timeout` ms without one; throws STATESTORE_CLOSED at the end. */
  nextSync(options?: { timeout?: number }): StoreEvent<V> | null
  [Symbol.iterator](): Iterator<StoreEvent<V>>
  /** Ends the stream (idempotent). */
  close(): void
  /** `using changes = client.observe(key)`: closed when the scope ends. */
  [Symbol.dispose](): void
  on<K extends keyof ObservationEvents<V>>(event: K, listener: (...args: ObservationEvents<V>[K]) => void): this
  once<K extends keyof ObservationEvents<V>>(event: K, listener: (...args: ObservationEvents<V>[K]) => void): this
  off<K extends keyof ObservationEvents<V>>(event: K, listener: (...args: ObservationEvents<V>[K]) => void): this
  addListener<K extends keyof ObservationEvents<V>>(event: K, listener: (...args: ObservationEvents<V>[K]) => void): this
  removeListener<K extends keyof ObservationEvents<V>>(event: K, listener: (...args: ObservationEvents<V>[K]) => void): this
  removeAllListeners(event?: keyof ObservationEvents<V>): this
  listenerCount(event: keyof ObservationEvents<V>): number
  emit<K extends keyof ObservationEvents<V>>(event: K, ...args: ObservationEvents<V>[K]): boolean
}

/** The keys matching a pattern, fetched page by page: `for await` (or blocking `for ... of`). */
export declare class KeyIterator<V = Buffer> implements AsyncIterableIterator<V>, Iterable<V> {
  private constructor()
  next(): Promise<IteratorResult<V, undefined>>
  [Symbol.asyncIterator](): this
  [Symbol.iterator](): Iterator<V>
}

/** The operations of a held lock (each with its Sync twin). */
interface LockGuardCalls {
  release(): Promise<void>
  renew(): Promise<void>
  /**
   * Waits until the lock is not held, for at most `timeout` ms (absent: until then; 0: the
   * state now): the loss, or null if released or still held when the time is up.
   */
  lost(options?: { timeout?: number } & Abortable): Promise<Loss | null>
}

/** A held lock. */
export interface LockGuard<V = Buffer> extends LockGuardCalls, SyncTwins<LockGuardCalls> {}
export declare class LockGuard<V = Buffer> {
  private constructor()
  /** The lock's name. */
  readonly name: V
  /** Pass it as `fencingToken` to writes protected by the lock. */
  readonly fencingToken: Version
  readonly isHeld: boolean
  readonly holderName: V
  /** A stream with one `lost` event if the lock is lost while held. */
  lossEvents(): Observation<V>
  [Symbol.asyncDispose](): Promise<void>
}

export interface LockOptions {
  /** Time to live of each holding, ms (renewed automatically while held). */
  ttl: number
  /** How long `lock()` waits, ms (default: forever). */
  timeout?: number
  /** Renew while held (default true). */
  autoRenew?: boolean
}

/** The operations of a named lock (each with its Sync twin). */
interface LockCalls<V> {
  /** Waits until acquired (or the timeout; `signal` aborts the wait). */
  lock(options?: Abortable): Promise<LockGuard<V>>
  /** One attempt: `null` if someone else holds it. */
  tryLock(options?: Abortable): Promise<LockGuard<V> | null>
  /** The current holder's name, or null. */
  holder(): Promise<V | null>
}

/** A named lock. */
export interface Lock<V = Buffer> extends LockCalls<V>, SyncTwins<LockCalls<V>> {}
export declare class Lock<V = Buffer> {
  private constructor()
  readonly name: V
  /** The time to live of each holding, ms. */
  readonly ttl: number
  /**
   * Acquire, read `key`, write `fn(old)` with the fencing token (`null`/`undefined` deletes),
   * release; returns what was written. If `fn` throws, nothing is written. `signal` aborts
   * the wait for the lock, and the update until its write is sent (then nothing is written).
   */
  update(key: Bytes, fn: (old: V | null) => Bytes | null | undefined | Promise<Bytes | null | undefined>, options?: Abortable): Promise<V | null>
  updateSync(key: Bytes, fn: (old: V | null) => Bytes | null | undefined): V | null
}

export interface AcquireResult<V = Buffer> {
  acquired: boolean
  /** When acquired. */
  fencingToken: Version | null
  /** When not acquired: the holder, if known. */
  holder: V | null
}

/** The operations of a lease (each with its Sync twin). */
interface LeaseCalls<V> {
  tryAcquire(options: { ttl: number } & Abortable): Promise<AcquireResult<V>>
  /** Waits until acquired (or `timeout` ms): the fencing token. */
  acquire(options: { ttl: number; timeout?: number } & Abortable): Promise<Version>
  renew(): Promise<void>
  /** Releases it if this holder has it: whether it did. */
  release(): Promise<boolean>
  holder(): Promise<V | null>
  /**
   * Waits until not held, for at most `timeout` ms (absent: until then; 0: the state now): the
   * loss, or null if released, never held, or still held when the time is up.
   */
  lost(options?: { timeout?: number } & Abortable): Promise<Loss | null>
}

/** A lease on one key under one holder name. */
export interface Lease<V = Buffer> extends LeaseCalls<V>, SyncTwins<LeaseCalls<V>> {}
export declare class Lease<V = Buffer> {
  private constructor()
  /** The leased key. */
  readonly key: V
  /** The name this lease holds the key under. */
  readonly holderName: V
  readonly fencingToken: Version | null
  readonly isHeld: boolean
  /** The lease's state now. */
  readonly state: { state: 'notHeld' | 'held' | 'lost'; fencingToken: Version | null; loss: Loss | null }
  /** A stream with one `lost` event when the lease is lost. */
  lossEvents(): Observation<V>
}

/** The operations of a leader election (each with its Sync twin). */
interface ElectionCalls<V> {
  /** Waits until elected (or `timeout` ms): the fencing token. */
  campaign(options?: { timeout?: number } & Abortable): Promise<Version>
  tryCampaign(options?: Abortable): Promise<AcquireResult<V>>
  resign(): Promise<void>
  leader(): Promise<V | null>
  /**
   * Waits until the leadership is not held, for at most `timeout` ms (absent: until then; 0:
   * the state now): the loss, or null if resigned, never elected, or still leader when the
   * time is up.
   */
  lost(options?: { timeout?: number } & Abortable): Promise<Loss | null>
}

/** Leader election among candidates. */
export interface Election<V = Buffer> extends ElectionCalls<V>, SyncTwins<ElectionCalls<V>> {}
export declare class Election<V = Buffer> {
  private constructor()
  /** `elected` (leader in `holder`) and `vacant` events; the first is the current state. */
  observe(): Observation<V>
  observeSync(): Observation<V>
  /** The election's name (the key its leader holds). */
  readonly name: V
  /** This candidate's name. */
  readonly candidate: V
  readonly isLeader: boolean
  readonly fencingToken: Version | null
  lossEvents(): Observation<V>
}

/** The operations of a local state store (each with its Sync twin). */
interface LocalServerCalls {
  stop(): Promise<void>
}

/** A running local state store (from `mqtt-statestore/testing`). */
export interface LocalServer extends LocalServerCalls, SyncTwins<LocalServerCalls> {
  readonly host: string
  readonly port: number
  /**
   * The connection URL for `Client.connect(url)`: `mqtt://127.0.0.1:PORT`, `mqtts://` with TLS,
   * with the account (`mqtt://user:password@...`) when started with one. It holds the password:
   * keep it out of logs.
   */
  readonly url: string
  /** `{ host, port }` for `Client.connect` (the account, if any, goes in as options; `url` has it). */
  readonly connectOptions: { host: string; port: number }
  [Symbol.asyncDispose](): Promise<void>
}

export interface LocalServerOptions {
  /** Listen port (default 0: a free one). */
  port?: number
  /** Most keys the store holds. */
  maxKeys?: number
  /** The one account clients must log in with. */
  username?: string
  password?: string
  /** Attach to this MQTT 5 broker (`host:port`) instead of embedding one. */
  broker?: string
  /** Serve MQTT over TLS with this certificate chain (PEM file); needs `tlsKey`. */
  tlsCert?: string
  /** The private key (PEM file) of `tlsCert`. */
  tlsKey?: string
}

/** The operations of a client: each declared once, as its Promise method (the Sync twin follows). */
interface ClientCalls<V> {
  set(key: Bytes, value: Bytes, options?: SetOptions & Abortable): Promise<SetResult>
  /** The value and version, or null when the key does not exist. */
  get(key: Bytes, options?: GetOptions & Abortable): Promise<ValueResult<V> | null>
  delete(key: Bytes, options?: DeleteOptions & Abortable): Promise<DeleteResult>
  /** Deletes `key` only if it holds `value`. */
  vdel(key: Bytes, value: Bytes, options?: DeleteOptions & Abortable): Promise<DeleteResult>
  /**
   * The values of `keys`, one item per key in their order: the value, null when absent, or the
   * key's own error (a `StatestoreError` in the array, not a rejection). Client-side
   * pipelining, up to `maxInFlight` GETs in flight. An invalid key rejects the whole call with
   * STATESTORE_INVALID_ARGUMENT naming it, and nothing is sent.
   */
  getMany(keys: Iterable<Bytes>, options?: GetOptions & Abortable): Promise<Array<ValueResult<V> | null | StatestoreError>>
  /** Sets each `[key, value]` of `items` (an array of pairs or a Map) with the same options: one item per pair, its result or its error. */
  setMany(items: Iterable<readonly [Bytes, Bytes]> | Readonly<Record<string, Bytes>>, options?: SetOptions & Abortable): Promise<Array<SetResult | StatestoreError>>
  /** Deletes each of `keys` with the same options: one item per key, its result or its error. */
  deleteMany(keys: Iterable<Bytes>, options?: DeleteOptions & Abortable): Promise<Array<DeleteResult | StatestoreError>>
  /** Ends every observation of `key` on this client. */
  unobserve(key: Bytes): Promise<void>
  /** Waits for the lock `name` (`signal` aborts the wait). */
  lock(name: Bytes, options: LockOptions & Abortable): Promise<LockGuard<V>>
  tryLock(name: Bytes, options: LockOptions & Abortable): Promise<LockGuard<V> | null>
  /**
   * Calls in flight fail with STATESTORE_CLOSED, observations end. A lock, lease or election
   * being acquired is given back first (its request may have been applied), so close never
   * leaves it taken until its TTL ends. Idempotent.
   */
  close(): Promise<void>
}

export interface Client<V = Buffer> extends ClientCalls<V>, SyncTwins<ClientCalls<V>> {}
/**
 * A state store client: every operation as a Promise method and a blocking `…Sync` twin.
 * Safe to use from several async tasks at once (any number of calls in flight); each worker
 * thread creates its own clients.
 */
export declare class Client<V = Buffer> {
  private constructor()
  /**
   * Connects to the broker. With `returnStrings: true` values, keys and names are strings
   * (`Client<string>`), otherwise Buffers (`Client<Buffer>`); a `returnStrings` known only at
   * run time gives `Client<Buffer | string>`. A misspelt setting is a type error (and a
   * TypeError at run time).
   */
  static connect(options: ConnectOptions & { returnStrings: true }): Promise<Client<string>>
  static connect(options?: ConnectOptions & { returnStrings?: false }): Promise<Client<Buffer>>
  static connect(options: ConnectOptions): Promise<Client<Buffer | string>>
  static connectSync(options: ConnectOptions & { returnStrings: true }): Client<string>
  static connectSync(options?: ConnectOptions & { returnStrings?: false }): Client<Buffer>
  static connectSync(options: ConnectOptions): Client<Buffer | string>
  /**
   * Connects with a connection URL, `mqtt://[user[:password]@]host[:port][?option=value&...]`
   * or `mqtts://...` (TLS; port 1883 or 8883 by default). Query options are the snake_case
   * names of `CONNECT_OPTIONS` (`?client_id=app&keep_alive=30s&ca_file=/ca.pem`, durations
   * with a unit); `options` override the URL's. A malformed URL fails with
   * `STATESTORE_INVALID_ARGUMENT` naming the part at fault, the password shown as `***`.
   */
  static connect(url: string, options: ConnectOptions & { returnStrings: true }): Promise<Client<string>>
  static connect(url: string, options?: ConnectOptions & { returnStrings?: false }): Promise<Client<Buffer>>
  static connect(url: string, options: ConnectOptions): Promise<Client<Buffer | string>>
  static connectSync(url: string, options: ConnectOptions & { returnStrings: true }): Client<string>
  static connectSync(url: string, options?: ConnectOptions & { returnStrings?: false }): Client<Buffer>
  static connectSync(url: string, options: ConnectOptions): Client<Buffer | string>
  /** Connects with the `AIO_*` environment of an Azure IoT Operations pod; `overrides` win. */
  static fromEnv(overrides: ConnectOptions & { returnStrings: true }): Promise<Client<string>>
  static fromEnv(overrides?: ConnectOptions & { returnStrings?: false }): Promise<Client<Buffer>>
  static fromEnv(overrides: ConnectOptions): Promise<Client<Buffer | string>>
  static fromEnvSync(overrides: ConnectOptions & { returnStrings: true }): Client<string>
  static fromEnvSync(overrides?: ConnectOptions & { returnStrings?: false }): Client<Buffer>
  static fromEnvSync(overrides: ConnectOptions): Client<Buffer | string>
  /** The in-process local state store on a free port (same as `mqtt-statestore/testing`). */
  static startLocalServer(options?: LocalServerOptions): Promise<LocalServer>
  static startLocalServerSync(options?: LocalServerOptions): LocalServer

  readonly clientId: string
  readonly isClosed: boolean
  /** The connection's state now. */
  readonly connectionState: ConnectionState

  /**
   * The connection's changes from now on (`for await`, blocking `for ... of`, or listeners):
   * `connection` events with `state`, `reason`, `attempt`, `delay` (ms). Ends after `closed`.
   */
  connectionEvents(): Observation<Buffer>
  /** `listener(event)` for every change of the connection's state; keeps the process alive until `close()`. */
  on(event: 'connectionState', listener: (event: ConnectionEvent) => void): this
  off(event: 'connectionState', listener: (event: ConnectionEvent) => void): this

  /** Notifications of `key` (await `.ready` before relying on seeing a change). */
  observe(key: Bytes): Observation<V>
  observeSync(key: Bytes): Observation<V>
  /**
   * Keys matching a glob pattern (`user:*`), lazily. Patterns follow the service's dialect
   * (the Rust glob crate's `Pattern`): `*`, `?`, `[abc]`, `[a-z]`, `[!0-9]` negates (`[^...]`
   * does not), `[*]` matches a literal `*`; no backslash escape.
   */
  keys(pattern: Bytes): KeyIterator<V>
  keysSync(pattern: Bytes): KeyIterator<V>
  lease(key: Bytes, holder: Bytes, options?: { autoRenew?: boolean }): Lease<V>
  createLock(name: Bytes, options: LockOptions): Lock<V>
  election(name: Bytes, candidate: Bytes, options: { ttl: number }): Election<V>
  /** `await using client = await Client.connect(...)`: closed when the scope ends. */
  [Symbol.asyncDispose](): Promise<void>
}
