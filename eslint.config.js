import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/**
 * The layers of src/ (docs/architecture.md), as far as the imports follow them today: a folder may not
 * import the folders listed for it. Later files' rules replace earlier ones for the same file, so the
 * public API's stricter rule comes last and repeats the engine's.
 */
const forbid = (files, folders, why, extra = []) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: [{ group: [...folders.map((f) => `**/${f}/*`), ...extra], message: why }] }] },
})
const RUNTIMES = ['runtime', 'embedded', 'kafka']
const ABOVE_RUNTIMES = ['testing', 'conformance', 'cli']
const ABOVE_ENGINE = [...RUNTIMES, ...ABOVE_RUNTIMES]
const ENGINE = ['processor', 'keyed', 'windows', 'suppress', 'joins', 'dsl', 'state', 'query']

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'conformance/kafka-streams/target/**', 'docs/api/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  forbid(['src/util/**'], ['time', ...ENGINE, ...ABOVE_ENGINE], 'src/util holds leaf helpers: it imports no other layer.'),
  forbid(['src/time/**'], [...ENGINE, ...ABOVE_ENGINE], 'src/time knows nothing of tasks, records or runtimes.'),
  forbid(['src/processor/**'], ABOVE_ENGINE, 'The engine does not know the runtimes, the test kit, the command line or where records are kept: tasks read through InputPartition and write through RecordCollector (processor/record-io.ts).'),
  forbid(
    ['src/{keyed,windows,suppress,joins,dsl}/**'],
    ABOVE_ENGINE,
    'Keyed state, windows, suppression, joins and the DSL build on the public processor API; the task that runs them (processor/internal) uses them, not the other way round.',
    ['**/processor/internal/*'],
  ),
  forbid(
    ['src/query/**'],
    ABOVE_ENGINE,
    'Interactive queries read the stores through their builders (StoreBuilder.query); the runtimes hand them their tasks.',
    ['**/processor/internal/*'],
  ),
  forbid(
    ['src/monitoring/**'],
    [...ENGINE, ...ABOVE_ENGINE],
    'src/monitoring serves metrics snapshots (src/metrics.ts); the runtimes start it, so it imports none of them, nor the engine.',
  ),
  forbid(['src/state/**'], ABOVE_ENGINE, 'State stores and checkpoints know neither the runtimes nor where topics are kept (the embedded runtime puts its log beside the checkpoints).', ['**/processor/internal/*']),
  forbid(
    ['src/processor/api.ts', 'src/processor/serdes.ts'],
    ABOVE_ENGINE,
    'The public processor API is a leaf: it must not depend on runtime internals.',
    ['./task*', './internal*', '**/processor/internal/*'],
  ),
  forbid(
    ['src/runtime/**'],
    ['embedded', 'kafka', ...ABOVE_RUNTIMES],
    'src/runtime holds what both runtimes share (task loop, task manager, committer, the runtime interface): it imports neither runtime, nor the test kit or the command line.',
  ),
  forbid(['src/embedded/**'], ['kafka', ...ABOVE_RUNTIMES], 'The embedded runtime shares the engine and src/runtime with the Kafka runtime, not the Kafka runtime itself.'),
  forbid(
    ['src/embedded/log/**'],
    ['keyed', 'windows', 'suppress', 'dsl', 'state', ...ABOVE_ENGINE],
    "The embedded runtime's log (partitioned topics) uses only the public processor API (records, serdes, the partitioner), errors and util.",
    ['**/processor/internal/*'],
  ),
  forbid(['src/kafka/**'], ['embedded', ...ABOVE_RUNTIMES], 'The Kafka runtime shares the engine and src/runtime with the embedded runtime, not the embedded runtime itself (nor its log).'),
  {
    // The live page's script runs in the browser (served as is, no build step).
    files: ['src/monitoring/live-page/**/*.js'],
    languageOptions: { globals: { document: 'readonly', EventSource: 'readonly', fetch: 'readonly' } },
  },
  {
    files: ['bin/**/*.js', 'scripts/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
)
