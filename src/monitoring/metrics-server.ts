import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { invalidConfig } from '../errors.js'
import type { RuntimeMetrics } from '../metrics.js'
import { LivePageAssets } from './live-page.js'
import { PrometheusMetrics } from './prometheus.js'

/**
 * Where a runtime serves its metrics and live page (opt-in): `GET /metrics` in Prometheus' text format,
 * the page at `/`.
 */
export interface MetricsEndpoint {
  /** 0 picks a free port (`metricsAddress()` tells which). */
  port: number
  /** @default '127.0.0.1': only this machine; '0.0.0.0' for every interface */
  host?: string
}

export function validateMetricsEndpoint(where: string, endpoint: MetricsEndpoint | undefined): Required<MetricsEndpoint> | undefined {
  if (endpoint === undefined) return undefined
  if (endpoint === null || typeof endpoint !== 'object') throw invalidConfig(where, `metrics must be { port, host? }, got ${JSON.stringify(endpoint)}`)
  if (!Number.isInteger(endpoint.port) || endpoint.port < 0 || endpoint.port > 65_535) throw invalidConfig(where, `metrics.port must be an integer from 0 to 65535, got ${JSON.stringify(endpoint.port)}`)
  const host = endpoint.host ?? '127.0.0.1'
  if (typeof host !== 'string' || host.length === 0) throw invalidConfig(where, `metrics.host must be a host name or address, got ${JSON.stringify(endpoint.host)}`)
  return { port: endpoint.port, host }
}

/** The address a metrics server listens on. */
export interface MetricsAddress {
  /** The host the server listens on. */
  readonly host: string
  /** The port it listens on: the one asked for, or the one the system chose for port 0. */
  readonly port: number
  /** `http://host:port/metrics` */
  readonly url: string
  /** `http://host:port/`: the live page. */
  readonly pageUrl: string
}

/** What the server shows besides the metrics: the topology, drawn once at start. */
export interface ServedApplication {
  readonly metrics: () => RuntimeMetrics
  /** The topology as SVG (`topologySvg`). */
  readonly topologySvg: string
  /** How often the live page is sent a snapshot. @default 1000 */
  readonly updateIntervalMs?: number
}

const TEXT = 'text/plain; charset=utf-8'

/**
 * An HTTP server for a running application:
 * - `GET /metrics`: Prometheus' text format, from one snapshot per request;
 * - `GET /`: the live page (`live-page/`), which reads the routes below;
 * - `GET /topology.svg`: the topology drawn;
 * - `GET /metrics.json`: one snapshot (`RuntimeMetrics`) as JSON;
 * - `GET /events`: server-sent events, a snapshot at once and then one per update interval. One timer
 *   serves every open stream, and runs only while one is open.
 */
export class MetricsServer {
  private readonly streams = new Set<ServerResponse>()
  private ticker: NodeJS.Timeout | undefined
  private readonly server: Server = createServer((req, res) => this.handle(req, res))
  private readonly prometheus: PrometheusMetrics
  private where: MetricsAddress | undefined

  private constructor(
    private readonly app: ServedApplication,
    private readonly page: LivePageAssets,
  ) {
    this.prometheus = new PrometheusMetrics(app.metrics)
  }

  /** Listens; rejects when the port cannot be had (in use, not allowed). */
  static async listen(endpoint: Required<MetricsEndpoint>, app: ServedApplication): Promise<MetricsServer> {
    const self = new MetricsServer(app, await LivePageAssets.load())
    const server = self.server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(endpoint.port, endpoint.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    const { port } = server.address() as AddressInfo
    const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host
    self.where = { host: endpoint.host, port, url: `http://${host}:${port}/metrics`, pageUrl: `http://${host}:${port}/` }
    return self
  }

  get address(): MetricsAddress {
    return this.where as MetricsAddress
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    if (req.method !== 'GET') return void res.writeHead(405, { 'content-type': TEXT, allow: 'GET' }).end('only GET\n')
    switch (path) {
      case '/metrics':
        this.prometheus.scrape().then(
          (text) => res.writeHead(200, { 'content-type': this.prometheus.contentType }).end(text),
          (err: unknown) => res.writeHead(500, { 'content-type': TEXT }).end(`collecting the metrics failed: ${(err as Error).message}\n`),
        )
        return
      case '/metrics.json':
        return void res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(this.app.metrics()))
      case '/topology.svg':
        return void res.writeHead(200, { 'content-type': 'image/svg+xml' }).end(this.app.topologySvg)
      case '/events':
        return this.openStream(req, res)
      default: {
        const asset = this.page.get(path)
        if (asset === undefined) return void res.writeHead(404, { 'content-type': TEXT }).end('not found: the live page is at /, the metrics at /metrics\n')
        res.writeHead(200, { 'content-type': asset.contentType }).end(asset.body)
      }
    }
  }

  /** Stops listening and ends open connections. */
  async close(): Promise<void> {
    clearInterval(this.ticker)
    this.ticker = undefined
    for (const res of this.streams) res.end()
    this.streams.clear()
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private openStream(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' })
    res.write(`retry: 2000\n\n${this.event()}`)
    this.streams.add(res)
    req.on('close', () => {
      this.streams.delete(res)
      if (this.streams.size === 0) {
        clearInterval(this.ticker)
        this.ticker = undefined
      }
    })
    if (this.ticker === undefined) {
      this.ticker = setInterval(() => {
        const event = this.event()
        for (const stream of this.streams) stream.write(event)
      }, this.app.updateIntervalMs ?? 1000)
      // An open page does not keep the process alive.
      this.ticker.unref()
    }
  }

  private event(): string {
    return `event: metrics\ndata: ${JSON.stringify(this.app.metrics())}\n\n`
  }
}

/**
 * A runtime's metrics server from its start to its stop (none without an endpoint): listening begins at
 * start without holding it up, `address()` waits for it, and a port that cannot be had is reported.
 */
export class RuntimeMetricsServer {
  private serving: Promise<MetricsServer | undefined> = Promise.resolve(undefined)

  constructor(private readonly endpoint: Required<MetricsEndpoint> | undefined) {}

  start(app: ServedApplication, onListening: (address: MetricsAddress) => void, onError: (err: Error) => void): void {
    const endpoint = this.endpoint
    if (endpoint === undefined) return
    this.serving = MetricsServer.listen(endpoint, app).then(
      (server) => {
        onListening(server.address)
        return server
      },
      (err: unknown) => {
        onError(invalidConfig('metrics', `cannot serve metrics on ${endpoint.host}:${endpoint.port}: ${(err as Error).message}`))
        return undefined
      },
    )
  }

  /** Where the metrics are served, once listening (undefined: no endpoint, or it failed). */
  async address(): Promise<MetricsAddress | undefined> {
    return (await this.serving)?.address
  }

  async close(): Promise<void> {
    const server = await this.serving
    this.serving = Promise.resolve(undefined)
    await server?.close()
  }
}
