'use strict'
// The `statestore` package (CommonJS). ESM: index.mjs. Types: index.d.ts.
module.exports = require('./lib/client.js')
