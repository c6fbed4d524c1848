'use strict'
// The compiled addon, through the loader `napi build` generated at install (../native.js).
let native
try {
  native = require('../native.js')
} catch (error) {
  const hint = new Error(
    'statestore: the native addon is not built. Run `npm rebuild statestore` (needs the Rust ' +
      'toolchain; if your npm blocks install scripts: `npm install-scripts approve statestore`).\n' +
      'Cause: ' + error.message,
  )
  hint.code = 'STATESTORE_NOT_BUILT'
  hint.cause = error
  throw hint
}
module.exports = native
