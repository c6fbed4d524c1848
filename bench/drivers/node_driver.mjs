// One measurement of one Node flavour, for `statestore-bench bindings` (bench/README.md).
//
// Flavours: `promise` (Client with N Promises in flight), `sync` (the ...Sync twins: they
// block their JS thread, so N in flight are N worker_threads, each with its own client and
// connection) and `mqttjs` (the state
// store protocol spoken by hand over mqtt.js, MQTT 5, TCP_NODELAY: the baseline a Node user
// would otherwise write). Tests: `probe`, `throughput`, `boundary` (calls that fail validation
// before any I/O, ns per call), `memory` (many operations while resident memory is sampled),
// `batch` (`--ops` keys as a loop of single calls, then as one getMany/setMany: loop_s, batch_s)
// and `idle` (a connected client observing a key, idle for `--warmup` to settle, then for
// `--seconds`: the process's CPU and context switches over that time).
//
// Packages are loaded from `--modules DIR` (a folder with node_modules/mqtt-statestore and
// node_modules/mqtt). Prints one line `RESULT <json>`.

import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

const INVOKE_TOPIC = 'statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke';
const WARMUP = 0;
const MEASURE = 1;
const STOP = 2;
const MEMORY_SAMPLES = 100;

const { values: opts } = parseArgs({
  options: {
    flavour: { type: 'string' },
    test: { type: 'string', default: 'throughput' },
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '1883' },
    op: { type: 'string', default: 'set' },
    size: { type: 'string', default: '16' },
    inflight: { type: 'string', default: '1' },
    warmup: { type: 'string', default: '0.1' },
    seconds: { type: 'string', default: '0.3' },
    ops: { type: 'string' },
    'service-pid': { type: 'string' },
    modules: { type: 'string', default: process.env.STATESTORE_BENCH_NODE_DIR ?? process.cwd() },
  },
});
const args = {
  flavour: opts.flavour,
  test: opts.test,
  host: opts.host,
  port: Number(opts.port),
  op: opts.test === 'memory' ? 'mix' : opts.op,
  size: Number(opts.size),
  inflight: Number(opts.inflight),
  warmup: Number(opts.warmup),
  seconds: Number(opts.seconds),
  ops: opts.ops === undefined ? null : Number(opts.ops),
  servicePid: opts['service-pid'] === undefined ? null : Number(opts['service-pid']),
};
const requireFrom = createRequire(join(resolve(opts.modules), 'bench-driver.cjs'));

