import { cpSync } from 'node:fs'
import { defineConfig } from 'tsup'

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'cli/main': 'src/cli/main.ts',
  },
  format: ['esm'],
  target: 'node20',
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
