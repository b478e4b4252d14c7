import { PunctualError } from '../errors.js'
import { loadOptional } from './client.js'
import type { AbortedTransaction, Decompress } from './record-batches.js'
import { connectionSecurity } from './wire-security.js'
import type { WireSecurity } from './wire-security.js'

/**
 * The three broker requests the direct fetcher makes (Metadata, Fetch, ListOffsets), over the connections
 * of `@platformatic/kafka`: its connection frames requests and matches responses (and speaks TLS and
 * SASL), its writer and reader encode the protocol's types. The Fetch response is read here, not by the
 * library: each partition's records stay one buffer, decoded as the task reads them (record-batches.ts).
 */

export const WIRE_LIBRARY = '@platformatic/kafka'
export const WIRE_INSTALL = `npm install ${WIRE_LIBRARY}`

/** A partition to fetch, from `offset`. */
export interface PartitionFetch {
  readonly topic: string
  readonly partition: number
  readonly offset: number
  /** The leader epoch the metadata gave (-1: unknown); a broker with another epoch refuses the fetch. */
  readonly leaderEpoch: number
  /** Bytes of this partition the response may hold (its first batch comes whole in any case). */
  readonly maxBytes: number
}

export interface FetchRequest {
  readonly maxWaitMs: number
  /** 0 read_uncommitted, 1 read_committed. */
  readonly isolationLevel: 0 | 1
  readonly maxBytes: number
  readonly partitions: readonly PartitionFetch[]
}

/** One partition of a Fetch response. */
export interface PartitionFetched {
  readonly topic: string
  readonly partition: number
  readonly errorCode: number
  readonly highWatermark: number
  readonly lastStableOffset: number
  readonly aborted: readonly AbortedTransaction[] | undefined
  readonly records: Buffer | undefined
}

/** Where a partition's leader is. */
export interface PartitionLeader {
  readonly nodeId: number
  readonly epoch: number
}

export interface ClusterMetadata {
  /** By `topic:partition`; a partition without a leader now is absent. */
  readonly leaders: ReadonlyMap<string, PartitionLeader>
  readonly brokers: ReadonlyMap<number, { readonly host: string; readonly port: number }>
}

/** A connection to one broker. */
export interface BrokerLink {
  fetch(request: FetchRequest): Promise<PartitionFetched[]>
  /** Offsets at `timestamp` (-2: the log start) of partitions this broker leads, by `topic:partition`; a partition's error code instead where it failed. */
  listOffsets(partitions: ReadonlyArray<{ topic: string; partition: number; leaderEpoch: number }>, timestamp: number, isolationLevel: 0 | 1): Promise<Map<string, number | { errorCode: number }>>
  close(): void
}

/** The cluster as the direct fetcher sees it: metadata, and a link per broker. */
export interface ClusterWire {
  metadata(topics: readonly string[]): Promise<ClusterMetadata>
  /** The link to broker `nodeId` (made on first use; a link closed after an error is made again). */
  link(nodeId: number): BrokerLink
  readonly decompress: Decompress
  close(): void
}

/** What the wire needs of `@platformatic/kafka` (the names it exports). */
export interface WireLibrary {
  Connection: new (clientId: string, options?: object) => WireConnection
  createAPI(apiKey: number, apiVersion: number, createRequest: (...args: never[]) => unknown, parse: (correlationId: number, apiKey: number, apiVersion: number, reader: WireReader) => unknown): WireApi
  Writer: { create(): unknown }
  fetchV12: { createRequest: (...args: never[]) => unknown }
  metadataV12: { api: WireApi }
  listOffsetsV9: { api: WireApi }
  findCoordinatorV6: { api: WireApi }
  offsetCommitV9: { api: WireApi }
  offsetFetchV9: { api: WireApi }
  apiVersionsV3: { api: WireApi }
  listGroupsV5: { api: WireApi }
  compressionsAlgorithmsByBitmask: Record<number, { decompressSync(data: Buffer): Buffer; available?: boolean } | undefined>
}

export interface WireConnection {
  readonly status: string
  connect(host: string, port: number): Promise<void>
  close(): Promise<void>
  on(event: 'error', listener: (err: Error) => void): unknown
}

export interface WireApi {
  async(connection: WireConnection, ...args: unknown[]): Promise<unknown>
}

export interface WireReader {
  position: number
  buffer: { slice(start: number, end: number): Buffer }
  readInt8(): number
  readInt16(): number
  readInt32(): number
  readInt64(): bigint
  readUnsignedVarInt(): number
  readString(compact?: boolean): string
  readTaggedFields(): void
  readNullableArray<T>(entry: (r: WireReader) => T): T[] | null
  readArray<T>(entry: (r: WireReader) => T): T[]
  skip(n: number): void
}

let loaded: Promise<WireLibrary> | undefined

/** Loads the wire library, or fails with DEPENDENCY_MISSING naming its install command. */
export function loadWire(): Promise<WireLibrary> {
  loaded ??= loadOptional<WireLibrary>(WIRE_LIBRARY, 'the direct fetch of the Kafka runtime', WIRE_INSTALL)
  return loaded
}

