import { main } from '../../src/cli/main.js'

/** Runs the `punctual` command line in this process, keeping what it prints. */
export async function cli(...args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = []
  const err: string[] = []
  const code = await main(['node', 'punctual', ...args], { out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out, err }
}
