import { PunctualError } from '../errors.js'
import { checkWritable, describeValue } from '../processor/serdes.js'
import type { Serde } from '../processor/serdes.js'

/** The serdes a store writes its changelog with, when its builder was given them. */
export interface StoreWriteSerdes {
  readonly keySerde?: Serde<unknown> | undefined
  readonly valueSerde?: Serde<unknown> | undefined
}

/**
 * Refuses, at the put, an entry the store could not write at the commit: a key or value its serdes
 * cannot write, or, without a key serde, a key that is not a string, number, bigint or boolean (the
 * changelog and the disk encode those by type). Only typeof checks on an entry that fits.
 */
export function checkStoreWrite(store: string, serdes: StoreWriteSerdes, key: unknown, value: unknown): void {
  const keySerde = serdes.keySerde
  if (keySerde !== undefined) checkWritable(keySerde, 'key', key, key, 'store', store)
  else {
    const t = typeof key
    if (t !== 'string' && t !== 'number' && t !== 'bigint' && t !== 'boolean') {
      throw new PunctualError('INVALID_ARGUMENT', `store "${store}" cannot take key ${describeValue(key)}: without a key serde a store key is a string, number, bigint or boolean`)
    }
  }
  const valueSerde = serdes.valueSerde
  if (valueSerde !== undefined && value !== undefined) checkWritable(valueSerde, 'value', value, key, 'store', store)
}
