/**
 * Kafka's murmur2 (seed 0x9747b28c), as its default partitioner uses it, so punctual lays keys out over
 * partitions exactly as a Kafka producer would. Integer arithmetic is 32-bit via Math.imul and `| 0`.
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length
  const m = 0x5bd1e995
  const r = 24
  let h = (0x9747b28c ^ length) | 0
  const length4 = length >> 2
  for (let i = 0; i < length4; i++) {
    const i4 = i << 2
    let k =
      ((data[i4] as number) & 0xff) |
      (((data[i4 + 1] as number) & 0xff) << 8) |
      (((data[i4 + 2] as number) & 0xff) << 16) |
      (((data[i4 + 3] as number) & 0xff) << 24)
    k = Math.imul(k, m)
    k ^= k >>> r
    k = Math.imul(k, m)
    h = Math.imul(h, m)
    h ^= k
  }
  // The last 1-3 bytes, highest first, as Kafka's switch with fall-through does.
  const tail = length & ~3
  const rest = length & 3
  if (rest === 3) h ^= ((data[tail + 2] as number) & 0xff) << 16
  if (rest >= 2) h ^= ((data[tail + 1] as number) & 0xff) << 8
  if (rest >= 1) {
    h ^= (data[tail] as number) & 0xff
    h = Math.imul(h, m)
  }
  h ^= h >>> 13
  h = Math.imul(h, m)
  h ^= h >>> 15
  return h | 0
}

/** Kafka's default partition for a non-null key: `toPositive(murmur2(key)) % numPartitions`. */
export function partitionForKey(key: Uint8Array, numPartitions: number): number {
  return (murmur2(key) & 0x7fffffff) % numPartitions
}

/**
 * The default partition of a String-serde key without encoding it: for an ASCII string the UTF-8
 * bytes are the char codes, so murmur2 reads them directly; other strings are encoded first.
 */
export function partitionForStringKey(key: string, numPartitions: number): number {
  const n = key.length
  for (let i = 0; i < n; i++) if (key.charCodeAt(i) > 0x7f) return partitionForKey(Buffer.from(key, 'utf8'), numPartitions)
  const m = 0x5bd1e995
  let h = (0x9747b28c ^ n) | 0
  const n4 = n >> 2
  for (let i = 0; i < n4; i++) {
    const i4 = i << 2
    let k = key.charCodeAt(i4) | (key.charCodeAt(i4 + 1) << 8) | (key.charCodeAt(i4 + 2) << 16) | (key.charCodeAt(i4 + 3) << 24)
    k = Math.imul(k, m)
    k ^= k >>> 24
    k = Math.imul(k, m)
    h = Math.imul(h, m)
    h ^= k
  }
  const tail = n & ~3
  const rest = n & 3
  if (rest === 3) h ^= key.charCodeAt(tail + 2) << 16
  if (rest >= 2) h ^= key.charCodeAt(tail + 1) << 8
  if (rest >= 1) {
    h ^= key.charCodeAt(tail)
    h = Math.imul(h, m)
  }
  h ^= h >>> 13
  h = Math.imul(h, m)
  h ^= h >>> 15
  return (h & 0x7fffffff) % numPartitions
}
