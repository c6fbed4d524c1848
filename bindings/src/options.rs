//! Connection options: an opaque object with setters, so that new options never change the ABI.

use std::ffi::c_char;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use statestore_core::bindings::OptionValue;
use statestore_core::{ConnectOptions, Result};

use crate::status::{entry, statestore_status};
use crate::util::{self, Handles, Out};

/// Connection settings. Create with `statestore_options_new()` or
/// `statestore_options_from_env()`, adjust with the setters, pass to `statestore_connect()`
/// (which copies them), free with `statestore_options_free()`.
pub struct statestore_options {
    _private: [u8; 0],
}

/// What an options handle holds: core's connection settings, and how the client made from
/// them calls back.
#[derive(Clone, Default)]
pub(crate) struct Settings {
    pub(crate) connect: ConnectOptions,
    pub(crate) callbacks: CallbackMode,
    /// Every option set by a setter, in order: `statestore_connect_url()` sets them on top of
    /// the URL's, so that an option given beside a URL wins, as in every other language.
    pub(crate) explicit: Vec<(&'static str, OptionValue)>,
}

impl Settings {
    /// Sets `name`, remembering it as explicitly set.
    fn set(&mut self, name: &'static str, value: OptionValue) -> Result<()> {
        self.connect.set_option(name, value.clone())?;
        self.explicit.push((name, value));
        Ok(())
    }

    /// The settings for `statestore_connect_url()`: the URL's, then the options set here.
    pub(crate) fn with_url(&self, url: &str) -> Result<Settings> {
        let mut connect = ConnectOptions::from_url(url)?;
        for (name, value) in &self.explicit {
            connect.set_option(name, value.clone())?;
        }
        Ok(Settings {
            connect,
            callbacks: self.callbacks,
            explicit: self.explicit.clone(),
        })
    }
}

/// Where a client's `_async` completions run (`statestore_callback_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum CallbackMode {
    #[default]
    Dispatcher,
    Inline,
    Loop,
}

pub(crate) static OPTIONS: Handles<Mutex<Settings>> = Handles::new(2, "statestore_options");

/// A new options handle for `connect`, written to `out`.
fn new_options(connect: ConnectOptions, out: &Out<*mut statestore_options>) {
    let settings = Settings {
        connect,
        callbacks: CallbackMode::Dispatcher,
        explicit: Vec::new(),
    };
    out.set(OPTIONS.insert(Arc::new(Mutex::new(settings))));
}

/// The settings behind `options`, for the duration of `f`.
pub(crate) fn with_settings<T>(
    options: *const statestore_options,
    f: impl FnOnce(&mut Settings) -> Result<T>,
) -> Result<T> {
    let handle = OPTIONS.get(options, "options")?;
    let mut settings = handle.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut settings)
}

/// Where the completion callbacks of `_async` calls run (`statestore_options_set_callback_mode()`).
#[allow(non_camel_case_types)]
#[repr(i32)]
pub enum statestore_callback_mode {
    /// On the library's dispatcher thread, one at a time (the default): a callback may block
    /// and may call blocking functions of this library.
    STATESTORE_CALLBACKS_DISPATCHER = 0,
    /// On the thread that completed the call, as soon as it completes (one thread switch less
    /// per call): a library thread, or for a call that `statestore_close()` ends, the thread
    /// calling it, before it returns. Such a callback must return quickly and must not block: it runs
    /// on one of the few threads that complete every call of the process, so a callback that
    /// waits stalls them all. Blocking functions of this library, `statestore_close()` and
    /// `statestore_client_free()` fail there with `STATESTORE_ERR_RUNTIME`; hand the result
    /// to a thread of your own (a queue, an eventfd) for anything slow.
    STATESTORE_CALLBACKS_INLINE = 1,
    /// On the caller's own thread, from its own event loop: completions wait in the client's
    /// queue, whose file descriptor (`statestore_completion_fd()`) is readable while they wait,
    /// until `statestore_dispatch()` runs them, in completion order. Nothing runs on a
    /// library thread, so callbacks need no locking against the rest of the program (as with
    /// hiredis's event-loop adapters or libmosquitto's `mosquitto_loop_read()`). The update
    /// function of `statestore_lock_update_async()` runs there too. `statestore_close()`
    /// runs the callbacks still to come on the thread calling it, before it returns.
    STATESTORE_CALLBACKS_LOOP = 2,
}

