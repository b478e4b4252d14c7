// Counts readings per sensor, reports every 10 s of stream time (anchored at a whole 10 s), and flags
// sensors that went quiet on the wall clock, even when nothing arrives.
// Run it: npx tsx examples/heartbeat.ts (it drives the topology with the test kit's manual clock).
import { pathToFileURL } from 'node:url'
import { PunctuationType, Serdes, Stores, Topology } from 'punctual'
import { TopologyTestDriver } from 'punctual/testing'
import type { KeyValueStore, Processor, ProcessorContext, StreamRecord } from 'punctual'

class SensorMonitor implements Processor<string, number, string, string> {
  private ctx!: ProcessorContext<string, string>
  private lastSeen!: KeyValueStore<string, number>
  private counts = new Map<string, number>()

  init(ctx: ProcessorContext<string, string>): void {
    this.ctx = ctx
    this.lastSeen = ctx.getStateStore('last-seen')
    // When stream time reaches 10 000, 20 000, 30 000, ... (a KIP-1146 anchor; an anchor at 0 would
    // also fire at the very first record, since stream time starts unknown).
    ctx.schedule({ type: PunctuationType.STREAM_TIME, intervalMs: 10_000, startTime: 10_000 }, (streamTime) => {
      for (const [sensor, n] of this.counts) ctx.forward({ key: sensor, value: `${n} readings`, timestamp: streamTime, headers: [] })
      this.counts.clear()
    })
    // Every 5 s of wall-clock time, even with no input: which sensors have been silent for 30 s?
    ctx.schedule({ type: PunctuationType.WALL_CLOCK_TIME, intervalMs: 5_000 }, (now) => {
      for (const [sensor, seen] of this.lastSeen.all()) {
        if (now - seen >= 30_000) {
          ctx.forward({ key: sensor, value: 'silent', timestamp: now, headers: [] })
          this.lastSeen.delete(sensor)
        }
      }
    })
  }

  process(record: StreamRecord<string, number>): void {
    this.counts.set(record.key, (this.counts.get(record.key) ?? 0) + 1)
    this.lastSeen.put(record.key, this.ctx.currentSystemTimeMs())
  }
}

export function sensorTopology(): Topology {
  return new Topology()
    .addSource<string, number>('readings', 'sensor-readings', { valueSerde: Serdes.Double() })
    .addProcessor('monitor', () => new SensorMonitor(), 'readings')
    .addStateStore(Stores.inMemoryKeyValueStore<string, number>('last-seen'), 'monitor')
    .addSink('alerts', 'sensor-alerts', {}, 'monitor')
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const driver = new TopologyTestDriver(sensorTopology(), { wallClockStartMs: 0 })
  const readings = driver.createInputTopic('sensor-readings', Serdes.String(), Serdes.Double())
  const alerts = driver.createOutputTopic<string, string>('sensor-alerts')
  readings.pipeInput('s1', 20.5, 1_000)
  readings.pipeInput('s2', 19.0, 4_000)
  readings.pipeInput('s1', 21.0, 10_000) // stream time reaches 10 000: the grid point fires
  driver.advanceWallClockTime(30_000) // no input at all: both sensors went silent
  for (const { key, value, timestamp } of alerts.readRecordsToList()) console.log(`${timestamp}\t${key}\t${value}`)
  driver.close()
}
