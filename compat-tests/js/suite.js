'use strict'

// The kafkajs compatibility suite: runs every scenario of the lab that
// kafkajs's API offers against the broker named on the command line and
// appends one result line per scenario to $COMPAT_RESULTS (the contract is in
// compat-tests/README.md).
//
// Every scenario compares what it reads with what it wrote, record by record:
// key, value, headers and timestamp equal, order per partition equal to the
// produce order, offsets dense. Offsets are taken from the produce responses,
// so a broker that acknowledges one offset and serves another fails too.
//
// Each scenario builds its own Kafka client and tracks every producer,
// consumer and admin it creates, so that a failing or stuck scenario is torn
// down and cannot disturb the next one. Each wait is bounded (STEP_TIMEOUT_MS
// per step, SCENARIO_TIMEOUT_MS per scenario): a stuck client is a failure,
// not a hang.
//
// kafkajs logs go to $COMPAT_WORK/kafkajs.log (one JSON line each, tagged
// with the scenario), at WARN, or at DEBUG with KAFKAJS_DEBUG=1 when a
// failure needs the request-level trace.

const fs = require('fs')
const path = require('path')
const crypto = require('crypto')
const {
  Kafka,
  logLevel,
  CompressionTypes,
  CompressionCodecs,
  ConfigResourceTypes,
  AssignerProtocol,
} = require('kafkajs')
const KAFKAJS_VERSION = require('kafkajs/package.json').version

const CLIENT = 'kafkajs'
// DescribeConfigs' config source of a value set on the topic itself.
const TOPIC_CONFIG = 1
const STEP_TIMEOUT_MS = 60_000
const SCENARIO_TIMEOUT_MS = 120_000
// Disconnecting a client that is stuck must not hold up the suite either.
const CLEANUP_TIMEOUT_MS = 15_000
const POLL_INTERVAL_MS = 50

const bootstrap = process.argv[2]
const resultsFile = process.env.COMPAT_RESULTS
const prefix = process.env.COMPAT_PREFIX
if (!bootstrap || !resultsFile || !prefix) {
  console.error('usage: COMPAT_RESULTS=... COMPAT_PREFIX=... node suite.js BOOTSTRAP')
  process.exit(2)
}
const workDir = process.env.COMPAT_WORK || fs.mkdtempSync(path.join(require('os').tmpdir(), 'kafkajs-'))
const logFile = fs.openSync(path.join(workDir, 'kafkajs.log'), 'a')
const clientLogLevel = process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.WARN

// The scenario that is running, to tag log lines with.
let currentScenario = '-'

function writeLog(entry) {
  fs.writeSync(logFile, JSON.stringify({ time: new Date().toISOString(), scenario: currentScenario, ...entry }) + '\n')
}

// kafkajs would print to the console; the lab wants the output small, and a
// file keeps the trace next to the other suites' logs.
const levelNames = Object.fromEntries(Object.entries(logLevel).map(([name, n]) => [n, name]))
const logCreator = () => ({ namespace, level, log }) => {
  const { message, timestamp, logger, ...extra } = log
  writeLog({ level: levelNames[level] || level, namespace, message, ...extra })
}

// kafkajs keeps working in the background (heartbeats, fetches) and can
// reject a promise nobody awaits; that is logged, not fatal to the suite.
process.on('unhandledRejection', err => writeLog({ level: 'UNHANDLED', message: describeError(err) }))

// ---------------------------------------------------------------------------
// Compression codecs

// Calls of each codec, so that a produce-consume scenario can tell that the
// records really travelled compressed both ways: a broker that stored or
// served them with another codec (or none) fails the scenario.
const codecCalls = {}

function counted(name, makeCodec) {
  codecCalls[name] = { compress: 0, decompress: 0 }
  return () => {
    const codec = makeCodec()
    return {
      async compress(encoder) {
        codecCalls[name].compress++
        return codec.compress(encoder)
      },
      async decompress(buffer) {
        codecCalls[name].decompress++
        return codec.decompress(buffer)
      },
    }
  }
}

// zstd-codec is an Emscripten build of the reference zstd library: no native
// build, so it installs on any Node. It starts asynchronously, once.
function loadZstd() {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('zstd-codec did not initialise within 30s')), 30_000)
    require('zstd-codec').ZstdCodec.run(zstd => {
      clearTimeout(timer)
      resolve(new zstd.Streaming())
    })
  })
}

// kafkajs ships gzip only; the others are registered from the pinned codec
// packages. Returns, per codec name, why it is unavailable (or nothing).
async function registerCodecs() {
  const unavailable = {}
  CompressionCodecs[CompressionTypes.GZIP] = counted('gzip', CompressionCodecs[CompressionTypes.GZIP])
  try {
    CompressionCodecs[CompressionTypes.Snappy] = counted('snappy', require('kafkajs-snappy'))
  } catch (e) {
    unavailable.snappy = `kafkajs-snappy not loadable: ${e.message}`
  }
  try {
    const LZ4Codec = require('kafkajs-lz4')
    CompressionCodecs[CompressionTypes.LZ4] = counted('lz4', new LZ4Codec().codec)
  } catch (e) {
    const marker = path.join(process.env.COMPAT_CACHE || '', 'js', 'lz4-build-failed')
    unavailable.lz4 = fs.existsSync(marker)
      ? `lz4's native binding did not build at setup: ${fs.readFileSync(marker, 'utf8').trim()}`
      : `kafkajs-lz4 not loadable: ${e.message}`
  }
  try {
    const zstd = await loadZstd()
    CompressionCodecs[CompressionTypes.ZSTD] = counted('zstd', () => ({
      async compress(encoder) {
        return Buffer.from(zstd.compress(encoder.buffer, 3))
      },
      async decompress(buffer) {
        const out = zstd.decompress(buffer)
        if (!out) throw new Error('zstd: cannot decompress the batch')
        return Buffer.from(out)
      },
    }))
  } catch (e) {
    unavailable.zstd = `zstd-codec not usable: ${e.message}`
  }
  return unavailable
}

// ---------------------------------------------------------------------------
// Helpers: errors, timeouts, polling

// One line saying what kafkajs reported, with the protocol error type and
// the nested causes kafkajs wraps them in.
function describeError(err) {
  if (!(err instanceof Error)) return String(err)
  let text = `${err.name}: ${err.message}`
  if (err.type) text += ` [${err.type}${err.code !== undefined ? ` code ${err.code}` : ''}]`
  if (Array.isArray(err.groups) && err.groups.length) {
    text += ` groups: ${err.groups.map(g => `${g.groupId}=${g.error ? g.error.type : g.errorCode}`).join(', ')}`
  }
  if (Array.isArray(err.errors) && err.errors.length) {
    text += ` (${err.errors.map(describeError).join('; ')})`
  }
  const cause = err.originalError || err.cause
  if (cause && cause !== err) text += ` caused by ${describeError(cause)}`
  return text
}

