// The Node runner of the shared scenarios (tests/scenarios/README.md): interprets every
// scenario with the Promise API or with the Sync twins against one server.
import fs from 'node:fs'
import path from 'node:path'

import { CONNECT_OPTIONS, Client, compareVersions } from 'mqtt-statestore'

/** Scenarios that show a known bug of this binding (none today); a listed one that passes fails the run. */
export const KNOWN_FAILURES = []

const CONNECT_BY_NAME = new Map(CONNECT_OPTIONS.map((o) => [o.name, o]))
const KEY_ARGS = {
  set: ['key'], get: ['key'], delete: ['key'], vdel: ['key'], observe: ['key'], unobserve: ['key'],
  update: ['key', 'name'], lease: ['key'], election: ['key'], lock: ['name'], try_lock: ['name'],
  lock_holder: ['name'], keys: ['pattern'],
}
const BYTE_ARGS = ['key', 'value', 'pattern', 'holder', 'candidate', 'name']

class StepError extends Error {}

export function loadScenarios(dir) {
  const ops = JSON.parse(fs.readFileSync(path.join(dir, 'ops.json'), 'utf8')).ops
  const scenarios = []
  const walk = (d) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(d, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (entry.name.endsWith('.json') && full !== path.join(dir, 'ops.json')) {
        const name = path.relative(dir, full).slice(0, -5).split(path.sep).join('/')
        scenarios.push({ file: name, scenario: JSON.parse(fs.readFileSync(full, 'utf8')) })
      }
    }
  }
  walk(dir)
  return { ops, scenarios }
}

/** Checks a scenario against ops.json: a problem is a failure of that scenario. */
function validate(file, scenario, ops) {
  if (scenario.name !== file) throw new StepError(`name "${scenario.name}" is not the file's path "${file}"`)
  scenario.steps.forEach((step, i) => {
    const spec = ops[step.op]
    if (!spec) throw new StepError(`step ${i} (${step.op}): unknown op "${step.op}"`)
    for (const arg of spec.required) if (!(arg in step)) throw new StepError(`step ${i} (${step.op}): missing argument "${arg}"`)
    for (const arg of Object.keys(step)) {
      if (['op', 'expect', 'save', 'comment'].includes(arg)) continue
      if (!spec.required.includes(arg) && !spec.optional.includes(arg)) throw new StepError(`step ${i} (${step.op}): unknown argument "${arg}"`)
    }
  })
}

function bytesOf(form, vars) {
  if (typeof form === 'string') return Buffer.from(form, 'utf8')
  if (form && typeof form === 'object') {
    if ('hex' in form) return Buffer.from(form.hex, 'hex')
    if ('base64' in form) return Buffer.from(form.base64, 'base64')
    if ('repeat' in form) return Buffer.from(form.repeat.repeat(form.times), 'utf8')
    if ('var' in form) {
      if (!(form.var in vars)) throw new StepError(`unset variable "${form.var}"`)
      const v = vars[form.var]
      return typeof v === 'string' ? Buffer.from(v, 'utf8') : v
    }
  }
  throw new StepError(`not a byte string: ${JSON.stringify(form)}`)
}

function textOf(form, vars) {
  if (form && typeof form === 'object' && 'var' in form) {
    if (!(form.var in vars)) throw new StepError(`unset variable "${form.var}"`)
    const v = vars[form.var]
    return Buffer.isBuffer(v) ? v.toString('utf8') : v
  }
  return form
}

const snake = (s) => (s === null || s === undefined ? null : s.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase()))

function show(v) {
  if (Buffer.isBuffer(v)) {
    const text = v.toString('utf8')
    return Buffer.from(text, 'utf8').equals(v) && v.length < 80 ? JSON.stringify(text) : `<${v.length} bytes ${v.subarray(0, 16).toString('hex')}…>`
  }
  if (Array.isArray(v)) return `[${v.map(show).join(', ')}]`
  return JSON.stringify(v)
}

function asBytes(v) {
  if (v === null || v === undefined) return null
  if (Buffer.isBuffer(v)) return v
  if (typeof v === 'string') return Buffer.from(v, 'utf8')
  return Buffer.from(String(v), 'utf8')
}

/** A list form: `[...]`, `{"numbered": P, "count": N}` or `{"each": E, "count": N}`; null if `form` is none. */
function listOf(form) {
  if (Array.isArray(form)) return form
  if (form && typeof form === 'object' && 'numbered' in form) return Array.from({ length: form.count }, (_, i) => `${form.numbered}${i}`)
  if (form && typeof form === 'object' && 'each' in form) return Array.from({ length: form.count }, () => form.each)
  return null
}

