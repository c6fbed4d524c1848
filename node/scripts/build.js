#!/usr/bin/env node
// Builds the native addon from source (the package's `install` script): `napi build` writes
// `statestore.<platform>.node` and its loader `native.js` next to this package's index.js.
//
// From the repository (`npm install ./node`) the crate builds inside the cargo workspace; from
// a tarball (`npm pack`) it builds the self-contained copy of the crates in `crate/` written by
// scripts/prepack.js. Nothing is downloaded besides what cargo needs from crates.io.
'use strict'
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const root = path.resolve(__dirname, '..')
const packed = path.join(root, 'crate', 'node', 'Cargo.toml')
const inRepo = path.join(root, 'Cargo.toml')
const manifest = fs.existsSync(packed) ? packed : inRepo
if (!fs.existsSync(manifest)) {
  console.error('statestore: no Rust sources to build (expected crate/ or Cargo.toml)')
  process.exit(1)
}
const napi = require.resolve('@napi-rs/cli/package.json', { paths: [root] })
const cli = path.join(path.dirname(napi), require(napi).bin.napi)
const args = [cli, 'build', '--platform', '--release', '--manifest-path', manifest,
  '--package-json-path', path.join(root, 'package.json'),
  '--output-dir', root, '--js', 'native.js', '--dts', 'native.d.ts']
const env = { ...process.env }
if (manifest === packed) {
  // A user's install: no debug info (smaller, faster link).
  env.CARGO_PROFILE_RELEASE_DEBUG = env.CARGO_PROFILE_RELEASE_DEBUG || '0'
}
const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env })
if (result.status !== 0) {
  console.error('statestore: building the native addon failed (a Rust toolchain is needed: https://rustup.rs)')
  process.exit(result.status || 1)
}
