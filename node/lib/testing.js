'use strict'
// statestore/testing: the local state store in this process, for tests.
const native = require('./native.js')
const args = require('./args.js')
const { SYNC } = require('./call.js')

const OPTIONS = ['port', 'maxKeys', 'username', 'password', 'broker', 'tlsCert', 'tlsKey']

function check(options) {
  const o = args.options(options, 'options', OPTIONS)
  for (const key of ['port', 'maxKeys']) {
    if (o[key] !== undefined && (typeof o[key] !== 'number' || !Number.isInteger(o[key]) || o[key] < 0)) {
      throw args.typeError(`options.${key}`, 'a non-negative integer', o[key])
    }
  }
  for (const key of ['username', 'password', 'broker', 'tlsCert', 'tlsKey']) args.string(o[key], `options.${key}`)
  return { ...o }
}

/** A running local state store. */
class LocalServer {
  #native
  constructor(n) {
    this.#native = n
  }
  get host() {
    return this.#native.host
  }
  get port() {
    return this.#native.port
  }
  /** `{ host, port }`: pass to `Client.connect`. */
  get connectOptions() {
    return { host: this.host, port: this.port }
  }
  async stop() {
    return this.#native.stop()
  }
  stopSync() {
    this.#native.stop(SYNC)
  }
  async [Symbol.asyncDispose]() {
    await this.stop()
  }
}

async function startLocalServer(options) {
  return new LocalServer(await native.NativeLocalServer.start(check(options)))
}

function startLocalServerSync(options) {
  return new LocalServer(native.NativeLocalServer.start(check(options), SYNC))
}

module.exports = { LocalServer, startLocalServer, startLocalServerSync }
