'use strict'
// `mqtt-statestore/testing`: the in-process local state store on a free port, for your tests.
module.exports = require('./lib/testing.js')
