import { cpSync } from 'node:fs'
import { defineConfig } from 'tsup'
// @ts-expect-error a plain .mjs script, without typings
import { typecheckConfig } from './scripts/kafka-client.mjs'

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'cli/main': 'src/cli/main.ts',
  },
  format: ['esm'],
  target: 'node20',
  // Without the Kafka client installed its types are stand-ins (scripts/kafka-client.mjs).
  tsconfig: typecheckConfig(),
  // Members marked @internal serve punctual's own modules; users' typings do not show them.
  dts: { compilerOptions: { stripInternal: true } },
  sourcemap: true,
  clean: true,
  splitting: true,
  // Loaded at run time only for `punctual run app.ts`, from the user's own installation.
  external: ['tsx', 'tsx/esm/api'],
  // The live page's static files, read at run time relative to the bundle (src/monitoring/live-page.ts).
  onSuccess: async () => {
    cpSync('src/monitoring/live-page', 'dist/live-page', { recursive: true })
  },
})
