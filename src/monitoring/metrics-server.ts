import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { invalidConfig } from '../errors.js'
import type { RuntimeMetrics } from '../metrics.js'
import { PrometheusMetrics } from './prometheus.js'

/** Where a runtime serves its metrics (opt-in): `GET /metrics` in Prometheus' text format. */
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
  readonly host: string
  readonly port: number
  /** `http://host:port/metrics` */
  readonly url: string
}

/** An HTTP server with `GET /metrics`: the runtime's metrics from one snapshot per request. */
export class MetricsServer {
  private constructor(
    private readonly server: Server,
    readonly address: MetricsAddress,
  ) {}

  /** Listens; rejects when the port cannot be had (in use, not allowed). */
  static async listen(endpoint: Required<MetricsEndpoint>, source: () => RuntimeMetrics): Promise<MetricsServer> {
    const prometheus = new PrometheusMetrics(source)
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]
      if (req.method !== 'GET' || path !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: the metrics are at GET /metrics\n')
        return
      }
      prometheus.scrape().then(
        (text) => res.writeHead(200, { 'content-type': prometheus.contentType }).end(text),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`collecting the metrics failed: ${(err as Error).message}\n`),
      )
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(endpoint.port, endpoint.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    const { port } = server.address() as AddressInfo
    const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host
    return new MetricsServer(server, { host: endpoint.host, port, url: `http://${host}:${port}/metrics` })
  }

  /** Stops listening and ends open connections. */
  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/**
 * A runtime's metrics server from its start to its stop (none without an endpoint): listening begins at
 * start without holding it up, `address()` waits for it, and a port that cannot be had is reported.
 */
export class RuntimeMetricsServer {
  private serving: Promise<MetricsServer | undefined> = Promise.resolve(undefined)

  constructor(private readonly endpoint: Required<MetricsEndpoint> | undefined) {}

  start(source: () => RuntimeMetrics, onListening: (address: MetricsAddress) => void, onError: (err: Error) => void): void {
    const endpoint = this.endpoint
    if (endpoint === undefined) return
    this.serving = MetricsServer.listen(endpoint, source).then(
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
