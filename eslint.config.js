import js from '@eslint/js'
import tseslint from 'typescript-eslint'

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
  {
    // The public processor API is a leaf: it must not depend on runtime internals.
    files: ['src/processor/api.ts', 'src/processor/serdes.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['../runtime/*', '../testing/*', './task*', './internal*'] }],
    },
  },
  {
    files: ['bin/**/*.js', 'scripts/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
)