class StepError extends Error {}

// Awaits `promise` for at most `ms`, naming the step in the error either way.
async function step(what, promise, ms = STEP_TIMEOUT_MS) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new StepError(`${what}: no answer within ${ms / 1000}s`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } catch (e) {
    if (e instanceof StepError) throw e
    throw new StepError(`${what}: ${describeError(e)}`)
  } finally {
    clearTimeout(timer)
  }
}

// Polls `condition` until it returns true, failing after `ms` with `what` and,
// when it gives one, `explain()` (what the state was at the deadline).
async function waitFor(scenario, what, condition, { ms = STEP_TIMEOUT_MS, explain } = {}) {
  const deadline = Date.now() + ms
  for (;;) {
    if (scenario.fatal) throw new StepError(`${what}: consumer crashed: ${scenario.fatal}`)
    if (await condition()) return
    if (Date.now() > deadline) {
      let text = `${what}: not reached within ${ms / 1000}s`
      if (explain) text += ` (${explain()})`
      if (scenario.lastCrash) text += `; last consumer crash: ${scenario.lastCrash}`
      throw new StepError(text)
    }
    await new Promise(resolve => setTimeout(resolve, POLL_INTERVAL_MS))
  }
}

function check(condition, reason) {
  if (!condition) throw new StepError(reason)
}

// ---------------------------------------------------------------------------
// Scenario context: one Kafka client per scenario, every producer, consumer
// and admin tracked so that they are all disconnected at the end.

// The client security of a secure lab run (compat-tests/run.sh --security),
// from the COMPAT_* environment: TLS trusting the lab's CA, plus SCRAM
// (sasl_ssl) or a client certificate (mtls); nothing without COMPAT_SECURITY.
const security = process.env.COMPAT_SECURITY || ''
// The scenarios a secure run covers: produce, consume and groups.
const SECURE_SCENARIOS = /^(produce-consume-.*|idempotent-producer|consume-from-offset|group-commit-resume|group-rebalance)$/

function securityConfig() {
  const env = process.env
  switch (security) {
    case '':
      return {}
    case 'sasl_ssl':
      return {
        ssl: { ca: [fs.readFileSync(env.COMPAT_CA)] },
        sasl: {
          mechanism: env.COMPAT_SASL_MECHANISM.toLowerCase(),
          username: env.COMPAT_SASL_USER,
          password: env.COMPAT_SASL_PASSWORD,
        },
      }
    case 'mtls':
      return {
        ssl: {
          ca: [fs.readFileSync(env.COMPAT_CA)],
          cert: fs.readFileSync(env.COMPAT_CLIENT_CERT),
          key: fs.readFileSync(env.COMPAT_CLIENT_KEY),
        },
      }
    default:
      throw new Error(`COMPAT_SECURITY ${security} is not sasl_ssl or mtls`)
  }
}

class Scenario {
  constructor(name) {
    this.name = name
    this.clientId = `${prefix}-${name}`
    this.kafka = new Kafka({
      clientId: this.clientId,
      brokers: bootstrap.split(','),
      logLevel: clientLogLevel,
      logCreator,
      connectionTimeout: 10_000,
      requestTimeout: 30_000,
      retry: { initialRetryTime: 200, maxRetryTime: 5_000, retries: 8 },
      ...securityConfig(),
    })
    this.clients = []
    // A consumer crash kafkajs will not recover from, and the last crash of
    // any kind, to explain a wait that did not end.
    this.fatal = null
    this.lastCrash = null
  }

  name_(suffix) {
    return `${prefix}-js-${this.name}-${suffix}`
  }

  async admin(options = {}) {
    const admin = this.kafka.admin(options)
    this.clients.push(admin)
    await step('admin connect', admin.connect())
    return admin
  }

  async producer(options = {}) {
    const producer = this.kafka.producer({ allowAutoTopicCreation: false, ...options })
    this.clients.push(producer)
    await step('producer connect', producer.connect())
    return producer
  }

  // A consumer with short group timings, so that joins and rebalances take
  // seconds, not the default half minute. `joins` collects its GROUP_JOIN
  // events (member id and assignment of each generation it joined).
  async consumer(groupId, options = {}) {
    const consumer = this.kafka.consumer({
      groupId,
      sessionTimeout: 10_000,
      rebalanceTimeout: 30_000,
      heartbeatInterval: 500,
      maxWaitTimeInMs: 250,
      allowAutoTopicCreation: false,
      ...options,
    })
    consumer.joins = []
    consumer.on(consumer.events.GROUP_JOIN, event => consumer.joins.push(event.payload))
    consumer.on(consumer.events.CRASH, event => {
      const { error, restart } = event.payload
      this.lastCrash = describeError(error)
      if (!restart) this.fatal = this.lastCrash
    })
    this.clients.push(consumer)
    await step('consumer connect', consumer.connect())
    return consumer
  }

  async cleanup() {
    for (const client of this.clients.reverse()) {
      await step('disconnect', client.disconnect(), CLEANUP_TIMEOUT_MS).catch(err =>
        writeLog({ level: 'CLEANUP', message: describeError(err) })
      )
    }
    this.clients = []
  }
}

// ---------------------------------------------------------------------------
// Records: what is written, and the comparison with what is read

// Makes `count` keyed records spread round-robin over `partitions`, each
// with binary bytes (0x00, 0xff), repeated text so that compression has work
// to do, a header with an empty value, a header given twice; every 25th
// record has a null value (a tombstone) and every 25th another an empty one.
// Timestamps are distinct and in the recent past.
function makeRecords(count, partitions, tag, baseTimestamp = Date.now() - 60_000) {
  const records = []
  for (let i = 0; i < count; i++) {
    let value = Buffer.concat([
      Buffer.from(`${tag} value ${i} `.repeat(1 + (i % 7))),
      crypto.randomBytes(i % 19),
      Buffer.from([0x00, 0xff, 0x80, i & 0xff]),
    ])
    if (i % 25 === 3) value = null
    if (i % 25 === 11) value = Buffer.alloc(0)
    const headers = {
      index: String(i),
      binary: Buffer.from([0x00, i & 0xff, 0xff]),
      empty: Buffer.alloc(0),
    }
    if (i % 5 === 0) headers.twice = [Buffer.from('first'), Buffer.from('second')]
    records.push({
      partition: i % partitions,
      key: Buffer.from(`${tag}-key-${i}`),
      value,
      headers,
      timestamp: String(baseTimestamp + i),
    })
  }
  return records
}

