'use strict'
// mqtt-statestore/testing: the local state store in this process, for tests. Its server is
// the addon of the mqtt-statestore-testing package, so the client ships without it.
const args = require('./args.js')
const { Wrapper, functions } = require('./call.js')

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
  twins: { stop: { native: ['stop', 'stopSync'] } },
})

// The addon refuses a port or key count that is no whole number in range, naming it.
const OPTIONS = args.fields({
  port: args.number,
  maxKeys: args.number,
  ...Object.fromEntries(['username', 'password', 'broker', 'tlsCert', 'tlsKey'].map((key) => [key, args.string])),
})
module.exports = { LocalServer }
functions(module.exports, '', {
  native: 'NativeLocalServer',
  addon: server,
  twins: { startLocalServer: { native: ['start', 'startSync'], args: [OPTIONS], result: (n) => new LocalServer(n) } },
})