/// Chooses where the completion callbacks of the `_async` calls of clients connected with
/// these options run: a `statestore_callback_mode` (default `STATESTORE_CALLBACKS_DISPATCHER`).
/// With `STATESTORE_CALLBACKS_INLINE` every other rule of callbacks holds (exactly one call,
/// never inside the `_async` function itself, `statestore_close()` completes pending calls and
/// waits for their callbacks), but callbacks may run on several threads at once, in any
/// order, and must not block (see `STATESTORE_CALLBACKS_INLINE`); the update function of
/// `statestore_lock_update_async()` then runs on the dispatcher thread. With
/// `STATESTORE_CALLBACKS_LOOP` they run when the program calls `statestore_dispatch()`
/// (see `STATESTORE_CALLBACKS_LOOP`). Observation callbacks and the callback of
/// `statestore_connect_async()` always run on the dispatcher thread.
#[no_mangle]
pub extern "C" fn statestore_options_set_callback_mode(
    options: *mut statestore_options,
    mode: i32,
) -> statestore_status {
    entry(|| {
        let callbacks = match mode {
            0 => CallbackMode::Dispatcher,
            1 => CallbackMode::Inline,
            2 => CallbackMode::Loop,
            other => {
                return Err(statestore_core::Error::InvalidArgument(format!(
                    "mode is {other}, not a statestore_callback_mode"
                )))
            }
        };
        with_settings(options, |settings| {
            settings.callbacks = callbacks;
            Ok(())
        })
    })
}

/// New options: `localhost:1883`, plain TCP, a generated client id, keep-alive 60 s, session
/// expiry 3600 s, clean start, no credentials, call timeout 10 s, reconnect backoff 128 ms
/// doubling up to 60 s.
///
/// # Safety
/// `options` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_new(
    options: *mut *mut statestore_options,
) -> statestore_status {
    // SAFETY: `options` is NULL or writable during this call (this function's contract).
    let options = unsafe { Out::new(options) };
    entry(|| {
        options.clear("options")?;
        new_options(ConnectOptions::default(), &options);
        Ok(())
    })
}

/// New options from the environment that Azure IoT Operations gives a pod: `AIO_BROKER_HOSTNAME`,
/// `AIO_BROKER_TCP_PORT`, `AIO_MQTT_USE_TLS`, `AIO_TLS_CA_FILE`, `AIO_SAT_FILE`,
/// `AIO_MQTT_CLIENT_ID`, ... A missing required variable or a bad value fails with
/// `STATESTORE_ERR_INVALID_ARGUMENT` naming it.
///
/// # Safety
/// `options` is NULL or points to writable storage.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_from_env(
    options: *mut *mut statestore_options,
) -> statestore_status {
    // SAFETY: `options` is NULL or writable during this call (this function's contract).
    let options = unsafe { Out::new(options) };
    entry(|| {
        options.clear("options")?;
        new_options(ConnectOptions::from_env()?, &options);
        Ok(())
    })
}

/// Frees options. NULL does nothing.
#[no_mangle]
pub extern "C" fn statestore_options_free(options: *mut statestore_options) -> statestore_status {
    entry(|| OPTIONS.remove(options, "options").map(drop))
}

fn apply(options: *mut statestore_options, name: &str, value: OptionValue) -> Result<()> {
    let Some(spec) = statestore_core::bindings::OptionSpec::find(name) else {
        // Refused with the table's message for an unknown name.
        return with_settings(options, |settings| settings.connect.set_option(name, value));
    };
    with_settings(options, |settings| settings.set(spec.name, value))
}

fn set(options: *mut statestore_options, name: &str, value: OptionValue) -> statestore_status {
    entry(|| apply(options, name, value))
}

/// Sets the option `name` from the C string argument of the same name.
///
/// # Safety
/// `value` is NULL or NUL-terminated (as [`util::string`] requires).
unsafe fn set_text(
    options: *mut statestore_options,
    name: &str,
    value: *const c_char,
) -> statestore_status {
    entry(|| {
        // SAFETY: `value` is NULL or NUL-terminated (this function's contract).
        let text = unsafe { util::string(value, name) }?;
        apply(options, name, OptionValue::Str(text))
    })
}

fn set_ms(options: *mut statestore_options, name: &str, ms: u64) -> statestore_status {
    set(
        options,
        name,
        OptionValue::Duration(Duration::from_millis(ms)),
    )
}

