#!/usr/bin/env node
// A real Apache Kafka 4.4 broker for punctual's Kafka tests and benchmarks, from Maven Central: no Docker,
// nothing downloaded from elsewhere. Its jars are resolved once per machine into a cache outside the clone
// (~/.cache/punctual/kafka-<version>, or $PUNCTUAL_KAFKA_CACHE), then each start formats a fresh single-node
// KRaft cluster in a temporary directory on free loopback ports.
//
//   node scripts/kafka-broker.mjs provision        resolve the jars (about a minute cold, seconds warm)
//   node scripts/kafka-broker.mjs start            start a broker; prints {"bootstrap","pid","dir"} and leaves it running
//   node scripts/kafka-broker.mjs stop DIR         stop the broker started in DIR and remove DIR
//
// The functions are exported for scripts/run-kafka-tests.mjs, the Kafka tests and bench/kafka.ts.
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const KAFKA_VERSION = '4.4.0'
const HERE = join(dirname(fileURLToPath(import.meta.url)), 'kafka')
/** How long a broker may take to answer: 4–8 s usually, up to 20 s on a saturated machine. */
const START_TIMEOUT_MS = 90_000
const STOP_TIMEOUT_MS = 20_000

function cacheDir() {
  const base = process.env.PUNCTUAL_KAFKA_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'punctual')
  return join(base, `kafka-${KAFKA_VERSION}`)
}

