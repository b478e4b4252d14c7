import { PunctualError } from '../errors.js'
import type { StoreKey } from '../processor/api.js'
import type { StoreDisk } from '../state/persistent-store.js'
import { bigEndian64, fromBigEndian64 } from './key-id.js'

/** A window cell as its store logs it (and keeps it on disk): the key, its id, the window start, the aggregate and its timestamp. */
export interface SavedCell<K, VA> {
  readonly key: K
  readonly id: string
  readonly start: number
  readonly agg: VA
  readonly ts: number
}

/**
 * The store key of a window cell: the start as 8 big-endian bytes, then the windowed key id (key bytes,
 * then the start again). Start first, so one window's cells are one range of the disk, and a window
 * closes with one range read; the windowed id after it orders those cells as a suppression emits them
 * (and makes the key Kafka's windowed key with the start in front). Every character is a byte (latin1),
 * so string order, UTF-8 byte order and the changelog's serialized key order agree.
 */
export function windowStoreKey(windowedId: string): string {
  return windowedId.slice(-8) + windowedId
}

/**
 * A string decoded from the disk, as a string of its own. A value's strings may all be slices of one
 * (msgpackr decodes them at once), so a short key id kept in memory (a closing window's tombstones,
 * noted until the next commit) would keep the whole value alive with it: 3 KB per cell where the id
 * is 20 bytes.
 */
export function ownCopy(s: string): string {
  return Buffer.from(s, 'latin1').toString('latin1')
}

/** The window start of a store key (`windowStoreKey`). */
export function storeKeyStart(key: string): number {
  return fromBigEndian64(key, 0)
}

/** The key id of a store key (`windowStoreKey`). */
export function storeKeyId(key: string): string {
  return key.slice(8, -8)
}

/** Whether a store key has the layout of `windowStoreKey` (the start, then the windowed id ending with the start). */
export function isWindowStoreKey(key: StoreKey): boolean {
  return typeof key === 'string' && key.length >= 16 && key.startsWith(key.slice(-8))
}

/**
 * A time-window store's committed cells on disk (`StoreDisk`, key order: `windowStoreKey`). The store's
 * own fields (stream time, flags) are under negative number keys, which sort before every cell.
 */
export class WindowDisk<K, VA> {
  constructor(
    private readonly store: string,
    private readonly disk: StoreDisk,
  ) {}

  /** A saved field of the store (a negative number key), or undefined. */
  field(key: number): unknown {
    return this.disk.get(key)
  }

  /** The cell of a window and key id, if the disk has it. */
  cell(start: number, id: string): SavedCell<K, VA> | undefined {
    const start8 = bigEndian64(start)
    return this.disk.get(start8 + id + start8) as SavedCell<K, VA> | undefined
  }

  /** One window's cells, in store key order (the windowed key ids'). */
  *window(start: number): Generator<[key: string, cell: SavedCell<K, VA>]> {
    const start8 = bigEndian64(start)
    for (const [key, saved] of this.disk.entries(start8)) {
      if (typeof key !== 'string' || !key.startsWith(start8)) return
      yield [this.checked(key), saved as SavedCell<K, VA>]
    }
  }

  /** The starts of the windows on disk, oldest first: one range read per window (a store holds few). */
  starts(): number[] {
    const out: number[] = []
    let from = ''
    for (;;) {
      let next: string | undefined
      for (const [key] of this.disk.entries(from)) {
        if (typeof key === 'string') next = this.checked(key)
        break
      }
      if (next === undefined) return out
      const start = storeKeyStart(next)
      out.push(start)
      from = bigEndian64(start + 1)
    }
  }

  private checked(key: string): string {
    if (isWindowStoreKey(key)) return key
    throw otherLayout(this.store, key)
  }
}

/** A key of another layout was written by an older punctual: its windows cannot be read in order. */
export function otherLayout(store: string, key: StoreKey): PunctualError {
  return new PunctualError(
    'STATE_DIR',
    `window store "${store}" holds a cell under a key of another layout (${String(key).length} characters), written by an older punctual; reset the application's state (its state directory and, on Kafka, its changelog topics)`,
  )
}
