'use strict'
// The compiled addon, through napi-rs's loader (../native.js): the platform package
// (mqtt-statestore-linux-x64-gnu, ...) or, in a checkout, the addon `npm run build` wrote.
let native
try {
  native = require('../native.js')
} catch (error) {
  const hint = new Error(
    `mqtt-statestore: no native addon for ${process.platform}-${process.arch}. The package ` +
      'ships prebuilt addons for Linux x64 and arm64 (glibc) as optional dependencies ' +
      '(mqtt-statestore-linux-x64-gnu, ...): reinstall without --no-optional/--omit=optional. ' +
      'In a checkout of the sources, build it with `npm run build` in node/.\n' +
      'Cause: ' + error.message,
  )
  hint.code = 'STATESTORE_NOT_BUILT'
  hint.cause = error
  throw hint
}
module.exports = native
