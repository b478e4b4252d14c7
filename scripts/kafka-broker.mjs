#!/usr/bin/env node
// A real Apache Kafka 4.4 broker for punctual's Kafka tests and benchmarks, from Maven Central: no Docker,
// nothing downloaded from elsewhere. Its jars are resolved once per machine into a cache outside the clone
// (~/.cache/punctual/kafka-<version>, or $PUNCTUAL_KAFKA_CACHE), then each start formats a fresh single-node
// KRaft cluster in a temporary directory on free loopback ports.
//
//   node scripts/kafka-broker.mjs provision        resolve the jars (about a minute cold, seconds warm)
//   node scripts/kafka-broker.mjs start            start a broker; prints {"bootstrap","pid","dir"} and leaves it running
//   node scripts/kafka-broker.mjs start --secured  the same, also listening with SASL_SSL (prints "secured": its address, CA, user)
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

/** The user of the secured listener, for SASL/PLAIN and SASL/SCRAM-SHA-512 alike. */
export const SECURED_USER = { username: 'punctual', password: 'punctual-secret' }

/**
 * A self-signed certificate for 127.0.0.1 and localhost in `dir`, made with the JDK's keytool (there
 * with the broker's Java): the broker's keystore (PKCS#12) and the certificate in PEM for the clients,
 * who trust it as their CA.
 */
function makeCertificate(dir) {
  const keystore = join(dir, 'broker.p12')
  const password = randomBytes(12).toString('hex')
  const keytool = (args) => {
    const r = spawnSync('keytool', args, { encoding: 'utf8' })
    if (r.error !== undefined || r.status !== 0) throw new Error(`keytool ${args[0]} failed: ${r.error?.message ?? r.stderr ?? r.stdout}`)
  }
  keytool(['-genkeypair', '-alias', 'broker', '-keyalg', 'RSA', '-keysize', '2048', '-validity', '30', '-dname', 'CN=localhost', '-ext', 'SAN=dns:localhost,ip:127.0.0.1', '-keystore', keystore, '-storetype', 'PKCS12', '-storepass', password, '-keypass', password])
  const caPem = join(dir, 'ca.pem')
  keytool(['-exportcert', '-rfc', '-alias', 'broker', '-keystore', keystore, '-storetype', 'PKCS12', '-storepass', password, '-file', caPem])
  return { keystore, password, caPem }
}

/**
 * The listener `SASL_SSL` on `port`: TLS with the certificate of `makeCertificate`, SASL/PLAIN and
 * SASL/SCRAM-SHA-512 for `SECURED_USER` (its SCRAM credential is written when the storage is formatted).
 */
function securedListener(certificate) {
  const { username, password } = SECURED_USER
  return [
    `listener.name.sasl_ssl.ssl.keystore.type=PKCS12`,
    `listener.name.sasl_ssl.ssl.keystore.location=${certificate.keystore}`,
    `listener.name.sasl_ssl.ssl.keystore.password=${certificate.password}`,
    `listener.name.sasl_ssl.ssl.key.password=${certificate.password}`,
    `listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512`,
    `listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${username}="${password}";`,
    `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;`,
  ].join('\n')
}

/**
 * Runs a single-file Java program (`java Program.java`) with the broker's jars on its class path, Kafka's
 * Admin client among them; returns its exit status and output.
 */
export function kafkaProgram(sourceFile, args) {
  const r = java(provision(), [LOG4J, sourceFile, ...args], { encoding: 'utf8' })
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }
}

/**
 * Formats a fresh single-node cluster in a new temporary directory and starts its broker on free loopback
 * ports; resolves once it accepts connections and says it started. The broker runs detached (it outlives
 * this process): stop it with `stopBroker(dir)`. With `secured`, it also listens with SASL_SSL on another
 * port: the result's `secured` gives that listener's address, the CA certificate's file and the user.
 */
export async function startBroker({ secured = false } = {}) {
  const libs = provision()
  const dir = mkdtempSync(join(tmpdir(), 'punctual-kafka-'))
  const port = await freePort()
  const controllerPort = await freePort()
  const securedPort = secured ? await freePort() : undefined
  let properties = readFileSync(join(HERE, 'server.properties'), 'utf8')
    .replaceAll('${PORT}', String(port))
    .replaceAll('${CONTROLLER_PORT}', String(controllerPort))
    .replaceAll('${DATA_DIR}', join(dir, 'data'))
  let certificate
  if (securedPort !== undefined) {
    certificate = makeCertificate(dir)
    const address = `SASL_SSL://127.0.0.1:${securedPort}`
    properties = properties
      .replace(/^listeners=(.*)$/m, `listeners=$1,${address}`)
      .replace(/^advertised\.listeners=(.*)$/m, `advertised.listeners=$1,${address}`)
      .replace(/^listener\.security\.protocol\.map=(.*)$/m, 'listener.security.protocol.map=$1,SASL_SSL:SASL_SSL')
    properties += `\n${securedListener(certificate)}\n`
  }
  const config = join(dir, 'server.properties')
  writeFileSync(config, properties)
  writeFileSync(join(dir, 'broker.port'), String(port))
  const scram = securedPort === undefined ? [] : ['--add-scram', `SCRAM-SHA-512=[name=${SECURED_USER.username},password=${SECURED_USER.password}]`]
  const format = java(libs, [LOG4J, 'kafka.tools.StorageTool', 'format', '--standalone', '-t', clusterId(), '-c', config, ...scram], { encoding: 'utf8' })
  if (format.status !== 0) throw new Error(`formatting the Kafka storage failed: ${format.stderr || format.stdout}`)
  const started = await launch(libs, dir, port)
  if (securedPort === undefined) return started
  return { ...started, secured: { bootstrap: `127.0.0.1:${securedPort}`, caLocation: certificate.caPem, ...SECURED_USER } }
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
  else if (command === 'start') console.log(JSON.stringify(await startBroker({ secured: arg === '--secured' })))
  else if (command === 'stop' && arg !== undefined) await stopBroker(arg)
  else {
    console.error('usage: kafka-broker.mjs provision | start [--secured] | stop DIR')
    process.exit(2)
  }
}