// Produces `records` in sends of `perSend` records, checking each produce
// response: no error, and each partition's base offset exactly where the
// previous send ended (dense, no record lost or doubled). Returns, per
// partition, the records in produce order, each with the offset the broker
// gave it.
async function produce(producer, topic, records, { perSend = 60, compression, acks = -1, firstOffset = 0 } = {}) {
  const byPartition = new Map()
  for (let start = 0; start < records.length; start += perSend) {
    const chunk = records.slice(start, start + perSend)
    const sent = await step(
      `produce to ${topic}`,
      producer.send({
        topic,
        acks,
        compression,
        messages: chunk.map(r => ({
          partition: r.partition,
          key: r.key,
          value: r.value,
          headers: r.headers,
          timestamp: r.timestamp,
        })),
      })
    )
    const partitionsInChunk = [...new Set(chunk.map(r => r.partition))]
    for (const partition of partitionsInChunk) {
      const meta = sent.find(m => m.partition === partition)
      check(meta, `produce to ${topic}: no response for partition ${partition}`)
      check(meta.errorCode === 0, `produce to ${topic}-${partition}: error code ${meta.errorCode}`)
      const written = byPartition.get(partition) || []
      const expectedBase = written.length ? written[written.length - 1].offset + 1 : firstOffset
      const base = Number(meta.baseOffset)
      check(
        base === expectedBase,
        `produce to ${topic}-${partition}: base offset ${meta.baseOffset}, expected ${expectedBase} (offsets not dense)`
      )
      chunk
        .filter(r => r.partition === partition)
        .forEach((r, k) => written.push({ ...r, offset: base + k }))
      byPartition.set(partition, written)
    }
  }
  return byPartition
}

// Starts `consumer` on `topic` and gathers every message it is handed, per
// partition, in the order handed. Returns that map (it keeps filling).
async function collect(consumer, topic, { fromBeginning = true, autoCommit = true } = {}) {
  const received = new Map()
  await step(`subscribe to ${topic}`, consumer.subscribe({ topics: [topic], fromBeginning }))
  await step(
    'consumer run',
    consumer.run({
      autoCommit,
      eachMessage: async ({ partition, message }) => {
        if (!received.has(partition)) received.set(partition, [])
        received.get(partition).push(message)
      },
    })
  )
  return received
}

function countOf(map, partition) {
  return (map.get(partition) || []).length
}

function total(map) {
  let n = 0
  for (const list of map.values()) n += list.length
  return n
}

function countsText(map, partitions) {
  return partitions.map(p => `p${p}=${countOf(map, p)}`).join(' ')
}

// Waits until `received` holds at least as many records per partition as
// `expected` does.
async function waitForAll(scenario, received, expected, what = 'read back every record') {
  const partitions = [...expected.keys()].sort((a, b) => a - b)
  await waitFor(scenario, what, () => partitions.every(p => countOf(received, p) >= expected.get(p).length), {
    explain: () => `have ${countsText(received, partitions)}, want ${countsText(expected, partitions)}`,
  })
}

function preview(buffer) {
  if (buffer === null || buffer === undefined) return 'null'
  const hex = buffer.toString('hex')
  return `${buffer.length}B ${hex.length > 24 ? hex.slice(0, 24) + '…' : hex}`
}

function sameBytes(a, b) {
  if (a === null || a === undefined || b === null || b === undefined) {
    return (a === null || a === undefined) && (b === null || b === undefined)
  }
  return Buffer.from(a).equals(Buffer.from(b))
}

// Headers as [key, [values...]] in key order, values as Buffers, so that a
// header given once and one given several times compare alike.
function normaliseHeaders(headers) {
  return Object.keys(headers || {}).map(key => {
    const values = Array.isArray(headers[key]) ? headers[key] : [headers[key]]
    return [key, values.map(v => (v === null ? null : Buffer.from(v)))]
  })
}

function headersDiffer(expected, actual) {
  const want = normaliseHeaders(expected)
  const got = normaliseHeaders(actual)
  const show = list => list.map(([k, vs]) => `${k}=[${vs.map(preview).join(',')}]`).join(' ')
  if (want.length !== got.length) return `headers: expected ${show(want)}, got ${show(got)}`
  for (let i = 0; i < want.length; i++) {
    const [wk, wv] = want[i]
    const [gk, gv] = got[i]
    if (wk !== gk || wv.length !== gv.length || wv.some((v, j) => !sameBytes(v, gv[j]))) {
      return `headers: expected ${show(want)}, got ${show(got)}`
    }
  }
  return null
}

// Compares, partition by partition, the records read with those written:
// same count, and record by record the same offset (hence dense and in
// produce order), key, value, headers and timestamp. Throws the first
// difference.
function compareRecords(expected, received) {
  const partitions = new Set([...expected.keys(), ...received.keys()])
  for (const partition of [...partitions].sort((a, b) => a - b)) {
    const want = expected.get(partition) || []
    const got = received.get(partition) || []
    for (let i = 0; i < Math.max(want.length, got.length); i++) {
      const w = want[i]
      const g = got[i]
      const where = `partition ${partition} record #${i}`
      check(w, `${where}: unexpected extra record at offset ${g && g.offset} (read ${got.length}, wrote ${want.length})`)
      check(g, `${where}: missing, expected offset ${w.offset} (read ${got.length}, wrote ${want.length})`)
      check(String(g.offset) === String(w.offset), `${where}: offset ${g.offset}, expected ${w.offset}`)
      check(sameBytes(g.key, w.key), `${where} (offset ${w.offset}): key ${preview(g.key)}, expected ${preview(w.key)}`)
      check(
        sameBytes(g.value, w.value),
        `${where} (offset ${w.offset}): value ${preview(g.value)}, expected ${preview(w.value)}`
      )
      const headerDiff = headersDiffer(w.headers, g.headers)
      check(!headerDiff, `${where} (offset ${w.offset}): ${headerDiff}`)
      check(
        String(g.timestamp) === String(w.timestamp),
        `${where} (offset ${w.offset}): timestamp ${g.timestamp}, expected ${w.timestamp}`
      )
    }
  }
}

// Keeps the records of `byPartition` from `from[partition]` on.
function recordsFrom(byPartition, from) {
  const out = new Map()
  for (const [partition, list] of byPartition) {
    out.set(
      partition,
      list.filter(r => r.offset >= from[partition])
    )
  }
  return out
}

async function createTopic(admin, topic, numPartitions = 3, configEntries = []) {
  const created = await step(
    `create topic ${topic}`,
    admin.createTopics({
      topics: [{ topic, numPartitions, replicationFactor: 1, configEntries }],
      waitForLeaders: true,
    })
  )
  check(created === true, `create topic ${topic}: createTopics answered ${created}, expected true (new topic)`)
}

// ---------------------------------------------------------------------------
// Scenarios

const scenarios = []

function scenario(name, run) {
  scenarios.push({ name, run })
}

let unavailableCodecs = {}

