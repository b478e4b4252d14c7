// bin/punctual.js on the sources instead of dist/: the command line as a user runs it, for tests that
// run it in a child process (`node --import tsx test/cli/punctual-source.ts ARGS...`).
import { main } from '../../src/cli/main.js'

main(process.argv).then(
  (code) => {
    process.exitCode = code
  },
  (err: unknown) => {
    console.error(err)
    process.exitCode = 2
  },
)
