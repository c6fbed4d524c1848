// The `mqtt-statestore` package as an ES module.
import cjs from './index.js'

export const { version, setLogHandler, Client, Observation, KeyIterator, Lock, LockGuard, Lease, Election, ErrorCodes, ERROR_TABLE, CONNECT_OPTIONS, compareVersions } = cjs
export default cjs