for (const [codecName, compression] of [
  ['none', CompressionTypes.None],
  ['gzip', CompressionTypes.GZIP],
  ['snappy', CompressionTypes.Snappy],
  ['lz4', CompressionTypes.LZ4],
  ['zstd', CompressionTypes.ZSTD],
]) {
  scenario(`produce-consume-${codecName}`, async s => {
    check(!unavailableCodecs[codecName], unavailableCodecs[codecName])
    const topic = s.name_('t')
    const admin = await s.admin()
    await createTopic(admin, topic)

    const before = JSON.parse(JSON.stringify(codecCalls))
    const producer = await s.producer()
    const records = makeRecords(600, 3, codecName)
    const written = await produce(producer, topic, records, { perSend: 60, compression })

    const consumer = await s.consumer(s.name_('g'))
    const received = await collect(consumer, topic)
    await waitForAll(s, received, written)
    compareRecords(written, received)

    // The records must have gone through the codec both ways: compressed by
    // the producer and served compressed by the broker.
    const calls = name => ({
      compress: codecCalls[name].compress - before[name].compress,
      decompress: codecCalls[name].decompress - before[name].decompress,
    })
    if (codecName === 'none') {
      const used = Object.keys(codecCalls).filter(n => calls(n).decompress > 0)
      check(used.length === 0, `uncompressed records came back compressed with ${used.join(', ')}`)
    } else {
      const c = calls(codecName)
      check(c.compress > 0, `the producer never compressed with ${codecName}`)
      check(c.decompress > 0, `the broker served no ${codecName}-compressed batch (served ${JSON.stringify(calls)})`)
    }
    return `${records.length} records in ${written.size} partitions, ${records.length / 60} sends, read back equal`
  })
}

scenario('idempotent-producer', async s => {
  const topic = s.name_('t')
  const admin = await s.admin()
  await createTopic(admin, topic)

  const producer = await s.producer({ idempotent: true, maxInFlightRequests: 1 })
  const records = makeRecords(450, 3, 'idem')
  const written = await produce(producer, topic, records, { perSend: 30 })

  const consumer = await s.consumer(s.name_('g'))
  const received = await collect(consumer, topic)
  await waitForAll(s, received, written)
  compareRecords(written, received)

  // Every stored batch must carry the producer id the broker gave and
  // sequence numbers that continue where the previous batch of the
  // partition ended (the broker's dedup state, as the log records it).
  const producerIds = new Set()
  for (const [partition, messages] of received) {
    let nextSequence = 0
    let lastBatchOffset = null
    for (const m of messages) {
      const batch = m.batchContext
      check(batch, `partition ${partition}: kafkajs gave no batch context`)
      producerIds.add(batch.producerId)
      if (batch.firstOffset === lastBatchOffset) continue
      lastBatchOffset = batch.firstOffset
      check(
        batch.firstSequence === nextSequence,
        `partition ${partition} batch at offset ${batch.firstOffset}: first sequence ${batch.firstSequence}, expected ${nextSequence}`
      )
      nextSequence += batch.lastOffsetDelta + 1
    }
  }
  check(producerIds.size === 1, `batches carry producer ids ${[...producerIds].join(', ')}, expected one`)
  const [producerId] = producerIds
  check(Number(producerId) >= 0, `batches carry producer id ${producerId}, expected an id from InitProducerId`)
  return `${records.length} records, producer id ${producerId}, sequences dense per partition, read back equal`
})

scenario('list-offsets', async s => {
  const topic = s.name_('t')
  const admin = await s.admin()
  await createTopic(admin, topic)

  // 40 records per partition a second apart, partition p shifted by 100p ms,
  // so that one timestamp looked up in every partition has a different
  // answer in each. Sends of 10 per partition: lookups land inside batches
  // and on their edges.
  const perPartition = 40
  const base = Date.now() - 10 * 60_000
  const timestampOf = (partition, j) => base + 1000 * j + 100 * partition
  const records = []
  for (let j = 0; j < perPartition; j++) {
    for (let p = 0; p < 3; p++) {
      records.push({
        partition: p,
        key: Buffer.from(`lo-${p}-${j}`),
        value: Buffer.from(`value ${j}`),
        headers: {},
        timestamp: String(timestampOf(p, j)),
      })
    }
  }
  const producer = await s.producer()
  await produce(producer, topic, records, { perSend: 30 })

  const offsets = await step('fetchTopicOffsets', admin.fetchTopicOffsets(topic))
  check(offsets.length === 3, `fetchTopicOffsets: ${offsets.length} partitions, expected 3`)
  for (const o of offsets) {
    check(
      o.low === '0' && o.high === String(perPartition) && o.offset === String(perPartition),
      `fetchTopicOffsets partition ${o.partition}: low ${o.low} high ${o.high} offset ${o.offset}, expected 0, ${perPartition}, ${perPartition}`
    )
  }

  // The answer for a timestamp is the first offset whose record's timestamp
  // is at or after it; past the last record the broker answers -1, which
  // kafkajs turns into the high watermark.
  const lookups = [base - 5_000, base, base + 150, base + 7_000, base + 9_950, base + 10_000, base + 39_000, base + 39_150, base + 60_000]
  for (const ts of lookups) {
    const got = await step(`fetchTopicOffsetsByTimestamp ${ts}`, admin.fetchTopicOffsetsByTimestamp(topic, ts))
    for (let p = 0; p < 3; p++) {
      let want = perPartition
      for (let j = 0; j < perPartition; j++) {
        if (timestampOf(p, j) >= ts) {
          want = j
          break
        }
      }
      const entry = got.find(g => g.partition === p)
      check(entry, `fetchTopicOffsetsByTimestamp(base+${ts - base}ms): no answer for partition ${p}`)
      check(
        String(entry.offset) === String(want),
        `fetchTopicOffsetsByTimestamp(base+${ts - base}ms) partition ${p}: offset ${entry.offset}, expected ${want}`
      )
    }
  }
  return `earliest/latest of 3 partitions and ${lookups.length} timestamp lookups x 3 partitions as expected`
})

scenario('consume-from-offset', async s => {
  const topic = s.name_('t')
  const admin = await s.admin()
  await createTopic(admin, topic)
  const producer = await s.producer()
  // Sends of 10 records per partition, compressed: seeking to 13 lands
  // inside a batch, which the broker returns whole from its start.
  const written = await produce(producer, topic, makeRecords(120, 3, 'seek'), {
    perSend: 30,
    compression: CompressionTypes.GZIP,
  })

  // A new group starting at the end reads nothing until the seeks apply, so
  // every record read comes from a seek.
  const seekTo = { 0: 0, 1: 13, 2: 39 }
  const consumer = await s.consumer(s.name_('g'))
  const received = await collect(consumer, topic, { fromBeginning: false, autoCommit: false })
  for (const [partition, offset] of Object.entries(seekTo)) {
    consumer.seek({ topic, partition: Number(partition), offset: String(offset) })
  }
  const expected = recordsFrom(written, seekTo)
  await waitForAll(s, received, expected)
  compareRecords(expected, received)
  return `seek to offsets ${Object.values(seekTo).join('/')} read ${countsText(received, [0, 1, 2])}, equal to what was written`
})

