/** Sync: the wire protocol, sessions, the relay server and the replica's client. */
export { Relay, HANDSHAKE_TIMEOUT_MS, RELAY_HEARTBEAT_MS, type RelayOptions, type RelayStats, type RelaySpaceStats } from './relay.js'
export { SyncClient, type SyncOptions, type SyncStatus, type SyncClientEvents } from './sync-client.js'
export { SyncSession, WINDOW, HIGH_WATER_BYTES, MAX_FRAME_APPLY_MS, type SyncEndpoint, type SessionEvents } from './sync-session.js'
export { encodeMessage, decodeMessage, PROTOCOL_VERSIONS, MAX_FRAME_BYTES, MAX_FRAME_EVENTS, type Message, type WireEvent, type WithheldEvent } from './messages.js'
export { cutFrames } from './frames.js'
export { WebSocketTransport, DEFAULT_HEARTBEAT_MS, CLOSE_PEER_TIMEOUT, type Transport, type WebSocketTransportOptions } from './transport.js'
