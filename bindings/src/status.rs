//! Status codes, the thread's last error message, and the guard every entry point runs in.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CString};
use std::panic::catch_unwind;

use statestore_core::bindings::ErrorInfo;
use statestore_core::{Error, ErrorCode};

/// What every function returns: `STATESTORE_OK` (0) or the code of the failure. The values
/// are those of the Rust core's `ErrorCode` and never change meaning.
/// `statestore_status_name()` and `statestore_status_description()` describe a code;
/// `statestore_last_error_message()` gives the full message of the calling thread's last
/// failure.
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum statestore_status {
    /// Success.
    STATESTORE_OK = 0,
    /// An argument was rejected before anything was sent (NULL, empty key, bad option...);
    /// the message names the argument.
    STATESTORE_ERR_INVALID_ARGUMENT = 1,
    /// No answer within the timeout. For a write, the outcome is unknown: read the key.
    STATESTORE_ERR_TIMEOUT = 2,
    /// The connection was lost while the request was in flight; the outcome is unknown.
    STATESTORE_ERR_CONNECTION_LOST = 3,
    /// The broker cannot be reached (connect failed, TLS or authentication refused).
    STATESTORE_ERR_CONNECTION = 4,
    /// The state store answered something the protocol does not allow.
    STATESTORE_ERR_UNEXPECTED_PAYLOAD = 5,
    /// The state store's RPC layer refused the request.
    STATESTORE_ERR_RPC = 6,
    /// The hybrid logical clock could not advance.
    STATESTORE_ERR_CLOCK = 7,
    /// The client (or the observation) is closed.
    STATESTORE_ERR_CLOSED = 8,
    /// The call cannot run here (e.g. a client created before `fork()` used in the child).
    STATESTORE_ERR_RUNTIME = 9,
    /// The lease, lock or leadership is not held (released, lost, or never acquired).
    STATESTORE_ERR_NOT_HELD = 10,
    /// A pending call was cancelled.
    STATESTORE_ERR_CANCELLED = 11,
    /// A bug in the library (a caught panic); the message says where.
    STATESTORE_ERR_INTERNAL = 12,
    /// Service: the request's timestamp is too far in the future (synchronise the clocks).
    STATESTORE_ERR_TIMESTAMP_SKEW = 100,
    /// Service: the key was written with a fencing token and the request carried none; it stays
    /// fenced until deleted with a token (its current version, from `statestore_get`, will do).
    STATESTORE_ERR_FENCING_TOKEN_REQUIRED = 101,
    /// Service: the fencing token is too far in the future.
    STATESTORE_ERR_FENCING_TOKEN_SKEW = 102,
    /// Service: the fencing token is older than the key's (a later holder wrote it).
    STATESTORE_ERR_FENCING_TOKEN_LOWER_VERSION = 103,
    /// Service: the state store's quota is exceeded.
    STATESTORE_ERR_QUOTA_EXCEEDED = 104,
    /// Service: the request was malformed.
    STATESTORE_ERR_SYNTAX_ERROR = 105,
    /// Service: the client is not authorized.
    STATESTORE_ERR_NOT_AUTHORIZED = 106,
    /// Service: unknown command.
    STATESTORE_ERR_UNKNOWN_COMMAND = 107,
    /// Service: wrong number of arguments.
    STATESTORE_ERR_WRONG_NUMBER_OF_ARGUMENTS = 108,
    /// Service: the request carried no timestamp.
    STATESTORE_ERR_MISSING_TIMESTAMP = 109,
    /// Service: the request's timestamp is malformed.
    STATESTORE_ERR_MALFORMED_TIMESTAMP = 110,
    /// Service: the key is empty.
    STATESTORE_ERR_KEY_LENGTH_ZERO = 111,
    /// Service: an error this library does not know (the message has its text).
    STATESTORE_ERR_UNKNOWN_SERVICE_ERROR = 199,
}

use statestore_status::*;