function emit(result) {
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

const key = (slot) => Buffer.from(`bench-key-${String(slot).padStart(3, '0')}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function statusMib(field) {
  try {
    const line = readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith(field));
    return line ? Number(line.split(/\s+/)[1]) / 1024 : null;
  } catch {
    return null;
  }
}

function serviceCpu(pid) {
  if (!pid) return null;
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // utime + stime, clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

// Context switches of every thread of this process so far (voluntary + involuntary).
const ctxSwitches = () => {
  const u = process.resourceUsage();
  return u.voluntaryContextSwitches + u.involuntaryContextSwitches;
};

class Gate {
  constructor(cap, memory) {
    this.phase = WARMUP;
    this.cap = cap;
    this.counted = 0;
    this.memory = memory;
    this.samples = [];
    this.heap = []; // [heapTotal, heapUsed] MiB beside each sample
    this.step = Math.max(1, Math.floor((cap ?? 1) / MEMORY_SAMPLES));
  }
  next() {
    if (this.phase !== MEASURE || this.cap === null) return this.phase === STOP ? null : this.phase;
    const n = this.counted++;
    if (n >= this.cap) return null;
    if (this.memory && n > 0 && n % this.step === 0) {
      const m = process.memoryUsage();
      this.samples.push([n, m.rss / (1024 * 1024)]);
      this.heap.push([m.heapTotal / (1024 * 1024), m.heapUsed / (1024 * 1024)]);
    }
    return MEASURE;
  }
  get capped() {
    return this.phase === STOP || (this.cap !== null && this.counted >= this.cap);
  }
  stop() {
    this.phase = STOP;
  }
}

class Recorder {
  constructor(keep) {
    this.keep = keep;
    this.latencies = [];
    this.ops = 0;
    this.errors = 0;
    this.firstError = null;
    this.last = 0;
  }
  success(phase, sent) {
    if (phase === MEASURE) {
      const now = performance.now();
      if (this.keep) this.latencies.push(now - sent);
      this.ops++;
      this.last = now;
    }
  }
  failure(gate, error) {
    this.errors++;
    if (this.firstError === null) this.firstError = String(error?.message ?? error);
    gate.stop();
  }
}

class Window {
  open(gate) {
    this.at = performance.now();
    this.cpu = cpuSeconds();
    this.switches = ctxSwitches();
    this.serviceCpu = serviceCpu(args.servicePid);
    // A failure during the warm-up has stopped the run already: keep it stopped.
    if (gate.phase === WARMUP) gate.phase = MEASURE;
  }
  figures(recorder) {
    const endCpu = cpuSeconds();
    const endSwitches = ctxSwitches();
    const endService = serviceCpu(args.servicePid);
    const ops = recorder.ops;
    const elapsed = Math.max(0, (recorder.last || performance.now()) - this.at) / 1000;
    const lat = Float64Array.from(recorder.latencies).sort();
    const q = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] * 1000 : 0);
    return {
      ops,
      errors: recorder.errors,
      error: recorder.firstError,
      elapsed_s: elapsed,
      ops_per_sec: elapsed > 0 ? ops / elapsed : 0,
      p50_us: q(0.5),
      p99_us: q(0.99),
      max_us: lat.length ? lat[lat.length - 1] * 1000 : 0,
      cpu_us_per_op: ops ? ((endCpu - this.cpu) * 1e6) / ops : 0,
      ctx_switches_per_op: ops ? (endSwitches - this.switches) / ops : null,
      service_cpu_us_per_op:
        this.serviceCpu !== null && endService !== null && ops ? ((endService - this.serviceCpu) * 1e6) / ops : null,
    };
  }
}

function memoryTrace(gate) {
  const s = gate.samples;
  if (!s.length) return null;
  const lastOps = s[s.length - 1][0];
  const half = s.findIndex(([ops]) => ops >= Math.floor(lastOps / 2));
  const [middle, end] = [s[half][1], s[s.length - 1][1]];
  // V8's heap: reserved (heapTotal) and used by live objects (heapUsed), over the same half.
  const [heapMiddle, heapEnd] = [gate.heap[half], gate.heap[gate.heap.length - 1]];
  const runtime_heap = { reserved_growth_mb: heapEnd[0] - heapMiddle[0], used_growth_mb: heapEnd[1] - heapMiddle[1], used_end_mb: heapEnd[1] };
  return { samples: s, start_mb: s[0][1], end_mb: end, growth_mb: end - s[0][1], second_half_growth_mb: end - middle, runtime_heap };
}

function finish(gate, figures) {
  figures.peak_rss_mb = statusMib('VmHWM:');
  if (args.test === 'memory') figures.memory = memoryTrace(gate);
  return figures;
}

const plan = () => [new Gate(args.ops, args.test === 'memory'), new Recorder(args.test !== 'memory'), new Window()];
const operation = (i) => (args.op === 'mix' ? (i % 2 === 0 ? 'set' : 'get') : args.op);

function checkSet(result) {
  if (!result?.applied) throw new Error(`SET not applied: ${JSON.stringify(result)}`);
}
function checkGet(result) {
  if (!result || result.value.length !== args.size) {
    throw new Error(`GET returned ${result?.value?.length ?? result} bytes, expected ${args.size}`);
  }
}

async function window(gate) {
  const deadline = performance.now() + args.seconds * 1000;
  while (performance.now() < deadline && !gate.capped) await sleep(5);
  gate.stop();
}

// --- batch: a loop of single calls against one batch call ----------------------------------------

// `sync` picks the ...Sync twins; awaiting their plain results costs a microtask per call, next to
// a round trip.
async function batch(client, sync) {
  const one = (op, k, v) => (op === 'set' ? (sync ? client.setSync(k, v) : client.set(k, v)) : sync ? client.getSync(k) : client.get(k));
  const many = (op, items) =>
    op === 'set'
      ? sync ? client.setManySync(items) : client.setMany(items)
      : sync ? client.getManySync(items.map(([k]) => k)) : client.getMany(items.map(([k]) => k));
  const check = (op, results) => {
    for (const r of results) {
      if (r instanceof Error) throw r;
      if (op === 'set') checkSet(r);
      else checkGet(r);
    }
  };
  const value = Buffer.alloc(args.size, 'v');
  const items = Array.from({ length: args.ops ?? 1000 }, (_, i) => [`bench-batch-${String(i).padStart(5, '0')}`, value]);
  check('set', await many('set', items));
  let looped = 0n;
  let batched = 0n;
  // A warm-up pass (not counted) when the profile has a warm-up, then the measured pass.
  for (let pass = args.warmup > 0 ? 2 : 1; pass > 0; pass--) {
    let started = process.hrtime.bigint();
    for (const [k, v] of items) check(args.op, [await one(args.op, k, v)]);
    looped = process.hrtime.bigint() - started;
    started = process.hrtime.bigint();
    check(args.op, await many(args.op, items));
    batched = process.hrtime.bigint() - started;
  }
  const seconds = (ns) => Number(ns) / 1e9;
  return {
    ops: items.length,
    errors: 0,
    elapsed_s: seconds(looped + batched),
    loop_s: seconds(looped),
    batch_s: seconds(batched),
    peak_rss_mb: statusMib('VmHWM'),
  };
}

// The CPU and context switches of this whole process from its creation on (`idle`).
// `figures(settleCpuMs)`: the measured window's, with the CPU of the settling time before it.
function idleMeter() {
  const [cpu, switches, started] = [cpuSeconds(), ctxSwitches(), performance.now()];
  const cpuMs = () => (cpuSeconds() - cpu) * 1000;
  const figures = (settleCpuMs) => ({
    elapsed_s: (performance.now() - started) / 1000,
    idle_cpu_ms: cpuMs(),
    idle_ctx_switches: ctxSwitches() - switches,
    settle_cpu_ms: settleCpuMs,
  });
  return { cpuMs, figures };
}

// --- statestore Client: Promises ---------------------------------------------------------------

async function runPromise(statestore) {
  const client = await statestore.Client.connect({ host: args.host, port: args.port });
  try {
    const value = Buffer.alloc(args.size, 'v');
    if (args.test === 'batch') return await batch(client, false);
    if (args.test === 'idle') {
      // The observation is open and the event loop waits on a timer, as an idle application's does.
      const observation = client.observe('bench-idle');
      await observation.ready;
      const settle = idleMeter();
      await sleep(args.warmup * 1000);
      const settleCpuMs = settle.cpuMs();
      const meter = idleMeter();
      await sleep(args.seconds * 1000);
      observation.close();
      return meter.figures(settleCpuMs);
    }
    if (args.test === 'boundary') {
      const calls = args.ops ?? 100_000;
      const started = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) {
        let failed = false;
        try {
          await client.set('', 'v');
        } catch {
          failed = true;
        }
        if (!failed) throw new Error('SET of an empty key did not fail');
      }
      return { ops: calls, errors: 0, ns_per_call: Number(process.hrtime.bigint() - started) / calls };
    }
    for (let slot = 0; slot < args.inflight; slot++) checkSet(await client.set(key(slot), value));
    const [gate, recorder, win] = plan();
    const worker = async (slot) => {
      const k = key(slot);
      for (let i = 0; ; i++) {
        const phase = gate.next();
        if (phase === null) return;
        const sent = performance.now();
        try {
          if (operation(i) === 'set') checkSet(await client.set(k, value));
          else checkGet(await client.get(k));
        } catch (error) {
          recorder.failure(gate, error);
          return;
        }
        recorder.success(phase, sent);
      }
    };
    const workers = Array.from({ length: args.inflight }, (_, slot) => worker(slot));
    await sleep(args.warmup * 1000);
    win.open(gate);
    await window(gate);
    await Promise.all(workers);
    return finish(gate, win.figures(recorder));
  } finally {
    await client.close();
  }
}

// --- statestore Client: Sync twins ----------------------------------------------------------------

async function runSync(statestore) {
  if (args.test === 'throughput' && args.inflight > 1) return runSyncThreads();
  const client = await statestore.Client.connect({ host: args.host, port: args.port });
  try {
    const value = Buffer.alloc(args.size, 'v');
    if (args.test === 'batch') return await batch(client, true);
    if (args.test === 'idle') {
      // The JS thread blocked waiting for the next change, as a Sync reader is.
      const observation = client.observeSync('bench-idle');
      const settle = idleMeter();
      const early = args.warmup > 0 ? observation.nextSync({ timeout: args.warmup * 1000 }) : null;
      const settleCpuMs = settle.cpuMs();
      const meter = idleMeter();
      const event = early ?? observation.nextSync({ timeout: args.seconds * 1000 });
      const measured = meter.figures(settleCpuMs);
      observation.close();
      if (event !== null) throw new Error(`an idle observation gave ${JSON.stringify(event)}`);
      return measured;
    }
    if (args.test === 'boundary') {
      const calls = args.ops ?? 100_000;
      const started = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) {
        let failed = false;
        try {
          client.setSync('', 'v');
        } catch {
          failed = true;
        }
        if (!failed) throw new Error('SET of an empty key did not fail');
      }
      return { ops: calls, errors: 0, ns_per_call: Number(process.hrtime.bigint() - started) / calls };
    }
    checkSet(client.setSync(key(0), value));
    const [gate, recorder, win] = plan();
    // One thread, one call at a time: the clock decides the phases (no timer can fire
    // while a Sync loop runs).
    const loop = (until) => {
      for (let i = 0; ; i++) {
        if (performance.now() >= until) return;
        const phase = gate.next();
        if (phase === null) return;
        const sent = performance.now();
        try {
          if (operation(i) === 'set') checkSet(client.setSync(key(0), value));
          else checkGet(client.getSync(key(0)));
        } catch (error) {
          recorder.failure(gate, error);
          return;
        }
        recorder.success(phase, sent);
      }
    };
    loop(performance.now() + args.warmup * 1000);
    win.open(gate);
    loop(performance.now() + (args.test === 'memory' ? 1e12 : args.seconds * 1000));
    gate.stop();
    return finish(gate, win.figures(recorder));
  } finally {
    await client.close();
  }
}

// Sync calls block their JS thread, so N in flight takes N worker_threads; a client cannot be
// shared between JS environments, so each thread connects its own (N connections).
// control: [phase, measured operations] shared with every worker.
async function runSyncThreads() {
  const control = new Int32Array(new SharedArrayBuffer(8));
  const workers = [];
  const ready = [];
  const done = [];
  for (let slot = 0; slot < args.inflight; slot++) {
    const worker = new Worker(new URL(import.meta.url), {
      argv: process.argv.slice(2),
      workerData: { slot, control: control.buffer },
    });
    const messages = [];
    const waiters = [];
    worker.on('message', (m) => (waiters.length ? waiters.shift()(m) : messages.push(m)));
    worker.on('error', (e) => (waiters.length ? waiters.shift()({ error: String(e?.message ?? e) }) : messages.push({ error: String(e?.message ?? e) })));
    const next = () => new Promise((r) => (messages.length ? r(messages.shift()) : waiters.push(r)));
    workers.push(worker);
    ready.push(next().then((m) => {
      if (!m.ready) throw new Error(m.error ?? 'a worker did not start');
      done.push(next());
    }));
  }
  try {
    await Promise.all(ready);
  } catch (error) {
    Atomics.store(control, 0, STOP);
    await Promise.all(workers.map((w) => w.terminate()));
    throw error;
  }
  await sleep(args.warmup * 1000);
  const win = new Window();
  const gate = { phase: WARMUP };
  win.open(gate);
  Atomics.store(control, 0, MEASURE);
  const deadline = performance.now() + args.seconds * 1000;
  while (performance.now() < deadline && Atomics.load(control, 0) !== STOP) await sleep(5);
  Atomics.store(control, 0, STOP);
  const recorder = new Recorder(true);
  for (const m of await Promise.all(done)) {
    if (m.error) recorder.failure(gate, m.error);
    for (const l of m.latencies ?? []) recorder.latencies.push(l);
    recorder.ops += m.ops ?? 0;
    recorder.errors += m.errors ?? 0;
    if (m.firstError && recorder.firstError === null) recorder.firstError = m.firstError;
    recorder.last = Math.max(recorder.last, (m.last ?? 0) - performance.timeOrigin);
  }
  return finish(gate, win.figures(recorder));
}

async function syncWorker() {
  const { slot } = workerData;
  const control = new Int32Array(workerData.control);
  let client;
  try {
    client = await requireFrom('mqtt-statestore').Client.connect({ host: args.host, port: args.port });
    checkSet(client.setSync(key(slot), Buffer.alloc(args.size, 'v')));
  } catch (error) {
    parentPort.postMessage({ error: String(error?.message ?? error) });
    return;
  }
  parentPort.postMessage({ ready: true });
  const value = Buffer.alloc(args.size, 'v');
  const k = key(slot);
  const latencies = [];
  let ops = 0;
  let errors = 0;
  let firstError = null;
  let last = 0;
  for (;;) {
    const phase = Atomics.load(control, 0);
    if (phase === STOP) break;
    if (phase === MEASURE && args.ops !== null && Atomics.add(control, 1, 1) >= args.ops) {
      Atomics.store(control, 0, STOP);
      break;
    }
    const sent = performance.now();
    try {
      if (args.op === 'set') checkSet(client.setSync(k, value));
      else checkGet(client.getSync(k));
    } catch (error) {
      errors++;
      firstError ??= String(error?.message ?? error);
      Atomics.store(control, 0, STOP);
      break;
    }
    if (phase === MEASURE) {
      const now = performance.now();
      latencies.push(now - sent);
      ops++;
      last = performance.timeOrigin + now;
    }
  }
  await client.close();
  parentPort.postMessage({ done: true, latencies, ops, errors, firstError, last });
}

// --- by hand over mqtt.js ------------------------------------------------------------------------

function respArray(...parts) {
  const chunks = [Buffer.from(`*${parts.length}\r\n`)];
  for (const p of parts) chunks.push(Buffer.from(`$${p.length}\r\n`), p, Buffer.from('\r\n'));
  return Buffer.concat(chunks);
}

async function runMqttjs(mqtt) {
  if (args.test !== 'throughput') return { unavailable: `the by-hand baseline has no ${args.test} test` };
  const clientId = `bench-mqttjs-${process.pid}`;
  const responseTopic = `clients/${clientId}/services/statestore/_any_/command/invoke/response`;
  const client = mqtt.connect(`mqtt://${args.host}:${args.port}`, {
    protocolVersion: 5,
    clientId,
    clean: true,
    keepalive: 60,
    reconnectPeriod: 0,
  });
  await new Promise((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  client.stream.setNoDelay(true);
  try {
    await client.subscribeAsync(responseTopic, { qos: 1 });
    let hlcMs = 0;
    let hlcCounter = 0;
    const hlc = () => {
      const now = Date.now();
      if (now > hlcMs) {
        hlcMs = now;
        hlcCounter = 0;
      } else hlcCounter++;
      return `${String(hlcMs).padStart(15, '0')}:${String(hlcCounter).padStart(5, '0')}:${clientId}`;
    };
    const value = Buffer.alloc(args.size, 'v');
    const getAnswer = `$${args.size}\r\n`;
    const pending = new Map();
    const [gate, recorder, win] = plan();
    let outstanding = 0;
    let drained = null;
    const send = (slot, op, phase, done) => {
      const correlationData = randomBytes(16);
      pending.set(correlationData.toString('hex'), { slot, op, sent: performance.now(), phase, done });
      outstanding++;
      const payload = op === 'set' ? respArray(Buffer.from('SET'), key(slot), value) : respArray(Buffer.from('GET'), key(slot));
      client.publish(INVOKE_TOPIC, payload, {
        qos: 1,
        properties: {
          responseTopic,
          correlationData,
          messageExpiryInterval: 10,
          contentType: 'application/octet-stream',
          payloadFormatIndicator: false,
          userProperties: { __srcId: clientId, __ts: hlc(), __protVer: '1.0' },
        },
      });
    };
    client.on('message', (_topic, payload, packet) => {
      const props = packet.properties ?? {};
      const id = props.correlationData ? Buffer.from(props.correlationData).toString('hex') : '';
      const entry = pending.get(id);
      pending.delete(id);
      outstanding--;
      if (!entry) return recorder.failure(gate, `a response with unknown correlation data ${id}`);
      const status = props.userProperties?.__stat;
      const text = payload.toString('latin1', 0, Math.min(payload.length, 16));
      if (String(status) !== '200') recorder.failure(gate, `${entry.op} answered __stat ${status}`);
      else if (entry.op === 'set' && text !== '+OK\r\n') recorder.failure(gate, `SET answered ${text}`);
      else if (entry.op === 'get' && !(text.startsWith(getAnswer) && payload.length === getAnswer.length + args.size + 2))
        recorder.failure(gate, `GET answered ${text}`);
      else if (entry.done) return entry.done();
      else {
        recorder.success(entry.phase, entry.sent);
        const phase = gate.next();
        if (phase !== null) return send(entry.slot, args.op, phase, null);
      }
      if (entry.done) entry.done();
      if (outstanding === 0 && gate.phase === STOP && drained) drained();
    });
    for (let slot = 0; slot < args.inflight; slot++) {
      await new Promise((resolve) => send(slot, 'set', null, resolve));
      if (recorder.firstError) throw new Error(`priming failed: ${recorder.firstError}`);
    }
    const finished = new Promise((resolve) => {
      drained = resolve;
    });
    for (let slot = 0; slot < args.inflight; slot++) {
      const phase = gate.next();
      if (phase !== null) send(slot, args.op, phase, null);
    }
    await sleep(args.warmup * 1000);
    win.open(gate);
    await window(gate);
    if (outstanding > 0) {
      const limit = sleep(15000).then(() => {
        throw new Error('requests in flight were not answered within 15 s');
      });
      await Promise.race([finished, limit]);
    }
    return finish(gate, win.figures(recorder));
  } finally {
    await client.endAsync();
  }
}

// --- main -------------------------------------------------------------------------------------------

function load() {
  const name = args.flavour === 'mqttjs' ? 'mqtt' : 'mqtt-statestore';
  try {
    const module = requireFrom(name);
    const pkg = requireFrom(`${name}/package.json`);
    return { module, version: `${name} ${pkg.version}` };
  } catch (error) {
    return { unavailable: `cannot load ${name} from ${resolve(opts.modules)}: ${error.message.split('\n')[0]}` };
  }
}

async function main() {
  const loaded = load();
  if (loaded.unavailable) return emit({ unavailable: loaded.unavailable });
  if (args.test === 'probe') return emit({ ok: true, version: loaded.version });
  let result;
  try {
    if (args.flavour === 'promise') result = await runPromise(loaded.module);
    else if (args.flavour === 'sync') result = await runSync(loaded.module);
    else if (args.flavour === 'mqttjs') result = await runMqttjs(loaded.module);
    else result = { error: `unknown flavour ${args.flavour}` };
  } catch (error) {
    result = { error: `${error?.name ?? 'Error'}: ${error?.message ?? error}` };
  }
  emit(result);
  // Whatever a failed run left open must not keep the process alive.
  setTimeout(() => process.exit(0), 100).unref();
}

if (isMainThread) main();
else syncWorker();
