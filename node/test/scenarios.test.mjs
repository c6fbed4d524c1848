// Every shared scenario (tests/scenarios) with the Promise API and with the Sync twins,
// against one in-process local state store. Fails on any mismatch, unknown op or argument.
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import path from 'node:path'
import { after, before, test } from 'node:test'

import { repo, startLocalServer } from './helpers.mjs'
import { KNOWN_FAILURES, loadScenarios, runScenario } from './scenario-runner.mjs'

const SCENARIO_DEADLINE = 60_000
const { ops, scenarios } = loadScenarios(path.join(repo, 'tests', 'scenarios'))
let server

before(async () => {
  server = await startLocalServer()
})
after(async () => {
  await server?.stop()
})

async function runAll(flavour, concurrency) {
  const run = crypto.randomBytes(4).toString('hex')
  const failures = []
  const queue = [...scenarios]
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const { file, scenario } = next
      let timer
      const failure = await Promise.race([
        runScenario(flavour, file, scenario, ops, server, run),
        new Promise((resolve) => (timer = setTimeout(() => resolve(`no result within ${SCENARIO_DEADLINE} ms`), SCENARIO_DEADLINE))),
      ])
      clearTimeout(timer)
      const known = KNOWN_FAILURES.includes(file)
      if (failure && !known) failures.push(`${file}: ${failure}`)
      if (!failure && known) failures.push(`${file}: listed as a known failure but passed`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  assert.ok(scenarios.length >= 40, `only ${scenarios.length} scenarios found`)
  assert.deepEqual(failures, [], `${failures.length} of ${scenarios.length} scenarios failed (${flavour}):\n${failures.join('\n')}`)
}

test(`shared scenarios, Promise API`, { timeout: 300_000 }, () => runAll('promise', 8))

// Sync twins block the thread: one scenario at a time.
test(`shared scenarios, Sync API`, { timeout: 300_000 }, () => runAll('sync', 1))

test('the runner fails on a mismatch, an unknown op, an unknown argument and a wrong error', { timeout: 60_000 }, async () => {
  const cases = {
    mismatch: [{ op: 'set', client: 'a', key: 'k', value: 'v' }, { op: 'get', client: 'a', key: 'k', expect: { value: 'other' } }],
    'unknown op': [{ op: 'teleport', client: 'a' }],
    'unknown argument': [{ op: 'get', client: 'a', key: 'k', colour: 'blue' }],
    'wrong error': [{ op: 'get', client: 'a', key: '', expect: { error: 'TIMEOUT' } }],
    'unknown field': [{ op: 'get', client: 'a', key: 'k', expect: { valu: null } }],
    'missing event': [{ op: 'observe', client: 'a', key: 'k', stream: 's' }, { op: 'next_event', stream: 's', timeout_ms: 100, expect: { kind: 'set' } }],
  }
  for (const flavour of ['promise', 'sync']) {
    for (const [what, steps] of Object.entries(cases)) {
      const scenario = { name: `selfcheck/${what.replace(/ /g, '_')}`, description: what, clients: ['a'], steps }
      const failure = await runScenario(flavour, scenario.name, scenario, ops, server, 'self')
      assert.ok(failure, `${flavour}: ${what} passed`)
      assert.match(failure, /^step \d+ \(/, `${flavour}: ${what}: ${failure}`)
    }
  }
})