function matches(expected, actual, vars) {
  if (expected === null) return actual === null || actual === undefined
  if (typeof expected === 'boolean') return actual === expected
  const list = listOf(expected)
  if (list !== null) {
    return Array.isArray(actual) && actual.length === list.length && list.every((e, i) => matches(e, actual[i], vars))
  }
  if (typeof expected === 'object' && 'present' in expected) return expected.present ? actual !== null && actual !== undefined : actual === null || actual === undefined
  if (typeof expected === 'object' && 'newer_than' in expected) {
    const base = vars[expected.newer_than]
    if (base === undefined) throw new StepError(`unset variable "${expected.newer_than}"`)
    return typeof actual === 'string' && compareVersions(actual, textOf({ var: expected.newer_than }, vars)) > 0
  }
  if (typeof expected === 'object' && 'var' in expected) {
    const v = vars[expected.var]
    if (v === undefined) throw new StepError(`unset variable "${expected.var}"`)
    if (v === null) return actual === null || actual === undefined
    const a = asBytes(actual)
    return a !== null && a.equals(asBytes(v))
  }
  const a = asBytes(actual)
  return a !== null && a.equals(bytesOf(expected, vars))
}

/** The API calls of one flavour: every one returns a Promise (Sync ones resolve at once). */
const FLAVOURS = {
  promise: {
    connect: (options) => Client.connect(options),
    connectUrl: (url, options) => Client.connect(url, options),
    close: (c) => c.close(),
    set: (c, k, v, o) => c.set(k, v, o),
    get: (c, k, o) => c.get(k, o),
    delete: (c, k, o) => c.delete(k, o),
    vdel: (c, k, v, o) => c.vdel(k, v, o),
    getMany: (c, k, o) => c.getMany(k, o),
    setMany: (c, i, o) => c.setMany(i, o),
    deleteMany: (c, k, o) => c.deleteMany(k, o),
    keys: async (c, p) => {
      const out = []
      for await (const k of c.keys(p)) out.push(k)
      return out
    },
    observe: async (c, k) => {
      const o = c.observe(k)
      await o.ready
      return o
    },
    unobserve: (c, k) => c.unobserve(k),
    nextEvent: async (stream, ms) => {
      // A next() that outlives its timeout is kept for the following next_event, so no
      // event is consumed unseen.
      stream.pending ??= stream.observation.next()
      let timer
      const r = await Promise.race([stream.pending, new Promise((res) => (timer = setTimeout(() => res('none'), ms)))])
      clearTimeout(timer)
      if (r === 'none') return 'none'
      stream.pending = null
      return r.done ? 'end' : r.value
    },
    lock: (l) => l.lock(),
    tryLock: (l) => l.tryLock(),
    unlock: (g) => g.release(),
    lockHolder: (l) => l.holder(),
    update: (l, k, fn) => l.update(k, fn),
    tryAcquire: (l, o) => l.tryAcquire(o),
    acquire: (l, o) => l.acquire(o),
    renew: (l) => l.renew(),
    release: (l) => l.release(),
    holder: (l) => l.holder(),
    lost: (l, o) => l.lost(o),
    campaign: (e, o) => e.campaign(o),
    tryCampaign: (e) => e.tryCampaign(),
    resign: (e) => e.resign(),
    leader: (e) => e.leader(),
    observeLeader: async (e) => {
      const o = e.observe()
      await o.ready
      return o
    },
  },
  sync: {
    connect: async (options) => Client.connectSync(options),
    connectUrl: async (url, options) => Client.connectSync(url, options),
    close: async (c) => c.closeSync(),
    set: async (c, k, v, o) => c.setSync(k, v, o),
    get: async (c, k, o) => c.getSync(k, o),
    delete: async (c, k, o) => c.deleteSync(k, o),
    vdel: async (c, k, v, o) => c.vdelSync(k, v, o),
    keys: async (c, p) => [...c.keysSync(p)],
    getMany: async (c, k, o) => c.getManySync(k, o),
    setMany: async (c, i, o) => c.setManySync(i, o),
    deleteMany: async (c, k, o) => c.deleteManySync(k, o),
    observe: async (c, k) => c.observeSync(k),
    unobserve: async (c, k) => c.unobserveSync(k),
    nextEvent: async (stream, ms) => {
      try {
        return stream.observation.nextSync({ timeout: ms }) ?? 'none'
      } catch (error) {
        if (error.code === 'STATESTORE_CLOSED') return 'end'
        throw error
      }
    },
    lock: async (l) => l.lockSync(),
    tryLock: async (l) => l.tryLockSync(),
    unlock: async (g) => g.releaseSync(),
    lockHolder: async (l) => l.holderSync(),
    update: async (l, k, fn) => l.updateSync(k, fn),
    tryAcquire: async (l, o) => l.tryAcquireSync(o),
    acquire: async (l, o) => l.acquireSync(o),
    renew: async (l) => l.renewSync(),
    release: async (l) => l.releaseSync(),
    holder: async (l) => l.holderSync(),
    lost: async (l, o) => l.lostSync(o),
    campaign: async (e, o) => e.campaignSync(o),
    tryCampaign: async (e) => e.tryCampaignSync(),
    resign: async (e) => e.resignSync(),
    leader: async (e) => e.leaderSync(),
    observeLeader: async (e) => e.observeSync(),
  },
}

