import type { Serde } from '../processor/serdes.js'
import type { LogRecord } from './partition-log.js'

/** The stored form of a key or value: typed when the serde allows it, otherwise serialized now. */
export function store(serde: Serde<unknown>, topic: string, data: unknown): unknown {
  return serde.inMemoryIdentity === true ? data : serde.serialize(topic, data)
}

export function storedSerde(serde: Serde<unknown>): Serde<unknown> | undefined {
  return serde.inMemoryIdentity === true ? serde : undefined
}

function bytesOf(stored: unknown, storedWith: Serde<unknown> | undefined, topic: string): Uint8Array | null {
  return storedWith === undefined ? (stored as Uint8Array | null) : storedWith.serialize(topic, stored)
}

export function keyBytes(r: LogRecord, topic: string): Uint8Array | null {
  return bytesOf(r.key, r.keySerde, topic)
}

export function valueBytes(r: LogRecord, topic: string): Uint8Array | null {
  return bytesOf(r.value, r.valueSerde, topic)
}

/** Reads a key with `serde`: the stored value itself if it was written with the same serde. */
export function readKey(r: LogRecord, serde: Serde<unknown>, topic: string): unknown {
  return r.keySerde === serde ? r.key : serde.deserialize(topic, keyBytes(r, topic))
}

export function readValue(r: LogRecord, serde: Serde<unknown>, topic: string): unknown {
  return r.valueSerde === serde ? r.value : serde.deserialize(topic, valueBytes(r, topic))
}