scenario('group-commit-resume', async s => {
  const topic = s.name_('t')
  const group = s.name_('g')
  const admin = await s.admin()
  await createTopic(admin, topic)
  const producer = await s.producer()
  const records = makeRecords(150, 3, 'resume')
  const written = await produce(producer, topic, records, { perSend: 30 })

  // The first member reads everything, then commits offsets in the middle
  // (inside a batch), at the end, and at the start of its partitions.
  const first = await s.consumer(group)
  const firstRead = await collect(first, topic, { autoCommit: false })
  await waitForAll(s, firstRead, written, 'first member reads every record')
  const commit = { 0: 17, 1: 50, 2: 0 }
  await step(
    'commitOffsets',
    first.commitOffsets(Object.entries(commit).map(([p, o]) => ({ topic, partition: Number(p), offset: String(o) })))
  )
  const fetched = await step('fetchOffsets', admin.fetchOffsets({ groupId: group, topics: [topic] }))
  const committed = Object.fromEntries((fetched[0] ? fetched[0].partitions : []).map(p => [p.partition, p.offset]))
  for (const [p, o] of Object.entries(commit)) {
    check(committed[p] === String(o), `committed offsets read back ${JSON.stringify(committed)}, expected ${JSON.stringify(commit)}`)
  }
  await step('first member disconnect', first.disconnect())

  // One more record per partition, so that the second member has something
  // to read in every partition, including the one committed at its end.
  const more = makeRecords(3, 3, 'resume-more')
  const writtenMore = await produce(producer, topic, more, { firstOffset: 50 })
  for (const [p, list] of writtenMore) written.get(p).push(...list)

  const second = await s.consumer(group)
  const secondRead = await collect(second, topic, { autoCommit: false })
  const expected = recordsFrom(written, commit)
  await waitForAll(s, secondRead, expected, 'second member reads from the commit on')
  compareRecords(expected, secondRead)
  return `committed ${Object.values(commit).join('/')}; new member read ${countsText(secondRead, [0, 1, 2])}, exactly the rest`
})

scenario('group-rebalance', async s => {
  const topic = s.name_('t')
  const group = s.name_('g')
  const admin = await s.admin()
  await createTopic(admin, topic, 4)
  const all = [0, 1, 2, 3]

  const first = await s.consumer(group)
  const firstRead = await collect(first, topic)
  const second = await s.consumer(group)
  const secondRead = await collect(second, topic)

  // Both members must settle on one generation whose assignments split the
  // four partitions between them, each getting some.
  const latest = c => (c.joins.length ? c.joins[c.joins.length - 1] : null)
  const assigned = c => ((latest(c) && latest(c).memberAssignment[topic]) || []).slice().sort()
  await waitFor(
    s,
    'both members assigned disjoint partitions covering the topic',
    () => {
      const a = assigned(first)
      const b = assigned(second)
      const union = [...a, ...b].sort()
      return a.length > 0 && b.length > 0 && union.length === 4 && union.every((p, i) => p === all[i])
    },
    { explain: () => `first has [${assigned(first)}], second has [${assigned(second)}]` }
  )

  // Records are written only once the group is stable, so that nothing is
  // read twice across the rebalance.
  const producer = await s.producer()
  const records = makeRecords(400, 4, 'rebalance')
  const written = await produce(producer, topic, records, { perSend: 80 })

  const union = new Map()
  const bothRead = () => {
    for (const p of all) union.set(p, [...(firstRead.get(p) || []), ...(secondRead.get(p) || [])])
    return union
  }
  await waitFor(s, 'the two members read every record', () => all.every(p => countOf(bothRead(), p) >= written.get(p).length), {
    explain: () => `first read ${countsText(firstRead, all)}, second read ${countsText(secondRead, all)}`,
  })
  for (const p of all) {
    check(
      !(firstRead.has(p) && secondRead.has(p)),
      `partition ${p} was read by both members (first ${countOf(firstRead, p)}, second ${countOf(secondRead, p)})`
    )
  }
  compareRecords(written, bothRead())
  return `first [${assigned(first)}] second [${assigned(second)}]; ${records.length} records read once, equal`
})

scenario('admin-topics', async s => {
  const topic = s.name_('t')
  const admin = await s.admin()
  await createTopic(admin, topic, 3, [
    { name: 'retention.ms', value: '3600000' },
    { name: 'max.message.bytes', value: '400000' },
  ])
  const again = await step(
    'create existing topic',
    admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }], waitForLeaders: false })
  )
  check(again === false, `creating ${topic} again answered ${again}, expected false (TOPIC_ALREADY_EXISTS)`)

  const listed = await step('listTopics', admin.listTopics())
  check(listed.includes(topic), `listTopics (${listed.length} topics) does not include ${topic}`)

  const describe = async () => {
    const { topics } = await step('fetchTopicMetadata', admin.fetchTopicMetadata({ topics: [topic] }))
    check(topics.length === 1 && topics[0].name === topic, `fetchTopicMetadata answered ${JSON.stringify(topics.map(t => t.name))}`)
    return topics[0].partitions.slice().sort((a, b) => a.partitionId - b.partitionId)
  }
  const checkPartitions = (partitions, count) => {
    check(partitions.length === count, `fetchTopicMetadata: ${partitions.length} partitions, expected ${count}`)
    partitions.forEach((p, i) => {
      check(p.partitionId === i, `fetchTopicMetadata: partition ids ${partitions.map(x => x.partitionId)}`)
      check(p.partitionErrorCode === 0, `partition ${i}: error code ${p.partitionErrorCode}`)
      check(p.leader >= 0 && p.replicas.length === 1 && p.replicas[0] === p.leader, `partition ${i}: leader ${p.leader} replicas [${p.replicas}]`)
      check(p.isr.length === 1 && p.isr[0] === p.leader, `partition ${i}: isr [${p.isr}], expected [${p.leader}]`)
    })
  }
  checkPartitions(await describe(), 3)

  const { resources } = await step(
    'describeConfigs',
    admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'max.message.bytes'] }],
      includeSynonyms: false,
    })
  )
  const value = name => {
    const entry = resources[0].configEntries.find(e => e.configName === name)
    return entry ? entry.configValue : undefined
  }
  check(value('retention.ms') === '3600000', `created with retention.ms=3600000, describeConfigs says ${value('retention.ms')}`)
  check(value('max.message.bytes') === '400000', `created with max.message.bytes=400000, describeConfigs says ${value('max.message.bytes')}`)

  await step('createPartitions', admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] }))
  let partitions = []
  await waitFor(
    s,
    'metadata shows 5 partitions',
    async () => {
      partitions = await describe()
      return partitions.length === 5
    },
    { explain: () => `have ${partitions.length}` }
  )
  checkPartitions(partitions, 5)

  // The new partition takes writes from offset 0.
  const producer = await s.producer()
  const written = await produce(producer, topic, [{ partition: 4, key: Buffer.from('k'), value: Buffer.from('v'), headers: {}, timestamp: String(Date.now()) }])
  check(written.get(4)[0].offset === 0, `first record in the new partition 4 got offset ${written.get(4)[0].offset}`)

  await step('deleteTopics', admin.deleteTopics({ topics: [topic] }))
  let remaining = []
  await waitFor(
    s,
    'listTopics no longer shows the deleted topic',
    async () => {
      remaining = await step('listTopics', admin.listTopics())
      return !remaining.includes(topic)
    }
  )
  return 'create with configs, create again refused, list, describe, 3 -> 5 partitions, delete'
})