const UPDATE_FNS = {
  increment: () => (old) => {
    const text = old === null ? '' : old.toString('utf8')
    const n = /^-?\d+$/.test(text) ? BigInt(text) : 0n
    return (n + 1n).toString()
  },
  set_const: (value) => () => value,
  delete: () => () => null,
}

/** Runs one scenario; resolves with null (passed) or a failure description. */
export async function runScenario(flavourName, file, scenario, ops, server, run) {
  const api = FLAVOURS[flavourName]
  const prefix = Buffer.from(`scn-${run}/${scenario.name}/`, 'utf8')
  const vars = {}
  const handles = { client: {}, stream: {}, guard: {}, lease: {}, election: {} }
  const base = { host: server.host, port: server.port }

  const handle = (kind, name) => {
    if (!(name in handles[kind])) throw new StepError(`no ${kind} named "${name}"`)
    return handles[kind][name]
  }
  const create = (kind, name, value) => {
    if (name in handles[kind]) throw new StepError(`a ${kind} named "${name}" exists already`)
    handles[kind][name] = value
  }
  const unprefix = (key) => {
    if (!Buffer.isBuffer(key) || !key.subarray(0, prefix.length).equals(prefix)) throw new StepError(`result key ${show(key)} lacks the scenario prefix`)
    return key.subarray(prefix.length)
  }
  const connectOptions = (options = {}, out = { ...base }) => {
    for (const [name, value] of Object.entries(options)) {
      const plain = name.endsWith('_ms') ? name.slice(0, -3) : name
      const spec = CONNECT_BY_NAME.get(plain)
      if (!spec) throw new StepError(`unknown connect option "${name}"`)
      if (name.endsWith('_ms') !== (spec.kind === 'duration')) throw new StepError(`connect option "${name}": durations are written NAME_ms`)
      out[spec.jsName] = value
    }
    return out
  }

  async function step(s) {
    const bytesArg = (name) => {
      let b = bytesOf(s[name], vars)
      if ((KEY_ARGS[s.op] || []).includes(name) && b.length > 0) b = Buffer.concat([prefix, b])
      return b
    }
    const ms = (name) => (name in s ? s[name] : undefined)
    const token = () => ('fencing_token' in s ? textOf(s.fencing_token, vars) : undefined)
    const drop = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))
    switch (s.op) {
      case 'connect': {
        const client = await api.connect(connectOptions(s.options))
        create('client', s.client, client)
        return {}
      }
      case 'connect_url': {
        const url = s.url.replace('{server}', `${server.host}:${server.port}`)
        let client
        try {
          client = await api.connectUrl(url, connectOptions(s.options, {}))
        } catch (error) {
          for (const text of s.message_has || []) if (!String(error.message).includes(text)) throw new StepError(`the error message lacks "${text}": ${error.message}`)
          for (const text of s.message_lacks || []) if (String(error.message).includes(text)) throw new StepError(`the error message shows "${text}": ${error.message}`)
          throw error
        }
        create('client', s.client, client)
        return {}
      }
      case 'close':
        await api.close(handle('client', s.client))
        return {}
      case 'set': {
        const r = await api.set(handle('client', s.client), bytesArg('key'), bytesArg('value'), drop({
          condition: s.condition, expiry: ms('expiry_ms'), fencingToken: token(), persist: s.persist, timeout: ms('timeout_ms'),
        }))
        return { applied: r.applied, version: r.version }
      }
      case 'get': {
        const r = await api.get(handle('client', s.client), bytesArg('key'), drop({ timeout: ms('timeout_ms') }))
        return { value: r === null ? null : r.value, version: r === null ? null : r.version }
      }
      case 'delete':
      case 'vdel': {
        const o = drop({ fencingToken: token(), timeout: ms('timeout_ms') })
        const c = handle('client', s.client)
        const r = s.op === 'delete' ? await api.delete(c, bytesArg('key'), o) : await api.vdel(c, bytesArg('key'), bytesArg('value'), o)
        return { outcome: snake(r.outcome), version: r.version }
      }
      case 'get_many':
      case 'set_many':
      case 'delete_many': {
        const key = (form) => {
          const b = bytesOf(form, vars)
          return b.length > 0 ? Buffer.concat([prefix, b]) : b
        }
        const c = handle('client', s.client)
        let results, name, value
        if (s.op === 'set_many') {
          const items = listOf(s.items).map((i) => (typeof i === 'string' ? [key(i), bytesOf(i, vars)] : [key(i[0]), bytesOf(i[1], vars)]))
          results = await api.setMany(c, items, drop({
            condition: s.condition, expiry: ms('expiry_ms'), fencingToken: token(), persist: s.persist, timeout: ms('timeout_ms'),
          }))
          ;[name, value] = ['applied', (r) => r.applied]
        } else if (s.op === 'get_many') {
          results = await api.getMany(c, listOf(s.keys).map(key), drop({ timeout: ms('timeout_ms') }))
          ;[name, value] = ['values', (r) => (r === null ? null : r.value)]
        } else {
          results = await api.deleteMany(c, listOf(s.keys).map(key), drop({ fencingToken: token(), timeout: ms('timeout_ms') }))
          ;[name, value] = ['outcomes', (r) => snake(r.outcome)]
        }
        const failed = results.map((r) => r instanceof Error)
        return {
          [name]: results.map((r, i) => (failed[i] ? null : value(r))),
          errors: results.map((r, i) => (failed[i] ? r.code.replace(/^STATESTORE_/, '') : null)),
        }
      }
      case 'keys': {
        const keys = (await api.keys(handle('client', s.client), bytesArg('pattern'))).map(unprefix)
        keys.sort(Buffer.compare)
        return { keys }
      }
      case 'observe': {
        const client = handle('client', s.client)
        if (s.stream in handles.stream) throw new StepError(`a stream named "${s.stream}" exists already`)
        create('stream', s.stream, { observation: await api.observe(client, bytesArg('key')), pending: null })
        return {}
      }
      case 'unobserve':
        await api.unobserve(handle('client', s.client), bytesArg('key'))
        return {}
      case 'observe_leader': {
        const election = handle('election', s.election)
        if (s.stream in handles.stream) throw new StepError(`a stream named "${s.stream}" exists already`)
        create('stream', s.stream, { observation: await api.observeLeader(election), pending: null })
        return {}
      }
      case 'next_event': {
        const e = await api.nextEvent(handle('stream', s.stream), s.timeout_ms)
        if (e === 'none' || e === 'end') return { kind: e, key: null, value: null, version: null, holder: null }
        return { kind: e.kind, key: unprefix(e.key), value: e.value ?? null, version: e.version ?? null, holder: e.holder ?? null }
      }
      case 'close_stream':
        handle('stream', s.stream).observation.close()
        delete handles.stream[s.stream]
        return {}
      case 'lock': {
        const client = handle('client', s.client)
        if (s.guard in handles.guard) throw new StepError(`a guard named "${s.guard}" exists already`)
        const lock = client.createLock(bytesArg('name'), drop({ ttl: s.ttl_ms, timeout: ms('timeout_ms'), autoRenew: s.auto_renew }))
        const guard = await api.lock(lock)
        create('guard', s.guard, guard)
        return { token: guard.fencingToken }
      }
      case 'try_lock': {
        const client = handle('client', s.client)
        if (s.guard in handles.guard) throw new StepError(`a guard named "${s.guard}" exists already`)
        const lock = client.createLock(bytesArg('name'), drop({ ttl: s.ttl_ms, autoRenew: s.auto_renew }))
        const guard = await api.tryLock(lock)
        if (guard !== null) create('guard', s.guard, guard)
        return { acquired: guard !== null, token: guard === null ? null : guard.fencingToken }
      }
      case 'unlock':
        await api.unlock(handle('guard', s.guard))
        delete handles.guard[s.guard]
        return {}
      case 'lock_holder': {
        const lock = handle('client', s.client).createLock(bytesArg('name'), { ttl: 1000 })
        return { holder: await api.lockHolder(lock) }
      }
      case 'update': {
        const make = UPDATE_FNS[s.fn]
        if (!make) throw new StepError(`unknown update fn "${s.fn}"`)
        const fn = make('value' in s ? bytesOf(s.value, vars) : null)
        const lock = handle('client', s.client).createLock(bytesArg('name'), drop({ ttl: s.ttl_ms, timeout: ms('timeout_ms') }))
        return { written: await api.update(lock, bytesArg('key'), fn) }
      }
      case 'lease': {
        const client = handle('client', s.client)
        if (s.lease in handles.lease) throw new StepError(`a lease named "${s.lease}" exists already`)
        create('lease', s.lease, client.lease(bytesArg('key'), bytesArg('holder'), drop({ autoRenew: s.auto_renew })))
        return {}
      }
      case 'lease_try_acquire': {
        const r = await api.tryAcquire(handle('lease', s.lease), { ttl: s.ttl_ms })
        return { acquired: r.acquired, token: r.fencingToken, holder: r.holder }
      }
      case 'lease_acquire':
        return { token: await api.acquire(handle('lease', s.lease), drop({ ttl: s.ttl_ms, timeout: ms('timeout_ms') })) }
      case 'lease_renew':
        await api.renew(handle('lease', s.lease))
        return {}
      case 'lease_release':
        return { released: await api.release(handle('lease', s.lease)) }
      case 'lease_holder':
        return { holder: await api.holder(handle('lease', s.lease)) }
      case 'lease_state': {
        const st = handle('lease', s.lease).state
        return { state: snake(st.state), token: st.fencingToken, reason: st.loss ? snake(st.loss.reason) : null }
      }
      case 'lease_lost': {
        const loss = await api.lost(handle('lease', s.lease), { timeout: s.timeout_ms })
        return { reason: loss ? snake(loss.reason) : null }
      }
      case 'election': {
        const client = handle('client', s.client)
        if (s.election in handles.election) throw new StepError(`an election named "${s.election}" exists already`)
        create('election', s.election, client.election(bytesArg('key'), bytesArg('candidate'), { ttl: s.ttl_ms }))
        return {}
      }
      case 'campaign':
        return { token: await api.campaign(handle('election', s.election), drop({ timeout: ms('timeout_ms') })) }
      case 'try_campaign': {
        const r = await api.tryCampaign(handle('election', s.election))
        return { acquired: r.acquired, token: r.fencingToken, holder: r.holder }
      }
      case 'resign':
        await api.resign(handle('election', s.election))
        return {}
      case 'leader':
        return { leader: await api.leader(handle('election', s.election)) }
      default:
        throw new StepError(`op "${s.op}" is not implemented by the Node runner`)
    }
  }

  try {
    validate(file, scenario, ops)
    for (const name of scenario.clients || []) create('client', name, await api.connect(connectOptions()))
    for (const [i, s] of scenario.steps.entries()) {
      const where = `step ${i} (${s.op}${s.comment ? `: ${s.comment}` : ''})`
      let outcome
      try {
        outcome = { result: await step(s) }
      } catch (error) {
        if (error instanceof StepError) throw new StepError(`${where}: ${error.message}`)
        if (typeof error.code === 'string' && error.code.startsWith('STATESTORE_')) outcome = { error: error.code.slice('STATESTORE_'.length), message: error.message }
        else outcome = { error: `${error.name}(${error.code ?? ''})`, message: error.message }
      }
      const expect = s.expect || {}
      if ('error' in expect) {
        if (outcome.error !== expect.error) {
          throw new StepError(`${where}: expected error ${expect.error}, got ${outcome.error ? `${outcome.error}: ${outcome.message}` : `success ${JSON.stringify(outcome.result, (k, v) => (v && v.type === 'Buffer' ? show(Buffer.from(v.data)) : v))}`}`)
        }
        continue
      }
      if (outcome.error) throw new StepError(`${where}: expected success, got ${outcome.error}: ${outcome.message}`)
      const fields = ops[s.op].result
      for (const [field, expected] of Object.entries(expect)) {
        if (!fields.includes(field)) throw new StepError(`${where}: op ${s.op} has no result field "${field}"`)
        const actual = outcome.result[field]
        if (!matches(expected, actual, vars)) throw new StepError(`${where}: ${field}: expected ${JSON.stringify(expected)}, got ${show(actual)}`)
      }
      for (const [variable, field] of Object.entries(s.save || {})) {
        if (!fields.includes(field)) throw new StepError(`${where}: cannot save unknown field "${field}"`)
        vars[variable] = outcome.result[field] ?? null
      }
    }
    return null
  } catch (error) {
    return error instanceof StepError ? error.message : `runner error: ${error.stack}`
  } finally {
    for (const stream of Object.values(handles.stream)) stream.observation.close()
    for (const client of Object.values(handles.client)) {
      try {
        await api.close(client)
      } catch {}
    }
  }
}
