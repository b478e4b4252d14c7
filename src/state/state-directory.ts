import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { PunctualError } from '../errors.js'

/** The layout version of a state directory; a directory of another version is refused, never reset. */
export const STATE_FORMAT_VERSION = 3
const LOCK_FILE = '.lock'
const META_FILE = 'punctual.json'

interface Metadata {
  readonly format: number
  readonly applicationId: string
  /**
   * Names the instance that keeps this directory, across restarts (Kafka Streams' process id, kept in its
   * state directory too): a Kafka instance's transactional id is made of it.
   */
  readonly processId?: string
}

/**
 * An application's state directory, held exclusively: a lock file with the owner's pid keeps a second
 * process out (a lock left by a process that no longer runs is taken over), and a metadata file records
 * the application id and format version, so a directory written by another application or version is
 * refused with a clear error instead of being silently reset.
 */
export class StateDirectory {
  private released = false

  private constructor(
    readonly path: string,
    readonly applicationId: string,
    /** The instance's id, the same at every start on this directory (see `Metadata.processId`). */
    readonly processId: string,
  ) {}

  static open(path: string, applicationId: string): StateDirectory {
    checkIsOwnDirectory(path)
    try {
      mkdirSync(path, { recursive: true })
    } catch (err) {
      throw new PunctualError('STATE_DIR', `state directory ${path} cannot be created: ${(err as Error).message}`, { cause: err })
    }
    lock(path)
    let processId: string
    try {
      processId = checkMetadata(path, applicationId)
    } catch (err) {
      rmSync(join(path, LOCK_FILE), { force: true })
      throw err
    }
    return new StateDirectory(path, applicationId, processId)
  }

  /** Releases the lock; the directory and its contents stay. */
  release(): void {
    if (this.released) return
    this.released = true
    rmSync(join(this.path, LOCK_FILE), { force: true })
  }
}

/**
 * A state directory is new, empty, or punctual's own (it has punctual.json). Adopting a folder that
 * holds other files would litter it with checkpoints and, at a later reset, risk deleting them.
 */
function checkIsOwnDirectory(path: string): void {
  let isDirectory: boolean
  try {
    isDirectory = statSync(path).isDirectory()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
    throw new PunctualError('STATE_DIR', `state directory ${path} cannot be read: ${(err as Error).message}`, { cause: err })
  }
  if (!isDirectory) throw new PunctualError('STATE_DIR', `state directory ${path} is a file, not a directory; give stateDir a new or empty directory`)
  // A lone lock file is what a process that died right after taking the lock leaves.
  const entries = readdirSync(path).filter((e) => e !== LOCK_FILE)
  if (entries.length > 0 && !entries.includes(META_FILE)) {
    const shown = entries.slice(0, 3).join(', ') + (entries.length > 3 ? `, ... (${entries.length} entries)` : '')
    throw new PunctualError(
      'STATE_DIR',
      `state directory ${path} is not empty and is not a punctual state directory (it has no ${META_FILE}; it holds ${shown}); give stateDir a new or empty directory`,
    )
  }
}

function lock(path: string): void {
  const file = join(path, LOCK_FILE)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx')
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new PunctualError('STATE_DIR', `state directory ${path} cannot be locked: ${(err as Error).message}`, { cause: err })
      }
    }
    const owner = Number(readFileSync(file, 'utf8').trim())
    if (owner === process.pid) {
      // The pid names this very process: what holds the directory is another runtime in it, not running elsewhere.
      throw new PunctualError('STATE_DIR_LOCKED', `state directory ${path} is in use by another runtime in this same process (pid ${owner}); stop that runtime first, or give each runtime its own state directory`)
    }
    if (Number.isInteger(owner) && owner > 0 && isAlive(owner)) {
      throw new PunctualError('STATE_DIR_LOCKED', `state directory ${path} is in use by process ${owner}; two processes must not share a state directory`)
    }
    // The owner is gone (it crashed): take the lock over.
    rmSync(file, { force: true })
  }
  throw new PunctualError('STATE_DIR_LOCKED', `state directory ${path}: could not take over a stale lock`)
}

/** The process holding a state directory, if a live one does. */
export function lockOwner(path: string): number | undefined {
  let owner: number
  try {
    owner = Number(readFileSync(join(path, LOCK_FILE), 'utf8').trim())
  } catch {
    return undefined
  }
  return Number.isInteger(owner) && owner > 0 && isAlive(owner) ? owner : undefined
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Checks the directory's metadata (written when new); returns its process id (added when it has none). */
function checkMetadata(path: string, applicationId: string): string {
  const file = join(path, META_FILE)
  if (!existsSync(file)) {
    const meta: Metadata = { format: STATE_FORMAT_VERSION, applicationId, processId: randomUUID() }
    writeFileSync(file, JSON.stringify(meta, null, 2) + '\n')
    return meta.processId as string
  }
  let meta: Partial<Metadata>
  try {
    meta = JSON.parse(readFileSync(file, 'utf8')) as Partial<Metadata>
  } catch (err) {
    throw new PunctualError('STATE_DIR', `state directory ${path}: ${META_FILE} is corrupt (${(err as Error).message}); refusing to start rather than reset it`, { cause: err })
  }
  if (typeof meta !== 'object' || meta === null || typeof meta.format !== 'number' || typeof meta.applicationId !== 'string') {
    throw new PunctualError('STATE_DIR', `state directory ${path}: ${META_FILE} is corrupt (missing format or applicationId); refusing to start rather than reset it`)
  }
  if (meta.format !== STATE_FORMAT_VERSION) {
    throw new PunctualError('STATE_DIR', `state directory ${path} has format version ${meta.format}; this punctual reads version ${STATE_FORMAT_VERSION}`)
  }
  if (meta.applicationId !== applicationId) {
    throw new PunctualError('STATE_DIR', `state directory ${path} belongs to application "${meta.applicationId}", not "${applicationId}"`)
  }
  if (typeof meta.processId === 'string' && meta.processId.length > 0) return meta.processId
  const processId = randomUUID()
  writeFileSync(file, JSON.stringify({ ...meta, processId }, null, 2) + '\n')
  return processId
}