scenario('admin-configs', async s => {
  const topic = s.name_('t')
  const admin = await s.admin()
  await createTopic(admin, topic, 3, [
    { name: 'retention.ms', value: '3600000' },
    { name: 'cleanup.policy', value: 'compact' },
  ])
  const names = ['retention.ms', 'cleanup.policy', 'max.message.bytes']
  // kafkajs sends a missing configNames as null: every config.
  const describe = async (configNames = names) => {
    const resource = { type: ConfigResourceTypes.TOPIC, name: topic }
    if (configNames) resource.configNames = configNames
    const { resources } = await step('describeConfigs', admin.describeConfigs({ resources: [resource], includeSynonyms: false }))
    check(resources.length === 1, `describeConfigs: ${resources.length} resources`)
    check(resources[0].errorCode === 0, `describeConfigs: error code ${resources[0].errorCode} ${resources[0].errorMessage}`)
    return Object.fromEntries(resources[0].configEntries.map(e => [e.configName, e]))
  }
  const show = entry => (entry ? `${entry.configValue} (source ${entry.configSource})` : 'absent')
  // Whether a value is the topic's own (source TOPIC_CONFIG) or inherited
  // from the broker; inherited values may come from the broker's defaults or
  // its config file, which this suite does not know, so only "not the
  // topic's own" is checked for them.
  const onTopic = (entry, value) => entry && entry.configValue === value && entry.configSource === TOPIC_CONFIG
  const inherited = entry => entry && entry.configSource !== TOPIC_CONFIG

  let configs = await describe()
  check(onTopic(configs['retention.ms'], '3600000'), `retention.ms: ${show(configs['retention.ms'])}, expected 3600000 set on the topic (source ${TOPIC_CONFIG})`)
  check(onTopic(configs['cleanup.policy'], 'compact'), `cleanup.policy: ${show(configs['cleanup.policy'])}, expected compact set on the topic (source ${TOPIC_CONFIG})`)
  check(inherited(configs['max.message.bytes']), `max.message.bytes: ${show(configs['max.message.bytes'])}, expected a value not set on the topic`)
  const inheritedMaxMessageBytes = configs['max.message.bytes'].configValue

  const all = await describe(null)
  check(Object.keys(all).length >= 10 && all['segment.bytes'], `describeConfigs of every config: ${Object.keys(all).length} entries, segment.bytes ${show(all['segment.bytes'])}`)

  const alter = (entries, validateOnly = false) =>
    admin.alterConfigs({ validateOnly, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: entries }] })

  // validateOnly changes nothing.
  await step('alterConfigs validateOnly', alter([{ name: 'retention.ms', value: '1000' }], true))
  configs = await describe()
  check(configs['retention.ms'].configValue === '3600000', `after a validateOnly alter, retention.ms is ${show(configs['retention.ms'])}`)

  // AlterConfigs (kafkajs has no incremental variant) replaces the topic's
  // whole set: cleanup.policy, left out, returns to its default.
  await step(
    'alterConfigs',
    alter([
      { name: 'retention.ms', value: '7200000' },
      { name: 'max.message.bytes', value: '500000' },
    ])
  )
  configs = await describe()
  check(onTopic(configs['retention.ms'], '7200000'), `after alter, retention.ms is ${show(configs['retention.ms'])}, expected 7200000 on the topic`)
  check(onTopic(configs['max.message.bytes'], '500000'), `after alter, max.message.bytes is ${show(configs['max.message.bytes'])}, expected 500000 on the topic`)
  check(inherited(configs['cleanup.policy']) && configs['cleanup.policy'].configValue !== 'compact', `after an alter that left it out, cleanup.policy is ${show(configs['cleanup.policy'])}, expected back at the broker's value`)

  // A value that is not a number is refused, and nothing changes.
  let refused = null
  try {
    await step('alterConfigs invalid', alter([{ name: 'retention.ms', value: 'not-a-number' }]))
  } catch (e) {
    refused = e
  }
  check(refused, 'alterConfigs retention.ms=not-a-number was accepted, expected INVALID_CONFIG')
  check(/INVALID_CONFIG/.test(refused.message), `alterConfigs retention.ms=not-a-number: ${refused.message}, expected INVALID_CONFIG`)
  configs = await describe()
  check(configs['retention.ms'].configValue === '7200000', `after a refused alter, retention.ms is ${show(configs['retention.ms'])}`)

  // The broker's own configs are described too.
  const cluster = await step('describeCluster', admin.describeCluster())
  const nodeId = String(cluster.brokers[0].nodeId)
  const { resources: brokerResources } = await step(
    'describeConfigs broker',
    admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.BROKER, name: nodeId, configNames: ['num.partitions', 'log.retention.hours'] }], includeSynonyms: false })
  )
  const brokerEntries = brokerResources[0].configEntries
  for (const name of ['num.partitions', 'log.retention.hours']) {
    const entry = brokerEntries.find(e => e.configName === name)
    check(entry && /^\d+$/.test(entry.configValue || ''), `broker ${nodeId} config ${name}: ${entry ? entry.configValue : 'absent'}`)
  }
  return `described (${Object.keys(all).length} topic configs), validateOnly kept, alter replaced the set (max.message.bytes inherited was ${inheritedMaxMessageBytes}), invalid value refused, broker configs described`
})

