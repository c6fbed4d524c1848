'use strict'
// mqtt-statestore/testing: the local state store in this process, for tests. Its server is
// the addon of the mqtt-statestore-testing package, so the client ships without it.
const { Wrapper, backs } = require('./call.js')

let addon
/**
 * The testing addon: the package, or in a checkout the addon `npm run build` built beside this
 * package; neither: how to install it.
 */
function server() {
  let cause
  for (const name of ['mqtt-statestore-testing', '../testing/index.js']) {
    try {
      return (addon ??= require(name))
    } catch (error) {
      if (error?.code !== 'MODULE_NOT_FOUND' || !String(error.message).includes(`'${name}'`)) throw error
      cause ??= error
    }
  }
  const hint = new Error('mqtt-statestore/testing needs the local state store, which ships apart from the client: npm install --save-dev mqtt-statestore-testing')
  throw Object.assign(hint, { code: 'STATESTORE_TESTING_NOT_INSTALLED', cause })
}

/** A running local state store. */
class LocalServer extends Wrapper {
  /** `{ host, port }`: pass to `Client.connect` (with the account, if any, as options; `url` has it). */
  get connectOptions() {
    return { host: this.host, port: this.port }
  }
  async [Symbol.asyncDispose]() {
    await this.stop()
  }
}
Wrapper.define(LocalServer, {
  native: 'NativeLocalServer',
  addon: server,
  made: 'startLocalServer()',
  getters: ['host', 'port'],
  secrets: ['url'], // not shown by inspect: it holds the password
  plain: { stop: null, stopSync: null },
  twins: false,
})

/** Starts a local state store (`options`: port, maxKeys, username, password, broker, tlsCert, tlsKey). */
function startLocalServer(options) {
  try {
    return server().NativeLocalServer.start(options).then((n) => new LocalServer(n))
  } catch (error) {
    return Promise.reject(error)
  }
}

function startLocalServerSync(options) {
  return new LocalServer(server().NativeLocalServer.startSync(options))
}
backs('', { startLocalServer: ['NativeLocalServer.start'], startLocalServerSync: ['NativeLocalServer.startSync'] })

module.exports = { LocalServer, startLocalServer, startLocalServerSync }
