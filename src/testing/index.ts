/**
 * The test kit: TopologyTestDriver, a manual clock (and scheduler) for the runtime, a seeded random generator.
 * @packageDocumentation
 * @module punctual/testing
 */
export { TopologyTestDriver, TestInputTopic, TestOutputTopic } from './test-driver.js'
export type { TestDriverOptions, DriverCheckpoint } from './test-driver.js'
export type { KeyValue } from '../dsl/options.js'
export { ManualClock } from '../time/clock.js'
export { seededRandom } from './seeded-random.js'
