/** punctual/testing: the test kit (TopologyTestDriver, a manual clock for the runtime, a seeded random generator). */
export { TopologyTestDriver, TestInputTopic, TestOutputTopic } from './test-driver.js'
export type { TestDriverOptions, DriverCheckpoint } from './test-driver.js'
export type { KeyValue } from '../dsl/options.js'
export { ManualClock } from '../time/clock.js'
export { seededRandom } from './seeded-random.js'
