//! JavaScript values in and errors out, for both addons of the Node package (the client's
//! and the testing one's): every argument's JavaScript type checked, and converted, once
//! ([`args`]); core's errors and Node's `TypeError`s made as JavaScript expects them
//! ([`errors`]), over the value access of `js`.
#![deny(clippy::all)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(clippy::multiple_unsafe_ops_per_block)]

pub mod args;
pub mod errors;
mod js;

use napi::sys;

/// A Node-API status as a result.
pub fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(
            napi::Status::from(status),
            "a Node-API call failed",
        ))
    }
}
