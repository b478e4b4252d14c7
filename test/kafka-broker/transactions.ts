import { kafkaTool } from '../../scripts/kafka-broker.mjs'

/** What the broker's kafka-transactions.sh says of the cluster's transactions: those it finds hanging, and every transactional id's state. */
export function transactionsReport(bootstrap: string): string {
  const run = (...args: string[]): string => {
    const r = kafkaTool('org.apache.kafka.tools.TransactionsCommand', ['--bootstrap-server', bootstrap, ...args])
    return (r.stdout || r.stderr).trim().replace(/\s+/g, ' ').slice(0, 800)
  }
  // The test broker's __consumer_offsets has 4 partitions (scripts/kafka/server.properties): a transaction open on one holds the group's offsets there.
  const producers = [0, 1, 2, 3].map((p) => `__consumer_offsets-${p}: ${run('describe-producers', '--topic', '__consumer_offsets', '--partition', String(p))}`).join('; ')
  return `kafka-transactions.sh find-hanging: ${run('find-hanging', '--broker-id', '1')}; list: ${run('list')}; describe-producers: ${producers}`
}