/// Every status, in the order of `ErrorCode::ALL`.
const ALL: [statestore_status; 26] = [
    STATESTORE_OK,
    STATESTORE_ERR_INVALID_ARGUMENT,
    STATESTORE_ERR_TIMEOUT,
    STATESTORE_ERR_CONNECTION_LOST,
    STATESTORE_ERR_CONNECTION,
    STATESTORE_ERR_UNEXPECTED_PAYLOAD,
    STATESTORE_ERR_RPC,
    STATESTORE_ERR_CLOCK,
    STATESTORE_ERR_CLOSED,
    STATESTORE_ERR_RUNTIME,
    STATESTORE_ERR_NOT_HELD,
    STATESTORE_ERR_CANCELLED,
    STATESTORE_ERR_INTERNAL,
    STATESTORE_ERR_TIMESTAMP_SKEW,
    STATESTORE_ERR_FENCING_TOKEN_REQUIRED,
    STATESTORE_ERR_FENCING_TOKEN_SKEW,
    STATESTORE_ERR_FENCING_TOKEN_LOWER_VERSION,
    STATESTORE_ERR_QUOTA_EXCEEDED,
    STATESTORE_ERR_SYNTAX_ERROR,
    STATESTORE_ERR_NOT_AUTHORIZED,
    STATESTORE_ERR_UNKNOWN_COMMAND,
    STATESTORE_ERR_WRONG_NUMBER_OF_ARGUMENTS,
    STATESTORE_ERR_MISSING_TIMESTAMP,
    STATESTORE_ERR_MALFORMED_TIMESTAMP,
    STATESTORE_ERR_KEY_LENGTH_ZERO,
    STATESTORE_ERR_UNKNOWN_SERVICE_ERROR,
];

// The C enum must have one value per core code, with the same number: a code added in core
// fails this build until the enum has it.
const _: () = {
    let codes = ErrorCode::ALL;
    assert!(
        codes.len() == ALL.len(),
        "statestore_status must list every ErrorCode"
    );
    let mut i = 0;
    while i < codes.len() {
        assert!(
            codes[i] as i32 == ALL[i] as i32,
            "statestore_status differs from ErrorCode"
        );
        i += 1;
    }
};

impl statestore_status {
    pub(crate) fn from_code(code: ErrorCode) -> Self {
        ALL.iter()
            .copied()
            .find(|s| *s as i32 == code as i32)
            .unwrap_or(STATESTORE_ERR_INTERNAL)
    }
}

