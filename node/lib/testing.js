'use strict'
// mqtt-statestore/testing: the local state store in this process, for tests. Its server is
// the addon of the mqtt-statestore-testing package, so the client ships without it.
const args = require('./args.js')

const INSTALL = 'npm install --save-dev mqtt-statestore-testing'

function missing(error) {
  return error && error.code === 'MODULE_NOT_FOUND' && String(error.message).includes("'mqtt-statestore-testing'")
}

let addon
function server() {
  if (addon) return addon
  try {
    addon = require('mqtt-statestore-testing')
  } catch (error) {
    if (!missing(error)) throw error
    try {
      // A checkout of the sources, where `npm run build` built it beside this package.
      addon = require('../testing/index.js')
    } catch {
      const hint = new Error(
        `mqtt-statestore/testing needs the local state store, which ships apart from the client: ${INSTALL}`,
      )
      hint.code = 'STATESTORE_TESTING_NOT_INSTALLED'
      hint.cause = error
      throw hint
    }
  }
  return addon
}

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
    this.#native.stopSync()
  }
  async [Symbol.asyncDispose]() {
    await this.stop()
  }
}

async function startLocalServer(options) {
  const checked = check(options)
  return new LocalServer(await server().NativeLocalServer.start(checked))
}

function startLocalServerSync(options) {
  const checked = check(options)
  return new LocalServer(server().NativeLocalServer.startSync(checked))
}

module.exports = { LocalServer, startLocalServer, startLocalServerSync }
