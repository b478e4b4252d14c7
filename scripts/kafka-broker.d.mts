// Types of scripts/kafka-broker.mjs for the TypeScript that uses it (bench/kafka.ts, the Kafka tests).
export interface StartedBroker {
  readonly bootstrap: string
  readonly pid: number
  readonly dir: string
}
export function provision(): string
export function startBroker(): Promise<StartedBroker>
export function restartBroker(dir: string): Promise<StartedBroker>
export function stopBroker(dir: string, options?: { keep?: boolean }): Promise<void>
export function kafkaTool(mainClass: string, args: readonly string[]): { status: number | null; stdout: string; stderr: string }