/// Sets any option by name from text, the way the `AIO_*` variables and config files spell
/// it: `name` is one of `host`, `port`, `client_id`, `keep_alive`, `session_expiry`,
/// `clean_start`, `tls`, `ca_file`, `cert_file`, `key_file`, `key_password_file`,
/// `username`, `password`, `password_file`, `sat_token_file`, `sat_check_interval`,
/// `default_timeout`, `reconnect_initial_delay`, `reconnect_max_delay`, `max_packet_size`, `max_in_flight`;
/// durations read `"10s"`, `"250ms"`; booleans `"true"`/`"false"`. An unknown name or a bad
/// value fails with `STATESTORE_ERR_INVALID_ARGUMENT` naming it.
///
/// # Safety
/// `name` and `value` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_set(
    options: *mut statestore_options,
    name: *const c_char,
    value: *const c_char,
) -> statestore_status {
    entry(|| {
        // SAFETY: `name` is NULL or NUL-terminated (this function's contract).
        let name = unsafe { util::string(name, "name") }?;
        // SAFETY: `value` is NULL or NUL-terminated (this function's contract).
        let text = unsafe { util::string(value, "value") }?;
        apply(options, &name, OptionValue::Str(text))
    })
}

/// Sets the broker host name or address.
///
/// # Safety
/// `host` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_set_host(
    options: *mut statestore_options,
    host: *const c_char,
) -> statestore_status {
    // SAFETY: `host` is NULL or NUL-terminated (this function's contract).
    unsafe { set_text(options, "host", host) }
}

/// Sets the broker TCP port.
#[no_mangle]
pub extern "C" fn statestore_options_set_port(
    options: *mut statestore_options,
    port: u16,
) -> statestore_status {
    set(options, "port", OptionValue::Int(i64::from(port)))
}

/// Sets the MQTT client id (no `+`, `#`); generated when never set.
///
/// # Safety
/// `client_id` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_set_client_id(
    options: *mut statestore_options,
    client_id: *const c_char,
) -> statestore_status {
    // SAFETY: `client_id` is NULL or NUL-terminated (this function's contract).
    unsafe { set_text(options, "client_id", client_id) }
}

/// Sets the MQTT keep-alive (5 s to 65535 s).
#[no_mangle]
pub extern "C" fn statestore_options_set_keep_alive_ms(
    options: *mut statestore_options,
    keep_alive_ms: u64,
) -> statestore_status {
    set_ms(options, "keep_alive", keep_alive_ms)
}

/// Sets how long the broker keeps the session after a disconnect (whole seconds count).
#[no_mangle]
pub extern "C" fn statestore_options_set_session_expiry_ms(
    options: *mut statestore_options,
    session_expiry_ms: u64,
) -> statestore_status {
    set_ms(options, "session_expiry", session_expiry_ms)
}

/// Whether the first connection starts a clean session.
#[no_mangle]
pub extern "C" fn statestore_options_set_clean_start(
    options: *mut statestore_options,
    clean_start: bool,
) -> statestore_status {
    set(options, "clean_start", OptionValue::Bool(clean_start))
}

/// Turns TLS on (with the system's root certificates unless a CA file is set) or off.
#[no_mangle]
pub extern "C" fn statestore_options_set_tls(
    options: *mut statestore_options,
    tls: bool,
) -> statestore_status {
    set(options, "tls", OptionValue::Bool(tls))
}

/// Sets the PEM file of the CA certificates that validate the broker (turns TLS on).
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_set_ca_file(
    options: *mut statestore_options,
    path: *const c_char,
) -> statestore_status {
    // SAFETY: `path` is NULL or NUL-terminated (this function's contract).
    unsafe { set_text(options, "ca_file", path) }
}

/// Sets the client certificate chain (PEM) for X.509 authentication (with a key file).
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_set_cert_file(
    options: *mut statestore_options,
    path: *const c_char,
) -> statestore_status {
    // SAFETY: `path` is NULL or NUL-terminated (this function's contract).
    unsafe { set_text(options, "cert_file", path) }
}

/// Sets the private key (unencrypted PEM) of the client certificate.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_set_key_file(
    options: *mut statestore_options,
    path: *const c_char,
) -> statestore_status {
    // SAFETY: `path` is NULL or NUL-terminated (this function's contract).
    unsafe { set_text(options, "key_file", path) }
}

/// Sets the MQTT username.
///
/// # Safety
/// `username` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_set_username(
    options: *mut statestore_options,
    username: *const c_char,
) -> statestore_status {
    // SAFETY: `username` is NULL or NUL-terminated (this function's contract).
    unsafe { set_text(options, "username", username) }
}

