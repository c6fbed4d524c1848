//! The library's diagnostics (reconnects, renewals, dropped notifications), forwarded to a C
//! callback.

use std::ffi::{c_char, c_void};

use statestore_core::bindings::logs::{clear_log_sink, set_log_sink, LogLevel};
use statestore_core::Error;

use crate::callbacks::run_callback;
use crate::status::{as_log_callback, c_string, entry, statestore_status};
use crate::util::UserData;

/// Log levels, from the most to the least severe.
#[allow(non_camel_case_types)]
#[repr(i32)]
pub enum statestore_log_level {
    /// Errors.
    STATESTORE_LOG_ERROR = 1,
    /// Warnings.
    STATESTORE_LOG_WARN = 2,
    /// Information.
    STATESTORE_LOG_INFO = 3,
    /// Debugging detail.
    STATESTORE_LOG_DEBUG = 4,
    /// Everything.
    STATESTORE_LOG_TRACE = 5,
}

/// A log callback: `level` is a `statestore_log_level`, `target` the library module,
/// `message` the text; both strings are borrowed for the call. It may run on any thread,
/// several at once, also inside a call of this library (with the library's own locks held).
/// So it may call only `statestore_status_name()`, `statestore_status_description()`,
/// `statestore_version()` and `statestore_last_error_message()`: every other function fails
/// there with `STATESTORE_ERR_RUNTIME` and changes nothing (a client it tries to free or
/// close stays open and valid). Record what you need and act after the callback returns.
pub type statestore_log_cb = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        level: i32,
        target: *const c_char,
        message: *const c_char,
    ),
>;

/// Sends the library's log records at `level` or more severe to `callback` (NULL: stop
/// logging). Calling it again replaces the callback. Fails with `STATESTORE_ERR_RUNTIME` if
/// the process already installed another Rust `tracing` subscriber.
///
/// # Safety
/// `callback` may be called with `user_data` on any thread, several calls at once.
#[no_mangle]
pub unsafe extern "C" fn statestore_set_log_callback(
    level: i32,
    callback: statestore_log_cb,
    user_data: *mut c_void,
) -> statestore_status {
    entry(|| {
        let Some(callback) = callback else {
            clear_log_sink();
            return Ok(());
        };
        let level = match level {
            1 => LogLevel::Error,
            2 => LogLevel::Warn,
            3 => LogLevel::Info,
            4 => LogLevel::Debug,
            5 => LogLevel::Trace,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "level is {other}, not a statestore_log_level"
                )))
            }
        };
        let user = UserData(user_data);
        set_log_sink(level, move |record| {
            let user = user;
            let target = c_string(record.target);
            let message = c_string(record.message.as_str());
            let level = record.level as i32;
            run_callback(|| {
                as_log_callback(|| {
                    // SAFETY: the caller of `statestore_set_log_callback` promised that
                    // `callback` may be called with `user_data` on any thread; the strings
                    // live until the end of this closure.
                    unsafe { callback(user.get(), level, target.as_ptr(), message.as_ptr()) }
                })
            });
        })
    })
}