/// The core code behind a C status value (`None` if the value is no status).
pub(crate) fn code_of(status: i32) -> Option<ErrorCode> {
    ErrorCode::from_i32(status)
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// Set while a log callback runs on this thread.
    static IN_LOG_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Runs `call` (a log callback) with the thread marked, so that every function called from it
/// is refused by [`entry`].
pub(crate) fn as_log_callback(call: impl FnOnce()) {
    let outer = IN_LOG_CALLBACK.with(|c| c.replace(true));
    call();
    IN_LOG_CALLBACK.with(|c| c.set(outer));
}

/// Log records come from anywhere in the library, some while it holds its own locks or runs a
/// runtime thread: a call back into it from there could wait for itself.
fn refuse_in_log_callback() -> Result<(), Error> {
    if IN_LOG_CALLBACK.with(Cell::get) {
        return Err(Error::Runtime(
            "libstatestore functions cannot be called from a log callback (only \
             statestore_status_name(), _description(), statestore_version() and \
             statestore_last_error_message() can): record what you need and act on it after the \
             callback returns"
                .into(),
        ));
    }
    Ok(())
}

/// A message as a C string: interior NULs (from binary keys quoted in a message) become `?`.
pub(crate) fn c_string(text: impl Into<Vec<u8>>) -> CString {
    let mut bytes = text.into();
    for b in bytes.iter_mut() {
        if *b == 0 {
            *b = b'?';
        }
    }
    CString::new(bytes).unwrap_or_default()
}

/// Records `error` as the thread's last failure and returns its status.
pub(crate) fn fail(error: &Error) -> statestore_status {
    let info = ErrorInfo::from(error);
    LAST_ERROR.with(|last| *last.borrow_mut() = c_string(info.message));
    statestore_status::from_code(info.code)
}

/// Runs the body of an exported function: no panic crosses into C, and a failure becomes a
/// status plus the thread's last error message.
pub(crate) fn entry(body: impl FnOnce() -> Result<(), Error>) -> statestore_status {
    if let Err(error) = refuse_in_log_callback() {
        return fail(&error);
    }
    match statestore_core::bindings::catch_panic("the call", body) {
        Ok(Ok(())) => STATESTORE_OK,
        Ok(Err(error)) | Err(error) => fail(&error),
    }
}

/// The name of a status without its prefix: `"OK"`, `"TIMEOUT"`, `"FENCING_TOKEN_REQUIRED"`...
/// (`"UNKNOWN"` for a value that is no status). The string is static: never free it.
#[no_mangle]
pub extern "C" fn statestore_status_name(status: i32) -> *const c_char {
    describe(status, 0)
}

/// One line describing a status (static, never free it; `"unknown status"` for a value that
/// is no status).
#[no_mangle]
pub extern "C" fn statestore_status_description(status: i32) -> *const c_char {
    describe(status, 1)
}

/// Static C strings for the names and descriptions, built once.
fn describe(status: i32, which: usize) -> *const c_char {
    use std::collections::HashMap;
    use std::sync::LazyLock;
    static TEXTS: LazyLock<HashMap<(i32, usize), CString>> = LazyLock::new(|| {
        let mut map = HashMap::new();
        for code in ErrorCode::ALL {
            map.insert((*code as i32, 0), c_string(code.name()));
            map.insert((*code as i32, 1), c_string(code.description()));
        }
        map
    });
    let fallback = if which == 0 {
        c"UNKNOWN"
    } else {
        c"unknown status"
    };
    catch_unwind(|| {
        code_of(status)
            .and_then(|code| TEXTS.get(&(code as i32, which)))
            .map(|s| s.as_ptr())
    })
    .ok()
    .flatten()
    .unwrap_or(fallback.as_ptr())
}

/// The message of the calling thread's last failed call ("" if none failed yet). It names
/// the argument or says what happened and what to do. The string belongs to the library and
/// stays valid until the next failing call on this thread; copy it to keep it. Successful
/// calls do not clear it. Callbacks receive their message directly instead.
#[no_mangle]
pub extern "C" fn statestore_last_error_message() -> *const c_char {
    LAST_ERROR
        .try_with(|last| last.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// The calling thread's last error message, as C reads it.
#[cfg(test)]
pub(crate) fn last_error() -> String {
    // SAFETY: the library's own NUL-terminated string, valid until the next failing call on
    // this thread.
    unsafe { std::ffi::CStr::from_ptr(statestore_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    #[test]
    fn a_panic_in_an_entry_point_is_an_internal_error() {
        let status = entry(|| panic!("boom"));
        assert_eq!(status, STATESTORE_ERR_INTERNAL);
        let message = last_error();
        assert!(message.contains("the call panicked: boom"), "{message}");
        let status = entry(|| Err(Error::InvalidArgument("key\0 is bad".into())));
        assert_eq!(status, STATESTORE_ERR_INVALID_ARGUMENT);
        assert!(last_error().ends_with("key? is bad"), "{}", last_error());
    }

    #[test]
    fn status_names_and_descriptions_are_static_strings() {
        let read = |text: *const c_char| {
            // SAFETY: the library's static NUL-terminated strings.
            unsafe { CStr::from_ptr(text) }.to_str().unwrap().to_owned()
        };
        for status in ALL {
            assert!(!read(statestore_status_name(status as i32)).is_empty());
            assert!(!read(statestore_status_description(status as i32)).is_empty());
        }
        assert_eq!(read(statestore_status_name(0)), "OK");
        assert_eq!(read(statestore_status_name(-1)), "UNKNOWN");
        assert_eq!(read(statestore_status_description(-1)), "unknown status");
        assert_eq!(read(crate::statestore_version()), env!("CARGO_PKG_VERSION"));
    }
}
