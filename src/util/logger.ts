/** Where punctual writes diagnostics. Injectable; the default writes to stderr. */
export interface Logger {
  info(message: string): void
  warn(message: string): void
  error(message: string): void
}

export const consoleLogger: Logger = {
  info: (m) => console.error(`[punctual] ${m}`),
  warn: (m) => console.error(`[punctual] WARN ${m}`),
  error: (m) => console.error(`[punctual] ERROR ${m}`),
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} }