/** Whether the wire library is installed (the Kafka runtime falls back to librdkafka's fetching without it). */
export async function wireAvailable(): Promise<boolean> {
  try {
    await loadWire()
    return true
  } catch (err) {
    if (err instanceof PunctualError && err.code === 'DEPENDENCY_MISSING') return false
    throw err
  }
}

/** A connection being made, and when it is ready. */
export interface WireLink {
  readonly connection: WireConnection
  readonly ready: Promise<void>
}

/** A connection to `host:port`, named `clientId`, secured by `security` (undefined: plaintext). */
export function openLink(lib: WireLibrary, clientId: string, host: string, port: number, security: WireSecurity | undefined): WireLink {
  // A request unanswered for 10 s fails (a fetch waits 100 ms at most on the broker): its broker is looked up again.
  const connection = new lib.Connection(clientId, { requestTimeout: 10_000, ...connectionSecurity(security, host) })
  // A socket error also fails the requests out on it, which is how their callers hear of it; unheard,
  // the connection's 'error' event would end the process.
  connection.on('error', () => {})
  const ready = connection.connect(host, port)
  ready.catch(() => {})
  return { connection, ready }
}

/** The cluster at `bootstrapServers` (`host:port,...`), connections named `clientId` and secured by `security`. */
export async function connectWire(bootstrapServers: string, clientId: string, security: WireSecurity | undefined): Promise<ClusterWire> {
  const lib = await loadWire()
  const fetchApi = lib.createAPI(1, 12, lib.fetchV12.createRequest, parseFetch)
  const bootstrap = parseBootstrap(bootstrapServers)
  let brokers: ReadonlyMap<number, { host: string; port: number }> = new Map()
  const links = new Map<number, BrokerLink & { connection: WireConnection }>()
  let metadataLink: WireLink | undefined
  let next = 0

  const open = (host: string, port: number): WireLink => openLink(lib, clientId, host, port, security)
  /** A connection the broker closed (idle too long, restarted) is made again rather than failing the next request. */
  const gone = (connection: WireConnection): boolean => connection.status === 'closed' || connection.status === 'error'

  const link = (nodeId: number): BrokerLink => {
    const existing = links.get(nodeId)
    if (existing !== undefined && !gone(existing.connection)) return existing
    existing?.close()
    const address = brokers.get(nodeId)
    if (address === undefined) throw new Error(`broker ${nodeId} is not in the cluster's metadata`)
    const { connection, ready } = open(address.host, address.port)
    const made: BrokerLink & { connection: WireConnection } = {
      connection,
      fetch: async (r) => {
        await ready
        const topics = byTopic(r.partitions).map(([topic, parts]) => ({
          topicId: topic,
          partitions: parts.map((p) => ({ partition: p.partition, currentLeaderEpoch: p.leaderEpoch, fetchOffset: BigInt(p.offset), lastFetchedEpoch: -1, partitionMaxBytes: p.maxBytes })),
        }))
        return (await fetchApi.async(connection, r.maxWaitMs, 1, r.maxBytes, r.isolationLevel, 0, -1, topics, [], '')) as PartitionFetched[]
      },
      listOffsets: async (partitions, timestamp, isolationLevel) => {
        await ready
        const topics = byTopic(partitions).map(([name, parts]) => ({ name, partitions: parts.map((p) => ({ partitionIndex: p.partition, currentLeaderEpoch: p.leaderEpoch, timestamp: BigInt(timestamp) })) }))
        const response = (await lib.listOffsetsV9.api.async(connection, -1, isolationLevel, topics).catch(responseOf)) as ListOffsetsResponse
        const out = new Map<string, number | { errorCode: number }>()
        for (const t of response.topics) for (const p of t.partitions) out.set(`${t.name}:${p.partitionIndex}`, p.errorCode === 0 ? Number(p.offset) : { errorCode: p.errorCode })
        return out
      },
      close: () => {
        if (links.get(nodeId) === made) links.delete(nodeId)
        void connection.close().catch(() => {})
      },
    }
    links.set(nodeId, made)
    return made
  }

  return {
    decompress: (codec, data) => {
      const algorithm = lib.compressionsAlgorithmsByBitmask[codec]
      if (algorithm === undefined || algorithm.available === false) throw new Error(`records compressed with codec ${codec}, which this Node.js cannot decompress`)
      return codec === SNAPPY && isXerialFramed(data) ? unframeXerial(data, (block) => algorithm.decompressSync(block)) : algorithm.decompressSync(data)
    },
    async metadata(topics) {
      // The metadata connection goes to a bootstrap server, the next one after a failure.
      for (let attempt = 0; ; attempt++) {
        const address = bootstrap[next % bootstrap.length] as { host: string; port: number }
        if (metadataLink !== undefined && gone(metadataLink.connection)) metadataLink = undefined
        metadataLink ??= open(address.host, address.port)
        try {
          await metadataLink.ready
          const response = (await lib.metadataV12.api.async(metadataLink.connection, topics, false, false).catch(responseOf)) as MetadataResponse
          brokers = new Map(response.brokers.map((b) => [b.nodeId, { host: b.host, port: b.port }]))
          const leaders = new Map<string, PartitionLeader>()
          for (const t of response.topics) {
            for (const p of t.partitions) if (p.errorCode === 0 && p.leaderId >= 0) leaders.set(`${t.name}:${p.partitionIndex}`, { nodeId: p.leaderId, epoch: p.leaderEpoch })
          }
          return { leaders, brokers }
        } catch (err) {
          void metadataLink.connection.close().catch(() => {})
          metadataLink = undefined
          next++
          if (attempt + 1 >= bootstrap.length) throw err
        }
      }
    },
    link,
    close() {
      for (const l of [...links.values()]) l.close()
      if (metadataLink !== undefined) void metadataLink.connection.close().catch(() => {})
      metadataLink = undefined
    },
  }
}

