// Types of `mqtt-statestore/testing`: the in-process local state store for your tests.
import type { LocalServer, LocalServerOptions } from './index'

export type { LocalServer, LocalServerOptions }
/** Starts the local state store (embedded MQTT broker) on a free loopback port. */
export declare function startLocalServer(options?: LocalServerOptions): Promise<LocalServer>
export declare function startLocalServerSync(options?: LocalServerOptions): LocalServer
