#!/usr/bin/env node
// `npm pack` / `npm publish`: copies the Rust sources the addon builds from (the node crate,
// core and server, the patched mqtt5, and the workspace settings they inherit) into crate/, so
// that the tarball builds from source anywhere (scripts/build.js prefers crate/). `--clean`
// removes the copy.
'use strict'
const fs = require('node:fs')
const path = require('node:path')

const pkg = path.resolve(__dirname, '..')
const repo = path.resolve(pkg, '..')
const out = path.join(pkg, 'crate')

fs.rmSync(out, { recursive: true, force: true })
if (process.argv.includes('--clean')) process.exit(0)

function copy(from, to, filter = () => true) {
  const stat = fs.statSync(from)
  if (stat.isDirectory()) {
    fs.mkdirSync(to, { recursive: true })
    for (const entry of fs.readdirSync(from)) {
      const child = path.join(from, entry)
      if (filter(child)) copy(child, path.join(to, entry), filter)
    }
  } else {
    fs.mkdirSync(path.dirname(to), { recursive: true })
    fs.copyFileSync(from, to)
  }
}

// The crates: manifests, build scripts and sources only (no tests, examples or targets).
const crates = { core: path.join(repo, 'core'), server: path.join(repo, 'server'), node: pkg }
for (const [name, dir] of Object.entries(crates)) {
  for (const entry of ['Cargo.toml', 'build.rs', 'src']) {
    const from = path.join(dir, entry)
    if (fs.existsSync(from)) copy(from, path.join(out, name, entry))
  }
}

// The patched mqtt5 the workspace depends on by path (third_party/README.md).
const mqtt5 = path.join(repo, 'third_party', 'mqtt5')
for (const entry of ['Cargo.toml', 'README.md', 'src']) {
  copy(path.join(mqtt5, entry), path.join(out, 'third_party', 'mqtt5', entry))
}

// The workspace root: the repository's, with only these members.
const root = fs.readFileSync(path.join(repo, 'Cargo.toml'), 'utf8')
const members = /^members\s*=\s*\[[^\]]*\]/m
if (!members.test(root)) throw new Error('prepack: no workspace members line in Cargo.toml')
fs.writeFileSync(path.join(out, 'Cargo.toml'), '# Written by scripts/prepack.js from the repository\'s Cargo.toml.\n' +
  root.replace(members, 'members = ["core", "server", "node"]'))
fs.copyFileSync(path.join(repo, 'Cargo.lock'), path.join(out, 'Cargo.lock'))
console.log(`prepack: Rust sources copied into ${path.relative(process.cwd(), out) || out}`)