const SNAPPY = 2
/** The header of snappy-java's framing ("\x82SNAPPY\0", then a version and a compatible version). */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00])
const XERIAL_HEADER = 16

/** Whether snappy data is in snappy-java's framing, as Kafka's Java producer and broker write it. */
export function isXerialFramed(data: Buffer): boolean {
  return data.length >= XERIAL_HEADER && data.subarray(0, 8).equals(XERIAL_MAGIC)
}

/** snappy-java's framing: after the header, blocks of [i32 length][raw snappy block], each decompressed and joined. */
export function unframeXerial(data: Buffer, block: (raw: Buffer) => Buffer): Buffer {
  const parts: Buffer[] = []
  let pos = XERIAL_HEADER
  while (pos + 4 <= data.length) {
    const length = data.readInt32BE(pos)
    pos += 4
    if (length < 0 || pos + length > data.length) throw new Error(`corrupt snappy framing: a block of ${length} bytes at ${pos - 4} of ${data.length}`)
    parts.push(block(data.subarray(pos, pos + length)))
    pos += length
  }
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)
}

/** `host:port[,host:port...]`, an IPv6 host in brackets (`[::1]:9092`) as librdkafka takes it. */
export function parseBootstrap(servers: string): Array<{ host: string; port: number }> {
  return servers.split(',').map((entry) => {
    const s = entry.trim()
    const at = s.lastIndexOf(':')
    const host = s.slice(0, at)
    return { host: host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host, port: Number(s.slice(at + 1)) }
  })
}

interface MetadataResponse {
  brokers: Array<{ nodeId: number; host: string; port: number }>
  topics: Array<{ name: string; partitions: Array<{ errorCode: number; partitionIndex: number; leaderId: number; leaderEpoch: number }> }>
}

interface ListOffsetsResponse {
  topics: Array<{ name: string; partitions: Array<{ partitionIndex: number; errorCode: number; offset: bigint }> }>
}

/** The library throws a response holding an error code, with the response attached: partition errors are read from it. */
export function responseOf(err: unknown): unknown {
  const response = (err as { response?: unknown }).response
  if (response !== undefined) return response
  throw err
}

function byTopic<P extends { topic: string }>(partitions: readonly P[]): Array<[string, P[]]> {
  const out = new Map<string, P[]>()
  for (const p of partitions) {
    const list = out.get(p.topic)
    if (list === undefined) out.set(p.topic, [p])
    else list.push(p)
  }
  return [...out]
}

/**
 * Fetch response v12: throttle_time_ms i32, error_code i16, session_id i32, [topic (compact string),
 * [partition i32, error_code i16, high_watermark i64, last_stable_offset i64, log_start_offset i64,
 * aborted_transactions [producer_id i64, first_offset i64], preferred_read_replica i32, records]].
 */
function parseFetch(_correlationId: number, _apiKey: number, _apiVersion: number, r: WireReader): PartitionFetched[] {
  r.readInt32()
  const errorCode = r.readInt16()
  r.readInt32()
  if (errorCode !== 0) throw Object.assign(new Error(`fetch failed with error code ${errorCode}`), { errorCode })
  const out: PartitionFetched[] = []
  r.readArray((t) => {
    const topic = t.readString()
    t.readArray((p) => {
      const partition = p.readInt32()
      const code = p.readInt16()
      const highWatermark = Number(p.readInt64())
      const lastStableOffset = Number(p.readInt64())
      p.readInt64()
      const aborted = p.readNullableArray((a) => ({ producerId: a.readInt64(), firstOffset: Number(a.readInt64()) })) ?? undefined
      p.readInt32()
      // COMPACT_RECORDS: the length plus one (0: null).
      const size = p.readUnsignedVarInt() - 1
      let records: Buffer | undefined
      if (size > 0) {
        records = p.buffer.slice(p.position, p.position + size)
        p.skip(size)
      }
      out.push({ topic, partition, errorCode: code, highWatermark, lastStableOffset, aborted: aborted === undefined || aborted.length === 0 ? undefined : aborted, records })
    })
  })
  return out
}
