// `mqtt-statestore/testing` as an ES module.
import cjs from './testing.js'

export const { LocalServer, startLocalServer, startLocalServerSync } = cjs
export default cjs
