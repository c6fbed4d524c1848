// The package's types refuse mistakes: `tsc --strict` over mistakes.ts must report errors on
// exactly the lines marked `// mistake: ` (a mistake the types silently accept fails this
// check), and accept every line of correct.ts. Exits non-zero saying which lines differ.
// Run from node/ (where typescript is a dev dependency): `node typecheck/check.mjs`.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const tsc = createRequire(join(here, '..', 'package.json')).resolve('typescript/bin/tsc')

let output = ''
try {
  execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.json'), '--pretty', 'false'], {
    encoding: 'utf8',
    timeout: 170_000,
  })
} catch (error) {
  // tsc exits 2 when it reports errors; anything else (no output: tsc did not run) is fatal.
  if (typeof error.stdout !== 'string' || error.stdout === '') throw error
  output = error.stdout
}

const errors = new Map() // "file:line" -> messages
for (const line of output.split('\n')) {
  const match = /^(?:.*[\\/])?([\w.-]+\.ts)\((\d+),\d+\): error (TS\d+: .*)$/.exec(line)
  if (!match) continue
  const where = `${match[1]}:${match[2]}`
  errors.set(where, [...(errors.get(where) ?? []), match[3]])
}
const marked = readFileSync(join(here, 'mistakes.ts'), 'utf8')
  .split('\n')
  .flatMap((text, index) => (text.includes(' // mistake: ') ? [`mistakes.ts:${index + 1}`] : []))

const accepted = marked.filter((where) => !errors.has(where))
const unexpected = [...errors].filter(([where]) => !marked.includes(where))
if (marked.length < 15) throw new Error('mistakes.ts lost its marked lines')
if (accepted.length > 0 || unexpected.length > 0) {
  for (const where of accepted) console.error(`${where}: a mistake the types accept`)
  for (const [where, messages] of unexpected) console.error(`${where}: error on a line that is no mistake: ${messages.join('; ')}`)
  process.exit(1)
}
console.log(`types: tsc --strict reports all ${marked.length} mistakes and accepts the correct uses`)
