// Types of scripts/kafka-broker.mjs for the TypeScript that uses it (bench/kafka.ts, the Kafka tests).
export interface StartedBroker {
  readonly bootstrap: string
  readonly pid: number
  readonly dir: string
}
/** The SASL_SSL listener of a broker started with `secured`: TLS with a self-signed certificate, SASL PLAIN and SCRAM-SHA-512. */
export interface SecuredListener {
  readonly bootstrap: string
  /** The broker's certificate in PEM, for the clients' `ssl.ca.location`. */
  readonly caLocation: string
  readonly username: string
  readonly password: string
}
export const SECURED_USER: { readonly username: string; readonly password: string }
export function provision(): string
export function startBroker(): Promise<StartedBroker>
export function startBroker(options: { secured: true }): Promise<StartedBroker & { readonly secured: SecuredListener }>
export function restartBroker(dir: string): Promise<StartedBroker>
export function stopBroker(dir: string, options?: { keep?: boolean }): Promise<void>
export function kafkaProgram(sourceFile: string, args: readonly string[]): { status: number | null; stdout: string; stderr: string }
export function kafkaTool(mainClass: string, args: readonly string[]): { status: number | null; stdout: string; stderr: string }
