import { readFile } from 'node:fs/promises'

/** A file of the live page, as served. */
export interface Asset {
  readonly contentType: string
  readonly body: Buffer
}

/** The page's files, by URL path: static, no build step, read once per server. */
const FILES: ReadonlyArray<readonly [path: string, file: string, contentType: string]> = [
  ['/', 'index.html', 'text/html; charset=utf-8'],
  ['/live.js', 'live.js', 'text/javascript; charset=utf-8'],
]

/**
 * The live page's files. They sit in `live-page/` beside this module in the sources, and beside the
 * bundle in `dist/` (tsup copies them there), so one relative URL finds them in both.
 */
export class LivePageAssets {
  private constructor(private readonly assets: ReadonlyMap<string, Asset>) {}

  static async load(): Promise<LivePageAssets> {
    const assets = new Map<string, Asset>()
    for (const [path, file, contentType] of FILES) {
      assets.set(path, { contentType, body: await readFile(new URL(`./live-page/${file}`, import.meta.url)) })
    }
    return new LivePageAssets(assets)
  }

  get(path: string): Asset | undefined {
    return this.assets.get(path === '/index.html' ? '/' : path)
  }
}