/// Sets the MQTT password (needs a username).
///
/// # Safety
/// `password` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_set_password(
    options: *mut statestore_options,
    password: *const c_char,
) -> statestore_status {
    // SAFETY: `password` is NULL or NUL-terminated (this function's contract).
    unsafe { set_text(options, "password", password) }
}

/// Authenticates with a Kubernetes service-account token (`K8S-SAT`) read from `path`; the
/// file is watched and a new token makes the client reconnect with it.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn statestore_options_set_sat_token_file(
    options: *mut statestore_options,
    path: *const c_char,
) -> statestore_status {
    // SAFETY: `path` is NULL or NUL-terminated (this function's contract).
    unsafe { set_text(options, "sat_token_file", path) }
}

/// Sets the timeout of calls that do not set their own, and of connecting (positive).
#[no_mangle]
pub extern "C" fn statestore_options_set_default_timeout_ms(
    options: *mut statestore_options,
    timeout_ms: u64,
) -> statestore_status {
    set_ms(options, "default_timeout", timeout_ms)
}

/// Sets the reconnect backoff: the first delay, doubling (with jitter) up to the maximum
/// (`0 < initial_ms <= max_ms`).
#[no_mangle]
pub extern "C" fn statestore_options_set_reconnect_backoff_ms(
    options: *mut statestore_options,
    initial_ms: u64,
    max_ms: u64,
) -> statestore_status {
    entry(|| {
        if initial_ms == 0 || max_ms < initial_ms {
            return Err(statestore_core::Error::InvalidArgument(format!(
                "reconnect backoff must satisfy 0 < initial_ms <= max_ms, got {initial_ms} and {max_ms}"
            )));
        }
        with_settings(options, |settings| {
            // Both or neither: a half-applied pair could be refused at connect.
            let mut changed = settings.clone();
            changed.set(
                "reconnect_initial_delay",
                OptionValue::Duration(Duration::from_millis(initial_ms)),
            )?;
            changed.set(
                "reconnect_max_delay",
                OptionValue::Duration(Duration::from_millis(max_ms)),
            )?;
            *settings = changed;
            Ok(())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::last_error;
    use crate::status::statestore_status::{STATESTORE_ERR_INVALID_ARGUMENT, STATESTORE_OK};

    #[test]
    fn options_are_made_set_and_freed_through_the_c_functions() {
        let mut options: *mut statestore_options = std::ptr::NonNull::dangling().as_ptr();
        // SAFETY: a local, valid for a write.
        let status = unsafe { statestore_options_new(&mut options) };
        assert_eq!(status, STATESTORE_OK);
        // SAFETY: a handle and a NUL-terminated string.
        let status = unsafe { statestore_options_set_host(options, c"broker.example".as_ptr()) };
        assert_eq!(status, STATESTORE_OK);
        assert_eq!(statestore_options_set_port(options, 8883), STATESTORE_OK);
        // SAFETY: NUL-terminated strings.
        let status =
            unsafe { statestore_options_set(options, c"keep_alive".as_ptr(), c"30s".as_ptr()) };
        assert_eq!(status, STATESTORE_OK);
        // SAFETY: NUL-terminated strings.
        let status =
            unsafe { statestore_options_set(options, c"keep_alive".as_ptr(), c"soon".as_ptr()) };
        assert_eq!(status, STATESTORE_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("keep_alive"), "{}", last_error());
        // SAFETY: NULL is refused before any read.
        let status = unsafe { statestore_options_set_host(options, std::ptr::null()) };
        assert_eq!(status, STATESTORE_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("host is NULL"), "{}", last_error());
        let (host, port, keep_alive) = with_settings(options, |settings| {
            let connect = &settings.connect;
            Ok((connect.host.clone(), connect.port, connect.keep_alive))
        })
        .unwrap();
        assert_eq!((host.as_str(), port), ("broker.example", 8883));
        assert_eq!(keep_alive, Duration::from_secs(30));
        assert_eq!(statestore_options_free(options), STATESTORE_OK);
        let status = statestore_options_free(options);
        assert_eq!(status, STATESTORE_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("already freed"), "{}", last_error());
        // SAFETY: NULL is refused before any write.
        let status = unsafe { statestore_options_new(std::ptr::null_mut()) };
        assert_eq!(status, STATESTORE_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("options is NULL"), "{}", last_error());
    }
}