/** Resolves the broker's jars into the cache (once per machine); returns their directory. */
export function provision() {
  const libs = join(cacheDir(), 'libs')
  // The broker and the command-line tools (a cache resolved before the tools were added is resolved again).
  if (existsSync(libs) && readdirSync(libs).some((f) => f.startsWith('kafka_2.13-')) && readdirSync(libs).includes(`kafka-tools-${KAFKA_VERSION}.jar`)) return libs
  const work = mkdtempSync(join(tmpdir(), 'punctual-kafka-provision-'))
  const partial = `${libs}.partial-${process.pid}`
  try {
    copyFileSync(join(HERE, 'pom.xml'), join(work, 'pom.xml'))
    mkdirSync(cacheDir(), { recursive: true })
    const r = spawnSync('mvn', ['-B', '-q', 'dependency:copy-dependencies', `-DoutputDirectory=${partial}`, '-DincludeScope=runtime'], { cwd: work, stdio: ['ignore', 'inherit', 'inherit'] })
    if (r.error !== undefined) throw new Error(`cannot run Maven (mvn) to resolve the Kafka ${KAFKA_VERSION} broker: ${r.error.message}`)
    if (r.status !== 0) throw new Error(`Maven could not resolve the Kafka ${KAFKA_VERSION} broker from Maven Central (exit ${r.status})`)
    // Whole or not at all: a run interrupted halfway leaves no half cache behind.
    rmSync(libs, { recursive: true, force: true })
    renameSync(partial, libs)
    return libs
  } finally {
    rmSync(work, { recursive: true, force: true })
    rmSync(partial, { recursive: true, force: true })
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** A cluster id as Kafka writes them: 16 random bytes, URL-safe base64 without padding. */
/** A random cluster id; never one starting with '-', which the storage tool would read as an option (as Kafka's own Uuid.randomUuid avoids). */
function clusterId() {
  for (;;) {
    const id = randomBytes(16).toString('base64url')
    if (!id.startsWith('-')) return id
  }
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

function java(libs, args, options) {
  return spawnSync('java', ['-cp', join(libs, '*'), ...args], options)
}

/**
 * Runs one of Kafka's command-line tools by its class (kafka-streams-groups.sh is
 * `org.apache.kafka.tools.streams.StreamsGroupCommand`, kafka-configs.sh `org.apache.kafka.tools.ConfigCommand`);
 * returns its exit status and output.
 */
export function kafkaTool(mainClass, args) {
  const r = java(provision(), [LOG4J, mainClass, ...args], { encoding: 'utf8' })
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }
}

/**
 * Formats a fresh single-node cluster in a new temporary directory and starts its broker on free loopback
 * ports; resolves once it accepts connections and says it started. The broker runs detached (it outlives
 * this process): stop it with `stopBroker(dir)`.
 */
export async function startBroker() {
  const libs = provision()
  const dir = mkdtempSync(join(tmpdir(), 'punctual-kafka-'))
  const port = await freePort()
  const controllerPort = await freePort()
  const properties = readFileSync(join(HERE, 'server.properties'), 'utf8')
    .replaceAll('${PORT}', String(port))
    .replaceAll('${CONTROLLER_PORT}', String(controllerPort))
    .replaceAll('${DATA_DIR}', join(dir, 'data'))
  const config = join(dir, 'server.properties')
  writeFileSync(config, properties)
  writeFileSync(join(dir, 'broker.port'), String(port))
  const format = java(libs, [LOG4J, 'kafka.tools.StorageTool', 'format', '--standalone', '-t', clusterId(), '-c', config], { encoding: 'utf8' })
  if (format.status !== 0) throw new Error(`formatting the Kafka storage failed: ${format.stderr || format.stdout}`)
  return launch(libs, dir, port)
}

/**
 * Starts again the broker of `dir` (stopped with `stopBroker(dir, { keep: true })`), on the same ports
 * and data: what a broker restart is to its clients.
 */
export async function restartBroker(dir) {
  return launch(provision(), dir, Number(readFileSync(join(dir, 'broker.port'), 'utf8')))
}

const LOG4J = `-Dlog4j2.configurationFile=${join(HERE, 'log4j2.yaml')}`

async function launch(libs, dir, port) {
  const logFile = join(dir, 'broker.log')
  const logged = existsSync(logFile) ? readFileSync(logFile, 'utf8').length : 0
  const out = openSync(logFile, 'a')
  const child = spawn('java', ['-Xms256m', '-Xmx512m', '-XX:+UseG1GC', LOG4J, '-cp', join(libs, '*'), 'kafka.Kafka', join(dir, 'server.properties')], { stdio: ['ignore', out, out], detached: true })
  child.unref()
  writeFileSync(join(dir, 'broker.pid'), String(child.pid))
  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the Kafka broker exited with code ${child.exitCode} while starting; its log: ${logFile}`)
    // Startup is a one-off wait on another process: polling it every 200 ms is fine here.
    if (readFileSync(logFile, 'utf8').slice(logged).includes('Kafka Server started') && (await accepts(port))) break
    if (Date.now() > deadline) {
      await stopBroker(dir, { keep: true })
      throw new Error(`the Kafka broker did not start within ${START_TIMEOUT_MS / 1000} s; its log: ${logFile}`)
    }
    await sleep(200)
  }
  return { bootstrap: `127.0.0.1:${port}`, pid: child.pid, dir }
}

function alive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Stops the broker started in `dir` (SIGTERM: a controlled shutdown; SIGKILL if it lingers), then removes `dir`. */
export async function stopBroker(dir, { keep = false } = {}) {
  const pidFile = join(dir, 'broker.pid')
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8'))
    if (alive(pid)) {
      process.kill(pid, 'SIGTERM')
      const deadline = Date.now() + STOP_TIMEOUT_MS
      while (alive(pid) && Date.now() < deadline) await sleep(100)
      if (alive(pid)) process.kill(pid, 'SIGKILL')
    }
  }
  if (!keep) rmSync(dir, { recursive: true, force: true })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [command, arg] = process.argv.slice(2)
  if (command === 'provision') console.log(provision())
  else if (command === 'start') console.log(JSON.stringify(await startBroker()))
  else if (command === 'stop' && arg !== undefined) await stopBroker(arg)
  else {
    console.error('usage: kafka-broker.mjs provision | start | stop DIR')
    process.exit(2)
  }
}
