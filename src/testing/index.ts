/** punctual/testing: the test kit (TopologyTestDriver and a manual clock). */
export { TopologyTestDriver, TestInputTopic, TestOutputTopic } from './test-driver.js'
export type { TestDriverOptions, DriverCheckpoint, KeyValue } from './test-driver.js'
export { ManualClock } from '../time/clock.js'
export { seededRandom } from './seeded-random.js'
