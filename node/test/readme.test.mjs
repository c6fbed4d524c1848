// Every JavaScript example of the docs (the README, the package READMEs and every guide in
// docs/) runs as written, in a child process, and ends by itself with status 0: the code blocks
// are read from the docs themselves, so they cannot drift from what works.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'

import { deadline, repo } from './helpers.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
// Each of these must hold JavaScript examples; any other guide in docs/ is read when it has some.
const READMES = ['README.md', 'node/README.md', 'node/testing/README.md', 'docs/node.md']
const GUIDES = fs
  .readdirSync(path.join(repo, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .sort()
  .map((name) => `docs/${name}`)
const DOCS = [...READMES, ...GUIDES.filter((guide) => !READMES.includes(guide))]

/** The fenced blocks of `language` in a Markdown file: [{ line, code }]. */
function blocks(file, language) {
  const lines = fs.readFileSync(file, 'utf8').split('\n')
  const out = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i])
    if (!open) continue
    const indent = open[1].length
    const body = []
    let j = i + 1
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]); j++) body.push(lines[j].slice(indent))
    if (open[2] === language) out.push({ line: i + 1, code: body.join('\n') + '\n' })
    i = j
  }
  return out
}

/** Runs `file` with node; resolves { code, signal, stdout, stderr } (killed at the deadline). */
function run(file) {
  const proc = spawn(process.execPath, [file], { cwd: path.dirname(file), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (d) => (stdout += d))
  proc.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal, stdout, stderr })))
  return deadline(exited, 60_000, `${file} ending by itself`).catch((error) => {
    proc.kill('SIGKILL')
    throw error
  })
}

test('the docs have JavaScript examples', () => {
  for (const readme of READMES) assert.ok(blocks(path.join(repo, readme), 'js').length > 0, `${readme} has no js block`)
})

for (const readme of DOCS) {
  for (const { line, code } of blocks(path.join(repo, readme), 'js')) {
    test(`${readme}:${line} runs as written and ends by itself`, { timeout: 90_000 }, async () => {
      // Beside the tests, so that `mqtt-statestore` resolves as it does for the suite. An ES
      // module, as the examples say (top-level await).
      const dir = fs.mkdtempSync(path.join(here, '.readme-'))
      const file = path.join(dir, 'example.mjs')
      fs.writeFileSync(file, code)
      try {
        const exit = await run(file)
        assert.equal(exit.signal, null, `killed by ${exit.signal}: ${exit.stderr}`)
        assert.equal(exit.code, 0, `${readme}:${line} exited with ${exit.code}:\n${exit.stderr}`)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  }
}
