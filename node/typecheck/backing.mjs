// index.d.ts and testing.d.ts promise nothing the addon lacks. The package names, for each
// public member it makes over the addon, the addon members that member calls (`backing` in
// lib/call.js, filled from the classes' tables as the package loads). For every class member,
// function and constant the hand-written types declare: it exists at run time, and each addon
// member behind it is declared by the addon's generated types (native.d.ts and
// testing/index.d.ts, written by napi-rs from the Rust source at build) and exported by the
// addon as loaded. Exits non-zero naming each gap.
// Run from node/ after a build: `node typecheck/backing.mjs [package directory]`.
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { declared } from './declared.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const dir = process.argv[2] ?? join(here, '..')
const require = createRequire(join(dir, 'package.json'))

/** The testing addon: installed, or built beside the package in a checkout (as lib/testing.js finds it). */
function testingAddon() {
  try {
    return require('mqtt-statestore-testing')
  } catch {
    return require('./testing/index.js')
  }
}

const generated = [declared(dir, 'native.d.ts'), declared(dir, 'testing/index.d.ts')]
const addons = [require('./native.js'), testingAddon()]
const pkg = { ...require('./index.js'), ...require('./testing.js') }
const { backing = new Map() } = require('./lib/call.js')

/** Where an addon member `Class.member`, `Class` (its constructor) or `function` is missing. */
function gaps(native) {
  const [owner, member] = native.split('.')
  const inTypes = generated.some(({ classes, names }) =>
    member === undefined ? names.has(owner) || classes.get(owner)?.has('constructor') : classes.get(owner)?.has(member),
  )
  const value = addons.map((addon) => addon[owner]).find((v) => v !== undefined)
  const own = (object, name) => object != null && Object.getOwnPropertyDescriptor(object, name) !== undefined
  const atRunTime = member === undefined ? value !== undefined : typeof value === 'function' && (own(value.prototype, member) || own(value, member))
  return [...(inTypes ? [] : ['the generated types (native.d.ts, testing/index.d.ts) do not declare it']), ...(atRunTime ? [] : ['the addon does not export it'])]
}

const problems = []
let members = 0
let backed = 0
for (const { file, classes, names } of [declared(dir, 'index.d.ts'), declared(dir, 'testing.d.ts')]) {
  const promised = [...names, ...[...classes].flatMap(([cls, set]) => [...set].map((member) => `${cls}.${member}`))]
  for (const name of promised) {
    const [owner, member] = name.split('.')
    const value = pkg[owner]
    const exists = member === undefined ? value !== undefined : typeof value === 'function' && (member in value.prototype || member in value)
    if (!exists) problems.push(`${file}: ${name} does not exist in the package`)
    members += 1
    if (!backing.has(name)) continue
    backed += 1
    for (const native of backing.get(name)) {
      for (const gap of gaps(native)) problems.push(`${file}: ${name} calls the addon's ${native}, but ${gap}`)
    }
  }
}
if (backed === 0) problems.push('no member of index.d.ts is backed: lib/call.js exports no `backing` table')
if (problems.length > 0) {
  for (const problem of problems) console.error(problem)
  process.exit(1)
}
const natives = new Set([...backing.values()].flat())
console.log(`backing: ${backed} of the ${members} members index.d.ts and testing.d.ts declare call ${natives.size} addon members, all declared and exported`)
