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
})