scenario('admin-groups', async s => {
  const topic = s.name_('t')
  const group = s.name_('g')
  const admin = await s.admin()
  await createTopic(admin, topic)
  const producer = await s.producer()
  const written = await produce(producer, topic, makeRecords(90, 3, 'groups'))

  const consumer = await s.consumer(group)
  const received = await collect(consumer, topic, { autoCommit: false })
  await waitForAll(s, received, written)
  const commit = { 0: 30, 1: 12, 2: 5 }
  await step(
    'commitOffsets',
    consumer.commitOffsets(Object.entries(commit).map(([p, o]) => ({ topic, partition: Number(p), offset: String(o) })))
  )
  const memberId = consumer.joins.length ? consumer.joins[consumer.joins.length - 1].memberId : null

  const { groups: listed } = await step('listGroups', admin.listGroups())
  const entry = listed.find(g => g.groupId === group)
  check(entry, `listGroups (${listed.length} groups) does not include ${group}`)
  check(entry.protocolType === 'consumer', `listGroups: protocol type ${entry.protocolType}, expected consumer`)

  const describeGroup = async () => {
    const { groups } = await step('describeGroups', admin.describeGroups([group]))
    check(groups.length === 1 && groups[0].groupId === group, `describeGroups answered ${JSON.stringify(groups.map(g => g.groupId))}`)
    return groups[0]
  }
  const described = await describeGroup()
  check(described.errorCode === 0, `describeGroups: error code ${described.errorCode}`)
  check(described.state === 'Stable', `describeGroups: state ${described.state}, expected Stable`)
  check(described.protocolType === 'consumer', `describeGroups: protocol type ${described.protocolType}`)
  check(described.members.length === 1, `describeGroups: ${described.members.length} members, expected 1`)
  const member = described.members[0]
  check(member.memberId === memberId, `describeGroups: member ${member.memberId}, the consumer joined as ${memberId}`)
  check(member.clientId === s.clientId, `describeGroups: member client id ${member.clientId}, expected ${s.clientId}`)
  const assignment = AssignerProtocol.MemberAssignment.decode(member.memberAssignment)
  const partitions = ((assignment && assignment.assignment[topic]) || []).slice().sort()
  check(partitions.join(',') === '0,1,2', `describeGroups: member assignment ${JSON.stringify(assignment && assignment.assignment)}, expected ${topic} [0,1,2]`)

  const readOffsets = async () => {
    const fetched = await step('fetchOffsets', admin.fetchOffsets({ groupId: group, topics: [topic] }))
    return Object.fromEntries((fetched[0] ? fetched[0].partitions : []).map(p => [p.partition, p.offset]))
  }
  const offsets = await readOffsets()
  check(
    Object.entries(commit).every(([p, o]) => offsets[p] === String(o)),
    `fetchOffsets: ${JSON.stringify(offsets)}, expected ${JSON.stringify(commit)}`
  )

  // A group with a live member cannot be deleted. An admin that does not
  // retry, since kafkajs retries this error as if it could pass.
  const impatientAdmin = await s.admin({ retry: { retries: 0 } })
  let refused = null
  try {
    await step('deleteGroups of a live group', impatientAdmin.deleteGroups([group]))
  } catch (e) {
    refused = e
  }
  check(refused, 'deleteGroups of a group with a live member succeeded, expected NON_EMPTY_GROUP')
  check(/NON_EMPTY_GROUP/.test(refused.message), `deleteGroups of a live group: ${refused.message}, expected NON_EMPTY_GROUP`)

  await step('consumer disconnect', consumer.disconnect())
  let state = null
  await waitFor(
    s,
    'group empty after its member left',
    async () => {
      state = await describeGroup()
      return state.state === 'Empty' && state.members.length === 0
    },
    { explain: () => `state ${state && state.state}, ${state && state.members.length} members` }
  )

  const deleted = await step('deleteGroups', admin.deleteGroups([group]))
  check(
    deleted.length === 1 && deleted[0].groupId === group && deleted[0].errorCode === 0,
    `deleteGroups answered ${JSON.stringify(deleted.map(d => ({ groupId: d.groupId, errorCode: d.errorCode })))}`
  )
  const { groups: after } = await step('listGroups', admin.listGroups())
  check(!after.some(g => g.groupId === group), `listGroups still shows ${group} after deleteGroups`)
  const afterOffsets = await readOffsets()
  check(
    Object.values(afterOffsets).every(o => o === '-1'),
    `fetchOffsets after deleteGroups: ${JSON.stringify(afterOffsets)}, expected -1 everywhere`
  )
  return `listed, described (Stable, 1 member, [0,1,2]), offsets ${Object.values(commit).join('/')}, delete refused while live, Empty after leave, deleted`
})

// ---------------------------------------------------------------------------
// Transactions

// A transactional producer, connected (which runs InitProducerId for its
// transactional id).
async function txnProducer(s, transactionalId) {
  return s.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 60_000 })
}

// A read_committed (kafkajs's default) or read_uncommitted member of a group
// of its own that reads `topic` from the beginning.
async function isolatedRead(s, topic, isolation) {
  const consumer = await s.consumer(s.name_(`g-${isolation}`), { readUncommitted: isolation === 'read_uncommitted' })
  return collect(consumer, topic, { autoCommit: false })
}

// How many records each partition of `byPartition` holds, in partition order.
function perPartitionCount(byPartition) {
  return [...byPartition.values()].map(l => l.length)
}

scenario('txn-commit-read-committed', async s => {
  const topic = s.name_('t')
  const admin = await s.admin()
  await createTopic(admin, topic)
  const producer = await txnProducer(s, s.name_('txn'))
  const records = makeRecords(300, 3, 'txn-commit')
  const txn = await step('begin transaction', producer.transaction())
  const written = await produce(txn, topic, records, { perSend: 60 })
  await step('commit transaction', txn.commit())

  const received = await isolatedRead(s, topic, 'read_committed')
  await waitForAll(s, received, written, 'read_committed consumer reads the committed records')
  compareRecords(written, received)
  return `${records.length} records in one transaction over 3 partitions (${perPartitionCount(written).join('/')}), read_committed read them exactly`
})

scenario('txn-abort-invisible', async s => {
  const topic = s.name_('t')
  const admin = await s.admin()
  await createTopic(admin, topic)
  const producer = await txnProducer(s, s.name_('txn'))
  const aborted = makeRecords(90, 3, 'txn-aborted')
  const committed = makeRecords(90, 3, 'txn-committed', Date.now() - 30_000)
  const first = await step('begin transaction 1', producer.transaction())
  const abortedWritten = await produce(first, topic, aborted, { perSend: 30 })
  await step('abort transaction 1', first.abort())
  const second = await step('begin transaction 2', producer.transaction())
  // The abort marker takes the offset after the aborted records, 30 in each partition.
  const committedWritten = await produce(second, topic, committed, { perSend: 30, firstOffset: 31 })
  await step('commit transaction 2', second.commit())

  const readCommitted = await isolatedRead(s, topic, 'read_committed')
  await waitForAll(s, readCommitted, committedWritten, 'read_committed consumer reads the committed records')
  const both = new Map([0, 1, 2].map(p => [p, [...abortedWritten.get(p), ...committedWritten.get(p)]]))
  const readUncommitted = await isolatedRead(s, topic, 'read_uncommitted')
  await waitForAll(s, readUncommitted, both, 'read_uncommitted consumer reads both transactions')
  compareRecords(committedWritten, readCommitted)
  compareRecords(both, readUncommitted)
  return `aborted 90, committed 90: read_committed read the committed ${total(readCommitted)}, read_uncommitted all ${total(readUncommitted)}`
})

// The transform of txn-consume-transform-produce: the value prefixed with
// t: (a null value stays null), a header naming the input record.
function transform(record) {
  return {
    partition: record.partition,
    key: record.key,
    value: record.value === null ? null : Buffer.concat([Buffer.from('t:'), record.value]),
    headers: { ...record.headers, from: Buffer.from(`${record.partition}/${record.offset}`) },
    timestamp: record.timestamp,
  }
}

scenario('txn-consume-transform-produce', async s => {
  const input = s.name_('in')
  const output = s.name_('out')
  const group = s.name_('g')
  const txnId = s.name_('txn')
  const admin = await s.admin()
  await createTopic(admin, input)
  await createTopic(admin, output)
  const plain = await s.producer()
  const perRun = 60
  const perPartition = perRun / 3
  const outputWritten = new Map([0, 1, 2].map(p => [p, []]))
  for (const run of [1, 2]) {
    const start = (run - 1) * perPartition
    const end = run * perPartition
    const batch = await produce(plain, input, makeRecords(perRun, 3, `ctp-${run}`), { firstOffset: start })

    const member = await s.consumer(group)
    const read = await collect(member, input, { autoCommit: false })
    await waitForAll(s, read, batch, `run ${run}: the group member reads the batch`)
    // Read exactly the batch: from the group's committed offsets on, nothing before them.
    compareRecords(batch, read)

    const producer = await txnProducer(s, txnId)
    const txn = await step(`run ${run}: begin transaction`, producer.transaction())
    const transformed = [0, 1, 2].flatMap(p => batch.get(p).map(transform))
    const placed = await produce(txn, output, transformed, { perSend: perRun, firstOffset: (run - 1) * (perPartition + 1) })
    await step(
      `run ${run}: sendOffsets`,
      txn.sendOffsets({
        consumerGroupId: group,
        topics: [{ topic: input, partitions: [0, 1, 2].map(partition => ({ partition, offset: String(end) })) }],
      })
    )
    await step(`run ${run}: commit transaction`, txn.commit())
    await step(`run ${run}: member leaves`, member.disconnect())
    await step(`run ${run}: producer disconnect`, producer.disconnect())
    for (const [p, list] of placed) outputWritten.get(p).push(...list)

    let offsets = {}
    await waitFor(
      s,
      `run ${run}: the group's committed offsets at ${end} per partition`,
      async () => {
        const fetched = await step('fetchOffsets', admin.fetchOffsets({ groupId: group, topics: [input] }))
        offsets = Object.fromEntries((fetched[0] ? fetched[0].partitions : []).map(p => [p.partition, p.offset]))
        return [0, 1, 2].every(p => offsets[p] === String(end))
      },
      { explain: () => `committed ${JSON.stringify(offsets)}` }
    )
  }
  const received = await isolatedRead(s, output, 'read_committed')
  await waitForAll(s, received, outputWritten, 'read_committed consumer reads the output')
  compareRecords(outputWritten, received)
  return `2 runs of ${perRun} inputs, each transformed with its offsets in one transaction; committed ${perPartition} then ${2 * perPartition} per partition; output holds each input once`
})

scenario('txn-fencing', async s => {
  const topic = s.name_('t')
  const txnId = s.name_('txn')
  const admin = await s.admin()
  await createTopic(admin, topic)
  const a = await txnProducer(s, txnId)
  const txnA = await step('producer A: begin transaction', a.transaction())
  await produce(txnA, topic, makeRecords(30, 3, 'fenced'), { perSend: 30 })
  const b = await txnProducer(s, txnId)
  const txnB = await step('producer B: begin transaction', b.transaction())
  // A's open transaction is aborted when B initializes: its marker follows A's 10 records per partition.
  const fromB = await produce(txnB, topic, makeRecords(30, 3, 'fencer'), { perSend: 30, firstOffset: 11 })
  await step('producer B: commit transaction', txnB.commit())
  let fenced = null
  try {
    await step('producer A: commit after B took over', txnA.commit())
  } catch (e) {
    fenced = e
  }
  check(fenced, "producer A committed after producer B initialized with its transactional id; expected PRODUCER_FENCED")
  check(
    /PRODUCER_FENCED|INVALID_PRODUCER_EPOCH|code 90|code 47/.test(fenced.message),
    `producer A's commit after B took over: ${fenced.message}, expected PRODUCER_FENCED or INVALID_PRODUCER_EPOCH`
  )
  const received = await isolatedRead(s, topic, 'read_committed')
  await waitForAll(s, received, fromB, "read_committed consumer reads B's records")
  compareRecords(fromB, received)
  return `A fenced by B's InitProducerId (${fenced.message.replace(/^.*?: /, '')}); read_committed read B's ${total(received)} records only`
})

// ---------------------------------------------------------------------------
// Runner

function resultLine(name, status, seconds, detail) {
  const clean = String(detail).replace(/[\t\r\n]+/g, ' ').trim()
  return [CLIENT, KAFKAJS_VERSION, name, status, seconds.toFixed(1), clean].join('\t') + '\n'
}

async function runScenario({ name, run }) {
  currentScenario = name
  const s = new Scenario(name)
  const started = Date.now()
  let status = 'pass'
  let detail
  try {
    detail = await step(`scenario ${name}`, run(s), SCENARIO_TIMEOUT_MS)
  } catch (e) {
    status = 'fail'
    detail = e instanceof StepError ? e.message : describeError(e)
  }
  await s.cleanup()
  const seconds = (Date.now() - started) / 1000
  fs.appendFileSync(resultsFile, resultLine(name, status, seconds, detail))
  console.log(`${status.padEnd(4)} ${name} (${seconds.toFixed(1)}s): ${detail}`)
}

async function main() {
  unavailableCodecs = await registerCodecs()
  const only = process.env.KAFKAJS_SCENARIOS ? process.env.KAFKAJS_SCENARIOS.split(',') : null
  for (const sc of scenarios) {
    if (only && !only.includes(sc.name)) continue
    if (security && !SECURE_SCENARIOS.test(sc.name)) {
      const detail = `not run over ${security} (produce/consume/group scenarios only)`
      fs.appendFileSync(resultsFile, resultLine(sc.name, 'skip', 0, detail))
      console.log(`skip ${sc.name}: ${detail}`)
      continue
    }
    await runScenario(sc)
  }
}

main().then(
  () => process.exit(0),
  err => {
    console.error(`kafkajs suite broke: ${describeError(err)}`)
    process.exit(1)
  }
)
