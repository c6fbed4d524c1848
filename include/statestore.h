/**
 * @file statestore.h
 * @brief libstatestore: the C client of the MQTT broker state store (Azure IoT Operations).
 *
 * Link with `pkg-config --cflags --libs statestore` (add `--static` for libstatestore.a),
 * or in CMake `find_package(statestore CONFIG REQUIRED)` and the target
 * `statestore::statestore`. A C++17 layer (RAII, exceptions, lambdas) is in statestore.hpp.
 *
 * @code
 * statestore_options *opts;  statestore_client *client;  statestore_value *v;
 * statestore_options_new(&opts);
 * statestore_options_set_port(opts, 1883);
 * if (statestore_connect(opts, &client) != STATESTORE_OK)
 *     fprintf(stderr, "%s\n", statestore_last_error_message());
 * statestore_options_free(opts);
 * statestore_set(client, (const uint8_t *)"color", 5, (const uint8_t *)"blue", 4, NULL, NULL);
 * statestore_get(client, (const uint8_t *)"color", 5, -1, &v);  // v == NULL: absent
 * statestore_value_free(v);
 * statestore_client_free(client);                                // closes, then frees
 * @endcode
 *
 * Rules every function follows
 * ----------------------------
 * - STATUS. Every function returns a `statestore_status`: `STATESTORE_OK` (0) or one
 *   `STATESTORE_ERR_*` value per error of the library (the numbers never change meaning;
 *   `statestore_status_name()` and `statestore_status_description()` describe them). The
 *   full message of the calling thread's last failure is `statestore_last_error_message()`.
 *   The only exceptions are the functions that describe something (`statestore_version()`,
 *   `statestore_status_name()`, ...) and the `_free` functions of plain result structs.
 * - ARGUMENTS. NULL where a value is required, an empty key, an unknown enum value, a length
 *   larger than the largest MQTT packet (268435455 bytes), or a handle that is not live
 *   (freed, or not made by this library) gives `STATESTORE_ERR_INVALID_ARGUMENT` with a
 *   message naming the argument; nothing is sent. Keys and values are `(const uint8_t *,
 *   size_t)` pairs: binary safe, no NUL terminator needed; the pointer may be NULL when the
 *   length is 0. Input buffers are copied before a function returns. Durations are
 *   milliseconds. A negative timeout means "the default": the client's default call timeout
 *   for requests (`statestore_get()`; the option structs have `has_timeout` flags instead),
 *   no limit for waits (acquire, campaign, `statestore_observation_next()`). A zero call
 *   timeout or expiry is refused with `STATESTORE_ERR_INVALID_ARGUMENT`; a zero wait means
 *   one attempt (or, for `statestore_observation_next()`, only an event already queued).
 * - POINTERS. What the library cannot check, the caller guarantees; each function's
 *   "Safety" paragraph says which of these it relies on. A byte argument `p` points to
 *   `p_len` readable bytes (or is NULL when `p_len` is 0). A string argument is NULL or
 *   NUL-terminated. An options struct argument is NULL or points to an initialised struct,
 *   whose `fencing_token` is NULL or NUL-terminated. An out-parameter is NULL or points to
 *   writable storage of its type that nothing else uses during the call. A pointer given to
 *   a `_free` function is NULL or came from this library and was not freed yet. A callback
 *   (and an update function) may be called with its `user_data` on the thread its function
 *   names (a library thread for `_async` calls and observations). Byte, string, struct and
 *   out-parameter pointers are used only during the call (`_async` functions copy their
 *   input before they return). Handles need nothing of the kind: the library checks them
 *   and never dereferences them, so a function that takes only handles and numbers has no
 *   "Safety" paragraph.
 * - OWNERSHIP. Every object the library allocates has exactly one free function:
 *   handles (`statestore_client`, `statestore_options`, `statestore_observation`,
 *   `statestore_lock`, `statestore_lock_guard`, `statestore_lease`, `statestore_election`)
 *   their `statestore_X_free()`, results their `statestore_value_free()`,
 *   `statestore_set_result_free()`, `statestore_delete_result_free()`,
 *   `statestore_key_list_free()`, `statestore_event_free()`, and strings
 *   `statestore_string_free()`. Freeing NULL does nothing. Freeing a handle twice is
 *   detected (`STATESTORE_ERR_INVALID_ARGUMENT`); freeing a result struct twice is not.
 *   Results written to out-parameters are owned by the caller; every out-parameter is set
 *   to NULL when a call fails. Pointers documented as "borrowed" are valid only for the
 *   stated lifetime (a callback's duration, or until a handle is freed).
 * - THREADS. Every handle may be used from any thread, by several threads at once. A
 *   blocking call blocks only its calling thread.
 * - CALLBACKS. An `_async` function either returns an error (invalid argument: the
 *   callback is never called) or returns `STATESTORE_OK` and then calls its callback exactly
 *   once, on a library thread (the dispatcher), never inside the `_async` call itself, with
 *   the status, the message (NULL on success) and the result. Results passed to a callback
 *   are borrowed for the callback's duration, except new handles (a client, a guard, an
 *   observation), which the callback owns. Callbacks run one at a time, in completion
 *   order: a slow callback delays the others. A callback may call blocking functions of
 *   this library (they work, and delay the other callbacks while they wait) and may free
 *   the handles it uses. `statestore_close()` completes every pending call of the client
 *   (and of its locks, leases and elections) with `STATESTORE_ERR_CLOSED` and returns only
 *   after each of their callbacks has run (from inside a callback it cannot wait for the
 *   others: they run after the current callback returns). C++ exceptions must not leave a
 *   callback. Opt-in: a client connected with `STATESTORE_CALLBACKS_INLINE` runs its
 *   completions on the library thread that completed each call instead, where they must not
 *   block (see `statestore_options_set_callback_mode()`). A log callback
 *   (`statestore_set_log_callback()`) may call only `statestore_status_name()`,
 *   `statestore_status_description()`, `statestore_version()` and
 *   `statestore_last_error_message()`. A call refused in a callback
 *   (`STATESTORE_ERR_RUNTIME`) changes nothing: a client it tried to free stays valid.
 * - SHUTDOWN. The library runs threads of its own. `statestore_shutdown()`, called once
 *   every handle but options is freed, ends them and waits for them, so that a leak checker
 *   finds nothing of the library's lost; the next call starts them again.
 * - PANICS. No Rust panic crosses into C: a bug in the library is caught at the boundary
 *   and reported as `STATESTORE_ERR_INTERNAL`.
 * - FORK. A process that forks keeps working: the parent is unaffected, and the child gets
 *   fresh library threads on first use. In the child, handles created by the parent
 *   (clients, locks, leases, elections, observations) cannot be used: their calls fail with
 *   `STATESTORE_ERR_RUNTIME` (their connection belongs to the parent); the child may free
 *   them (`statestore_client_free()` then closes nothing) and may connect and use clients
 *   of its own. Do not rely on callbacks of calls the parent started running in the child.
 */


#ifndef STATESTORE_H
#define STATESTORE_H

/* Generated by cbindgen from bindings/ (bindings/gen-header.sh): do not edit. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * The version of this header, `"MAJOR.MINOR.PATCH"`: the version of the library it was
 * generated with. `statestore_version()` gives the version of the library loaded at run time.
 */
#define STATESTORE_VERSION "0.1.0"
/** The major part of `STATESTORE_VERSION`. */
#define STATESTORE_VERSION_MAJOR 0
/** The minor part of `STATESTORE_VERSION`. */
#define STATESTORE_VERSION_MINOR 1
/** The patch part of `STATESTORE_VERSION` (without a pre-release suffix). */
#define STATESTORE_VERSION_PATCH 0

/**
 * What every function returns: `STATESTORE_OK` (0) or the code of the failure. The values
 * are those of the Rust core's `ErrorCode` and never change meaning.
 * `statestore_status_name()` and `statestore_status_description()` describe a code;
 * `statestore_last_error_message()` gives the full message of the calling thread's last
 * failure.
 */
enum statestore_status
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Success.
   */
  STATESTORE_OK = 0,
  /**
   * An argument was rejected before anything was sent (NULL, empty key, bad option...);
   * the message names the argument.
   */
  STATESTORE_ERR_INVALID_ARGUMENT = 1,
  /**
   * No answer within the timeout. For a write, the outcome is unknown: read the key.
   */
  STATESTORE_ERR_TIMEOUT = 2,
  /**
   * The connection was lost while the request was in flight; the outcome is unknown.
   */
  STATESTORE_ERR_CONNECTION_LOST = 3,
  /**
   * The broker cannot be reached (connect failed, TLS or authentication refused).
   */
  STATESTORE_ERR_CONNECTION = 4,
  /**
   * The state store answered something the protocol does not allow.
   */
  STATESTORE_ERR_UNEXPECTED_PAYLOAD = 5,
  /**
   * The state store's RPC layer refused the request.
   */
  STATESTORE_ERR_RPC = 6,
  /**
   * The hybrid logical clock could not advance.
   */
  STATESTORE_ERR_CLOCK = 7,
  /**
   * The client (or the observation) is closed.
   */
  STATESTORE_ERR_CLOSED = 8,
  /**
   * The call cannot run here (e.g. a client created before `fork()` used in the child).
   */
  STATESTORE_ERR_RUNTIME = 9,
  /**
   * The lease, lock or leadership is not held (released, lost, or never acquired).
   */
  STATESTORE_ERR_NOT_HELD = 10,
  /**
   * A pending call was cancelled.
   */
  STATESTORE_ERR_CANCELLED = 11,
  /**
   * A bug in the library (a caught panic); the message says where.
   */
  STATESTORE_ERR_INTERNAL = 12,
  /**
   * Service: the request's timestamp is too far in the future (synchronise the clocks).
   */
  STATESTORE_ERR_TIMESTAMP_SKEW = 100,
  /**
   * Service: the key was written with a fencing token and the request carried none; it stays
   * fenced until deleted with a token (its current version, from `statestore_get`, will do).
   */
  STATESTORE_ERR_FENCING_TOKEN_REQUIRED = 101,
  /**
   * Service: the fencing token is too far in the future.
   */
  STATESTORE_ERR_FENCING_TOKEN_SKEW = 102,
  /**
   * Service: the fencing token is older than the key's (a later holder wrote it).
   */
  STATESTORE_ERR_FENCING_TOKEN_LOWER_VERSION = 103,
  /**
   * Service: the state store's quota is exceeded.
   */
  STATESTORE_ERR_QUOTA_EXCEEDED = 104,
  /**
   * Service: the request was malformed.
   */
  STATESTORE_ERR_SYNTAX_ERROR = 105,
  /**
   * Service: the client is not authorized.
   */
  STATESTORE_ERR_NOT_AUTHORIZED = 106,
  /**
   * Service: unknown command.
   */
  STATESTORE_ERR_UNKNOWN_COMMAND = 107,
  /**
   * Service: wrong number of arguments.
   */
  STATESTORE_ERR_WRONG_NUMBER_OF_ARGUMENTS = 108,
  /**
   * Service: the request carried no timestamp.
   */
  STATESTORE_ERR_MISSING_TIMESTAMP = 109,
  /**
   * Service: the request's timestamp is malformed.
   */
  STATESTORE_ERR_MALFORMED_TIMESTAMP = 110,
  /**
   * Service: the key is empty.
   */
  STATESTORE_ERR_KEY_LENGTH_ZERO = 111,
  /**
   * Service: an error this library does not know (the message has its text).
   */
  STATESTORE_ERR_UNKNOWN_SERVICE_ERROR = 199,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_status statestore_status;
#else
typedef int32_t statestore_status;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * When a SET applies.
 */
enum statestore_condition
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Always.
   */
  STATESTORE_SET_ALWAYS = 0,
  /**
   * Only if the key does not exist (`NX`).
   */
  STATESTORE_SET_IF_ABSENT = 1,
  /**
   * Only if the key does not exist or already holds this value (`NEX`): how a lock is
   * taken and renewed.
   */
  STATESTORE_SET_IF_ABSENT_OR_EQUAL = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_condition statestore_condition;
#else
typedef int32_t statestore_condition;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * What a DEL or VDEL did.
 */
enum statestore_delete_outcome
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * The key was deleted.
   */
  STATESTORE_DELETED = 0,
  /**
   * The key did not exist.
   */
  STATESTORE_NOT_FOUND = 1,
  /**
   * VDEL only: the key holds another value, so it was kept.
   */
  STATESTORE_VALUE_MISMATCH = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_delete_outcome statestore_delete_outcome;
#else
typedef int32_t statestore_delete_outcome;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * What an event says.
 */
enum statestore_event_kind
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * The key was set: `value` is the new value.
   */
  STATESTORE_EVENT_SET = 1,
  /**
   * The key was deleted or expired.
   */
  STATESTORE_EVENT_DELETE = 2,
  /**
   * The connection came back and the observation was registered again; changes while
   * disconnected were not notified. `has_value`/`value` give the key's current state.
   */
  STATESTORE_EVENT_RESYNCED = 3,
  /**
   * An election has a (new) leader: `holder` is its name.
   */
  STATESTORE_EVENT_ELECTED = 4,
  /**
   * An election has no leader.
   */
  STATESTORE_EVENT_VACANT = 5,
  /**
   * A lease, lock or leadership was lost: `loss_reason` says why, `loss_message` says more.
   */
  STATESTORE_EVENT_LOST = 6,
  /**
   * The client's connection state changed (from `statestore_connection_events()`):
   * `connection_state`, `connection_reason`, `connection_attempt`, `connection_delay_ms`,
   * `session_lost`. The key is empty.
   */
  STATESTORE_EVENT_CONNECTION = 7,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_event_kind statestore_event_kind;
#else
typedef int32_t statestore_event_kind;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Why a holding was lost (`statestore_event.loss_reason`).
 */
enum statestore_loss_reason
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Not a loss event.
   */
  STATESTORE_LOSS_NONE = 0,
  /**
   * No renewal succeeded within the TTL: the holding may have expired on the service.
   */
  STATESTORE_LOSS_EXPIRED = 1,
  /**
   * Another holder has the key.
   */
  STATESTORE_LOSS_TAKEN_OVER = 2,
  /**
   * The client was closed.
   */
  STATESTORE_LOSS_CLIENT_CLOSED = 3,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_loss_reason statestore_loss_reason;
#else
typedef int32_t statestore_loss_reason;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * What an update function decided.
 */
enum statestore_update_action
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Write the bytes given to `statestore_buffer_set()` (empty if it was not called).
   */
  STATESTORE_UPDATE_WRITE = 0,
  /**
   * Delete the key.
   */
  STATESTORE_UPDATE_DELETE = 1,
  /**
   * Write nothing; the update fails with `STATESTORE_ERR_CANCELLED`.
   */
  STATESTORE_UPDATE_ABORT = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_update_action statestore_update_action;
#else
typedef int32_t statestore_update_action;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Log levels, from the most to the least severe.
 */
enum statestore_log_level
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Errors.
   */
  STATESTORE_LOG_ERROR = 1,
  /**
   * Warnings.
   */
  STATESTORE_LOG_WARN = 2,
  /**
   * Information.
   */
  STATESTORE_LOG_INFO = 3,
  /**
   * Debugging detail.
   */
  STATESTORE_LOG_DEBUG = 4,
  /**
   * Everything.
   */
  STATESTORE_LOG_TRACE = 5,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_log_level statestore_log_level;
#else
typedef int32_t statestore_log_level;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * What a lease (or a candidate's leadership) is doing.
 */
enum statestore_lease_state
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Never acquired, or released.
   */
  STATESTORE_LEASE_NOT_HELD = 0,
  /**
   * Held.
   */
  STATESTORE_LEASE_HELD = 1,
  /**
   * Was held, and was lost (see the loss reason).
   */
  STATESTORE_LEASE_LOST = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_lease_state statestore_lease_state;
#else
typedef int32_t statestore_lease_state;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Where the completion callbacks of `_async` calls run (`statestore_options_set_callback_mode()`).
 */
enum statestore_callback_mode
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * On the library's dispatcher thread, one at a time (the default): a callback may block
   * and may call blocking functions of this library.
   */
  STATESTORE_CALLBACKS_DISPATCHER = 0,
  /**
   * On the thread that completed the call, as soon as it completes (one thread switch less
   * per call): a library thread, or for a call that `statestore_close()` ends, the thread
   * calling it, before it returns. Such a callback must return quickly and must not block: it runs
   * on one of the few threads that complete every call of the process, so a callback that
   * waits stalls them all. Blocking functions of this library, `statestore_close()` and
   * `statestore_client_free()` fail there with `STATESTORE_ERR_RUNTIME`; hand the result
   * to a thread of your own (a queue, an eventfd) for anything slow.
   */
  STATESTORE_CALLBACKS_INLINE = 1,
  /**
   * On the caller's own thread, from its own event loop: completions wait in the client's
   * queue, whose file descriptor (`statestore_completion_fd()`) is readable while they wait,
   * until `statestore_dispatch()` runs them, in completion order. Nothing runs on a
   * library thread, so callbacks need no locking against the rest of the program (as with
   * hiredis's event-loop adapters or libmosquitto's `mosquitto_loop_read()`). The update
   * function of `statestore_lock_update_async()` runs there too. `statestore_close()`
   * runs the callbacks still to come on the thread calling it, before it returns.
   */
  STATESTORE_CALLBACKS_LOOP = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_callback_mode statestore_callback_mode;
#else
typedef int32_t statestore_callback_mode;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * A client's connection state (`statestore_connection_state()`,
 * `statestore_event.connection_state`); `statestore_connection_state_name()` gives its name.
 */
enum statestore_connection_state_code
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Not a connection event.
   */
  STATESTORE_CONNECTION_NONE = 0,
  /**
   * The first connection is being made.
   */
  STATESTORE_CONNECTION_CONNECTING = 1,
  /**
   * Connected: calls go out.
   */
  STATESTORE_CONNECTION_CONNECTED = 2,
  /**
   * The connection was lost; reconnection attempts are under way (calls wait).
   */
  STATESTORE_CONNECTION_RECONNECTING = 3,
  /**
   * Reconnecting gave up (options `reconnect_max_attempts`, `reconnect_max_elapsed`):
   * calls fail at once with `STATESTORE_ERR_CONNECTION` naming the reason, observations
   * have ended. Final until the client is closed.
   */
  STATESTORE_CONNECTION_GAVE_UP = 4,
  /**
   * The client was closed. Final.
   */
  STATESTORE_CONNECTION_CLOSED = 5,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum statestore_connection_state_code statestore_connection_state_code;
#else
typedef int32_t statestore_connection_state_code;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Where an update function puts the new value: a handle valid only during that call (any
 * other pointer, or one kept from an earlier call, is refused with
 * `STATESTORE_ERR_INVALID_ARGUMENT`).
 */
typedef struct statestore_buffer statestore_buffer;

/**
 * A connection to the state store. Create it with `statestore_connect()` or
 * `statestore_connect_async()`, close it with `statestore_close()`, free it with
 * `statestore_client_free()`. Usable from any thread at once.
 */
typedef struct statestore_client statestore_client;

/**
 * A candidate in a leader election.
 */
typedef struct statestore_election statestore_election;

/**
 * A named lease with a holder name: acquire, renew (automatically by default), release,
 * fencing token, loss.
 */
typedef struct statestore_lease statestore_lease;

/**
 * A lock on the state store (one key, mutual exclusion between processes). Create with
 * `statestore_lock_new()`, acquire with `statestore_lock_acquire()` (or `_try_acquire()`,
 * `_acquire_async()`), which give a `statestore_lock_guard`; free with
 * `statestore_lock_free()`.
 */
typedef struct statestore_lock statestore_lock;

/**
 * A held lock. Protect writes with its fencing token; release it with
 * `statestore_lock_guard_release()`; freeing it releases in the background.
 */
typedef struct statestore_lock_guard statestore_lock_guard;

/**
 * A stream of events: the changes of an observed key (`statestore_observe()`), of an
 * election's leader (`statestore_election_observe()`), or the loss of a lease, lock or
 * leadership (`statestore_lease_watch_loss()`...). Consume it in one of two styles: pull
 * with `statestore_observation_next()`, or push with `statestore_observation_set_callback()`.
 * Free it with `statestore_observation_free()`.
 */
typedef struct statestore_observation statestore_observation;

/**
 * Connection settings. Create with `statestore_options_new()` or
 * `statestore_options_from_env()`, adjust with the setters, pass to `statestore_connect()`
 * (which copies them), free with `statestore_options_free()`.
 */
typedef struct statestore_options statestore_options;

/**
 * A byte string inside a result (not NUL-terminated).
 */
typedef struct statestore_bytes {
  /**
   * The bytes (non-NULL even when `len` is 0).
   */
  const uint8_t *data;
  /**
   * The number of bytes.
   */
  size_t len;
} statestore_bytes;

/**
 * A value read from the state store: `len` bytes at `data` (not NUL-terminated; `data` is
 * non-NULL even when `len` is 0) and the key's `version` (NULL if the service sent none).
 */
typedef struct statestore_value {
  /**
   * The value's bytes.
   */
  const uint8_t *data;
  /**
   * The number of bytes.
   */
  size_t len;
  /**
   * The key's version (a hybrid logical clock as text), or NULL.
   */
  const char *version;
} statestore_value;

/**
 * One key's item of a `statestore_get_many_result`.
 */
typedef struct statestore_get_item {
  /**
   * `STATESTORE_OK`, or this key's error (the others are unaffected).
   */
  statestore_status status;
  /**
   * The error's message, or NULL when `status` is `STATESTORE_OK`.
   */
  const char *message;
  /**
   * Whether the key exists (false also when `status` is an error).
   */
  bool found;
  /**
   * The value and its version when `found`; all NULL and 0 otherwise.
   */
  struct statestore_value value;
} statestore_get_item;

/**
 * The result of `statestore_get_many()`: `count` items, in the order of the keys. Free it
 * with `statestore_get_many_result_free()`.
 */
typedef struct statestore_get_many_result {
  /**
   * The items (NULL when `count` is 0).
   */
  const struct statestore_get_item *items;
  /**
   * The number of items: the number of keys.
   */
  size_t count;
} statestore_get_many_result;

/**
 * Completion of `statestore_get_many_async()`: `result` is borrowed for the callback (NULL
 * on failure of the whole call); `message` is NULL on success.
 */
typedef void (*statestore_get_many_cb)(void *user_data,
                                       statestore_status status,
                                       const char *message,
                                       const struct statestore_get_many_result *result);

/**
 * Options of a SET. All zero (`statestore_set_options o = {0};`) is the default: always,
 * no expiry, no fencing token, not persisted, the client's default timeout. Passing NULL
 * means the same. An expiry or timeout counts only with its `has_` flag set; then it must
 * be at least 1 ms (0 is refused with `STATESTORE_ERR_INVALID_ARGUMENT`).
 */
typedef struct statestore_set_options {
  /**
   * A `statestore_condition` value.
   */
  int32_t condition;
  /**
   * Whether `expiry_ms` is set (otherwise the key never expires).
   */
  bool has_expiry;
  /**
   * Expiry in milliseconds (at least 1).
   */
  uint64_t expiry_ms;
  /**
   * A fencing token (a version string from this library), or NULL. Borrowed for the call.
   */
  const char *fencing_token;
  /**
   * Ask the broker to persist the key (`aio-persistence`).
   */
  bool persist;
  /**
   * Whether `timeout_ms` is set (otherwise the client's default timeout).
   */
  bool has_timeout;
  /**
   * Timeout in milliseconds (at least 1).
   */
  uint64_t timeout_ms;
} statestore_set_options;

/**
 * The outcome of a SET.
 */
typedef struct statestore_set_result {
  /**
   * Whether the value was written (false: the condition did not hold).
   */
  bool applied;
  /**
   * The key's new version when applied (the fencing token of a lock taken with SET), or
   * NULL.
   */
  const char *version;
} statestore_set_result;

/**
 * One item of a `statestore_set_many_result`.
 */
typedef struct statestore_set_item {
  /**
   * `STATESTORE_OK`, or this item's error (e.g. a fencing token too old for its key).
   */
  statestore_status status;
  /**
   * The error's message, or NULL when `status` is `STATESTORE_OK`.
   */
  const char *message;
  /**
   * The outcome when `status` is `STATESTORE_OK`; false and NULL otherwise.
   */
  struct statestore_set_result result;
} statestore_set_item;

/**
 * The result of `statestore_set_many()`: `count` items, in the order of the pairs. Free it
 * with `statestore_set_many_result_free()`.
 */
typedef struct statestore_set_many_result {
  /**
   * The items (NULL when `count` is 0).
   */
  const struct statestore_set_item *items;
  /**
   * The number of items.
   */
  size_t count;
} statestore_set_many_result;

/**
 * Completion of `statestore_set_many_async()`: `result` is borrowed for the callback.
 */
typedef void (*statestore_set_many_cb)(void *user_data,
                                       statestore_status status,
                                       const char *message,
                                       const struct statestore_set_many_result *result);

/**
 * Options of a DEL or VDEL. All zero (or NULL) is the default.
 */
typedef struct statestore_delete_options {
  /**
   * A fencing token (a version string from this library), or NULL. Borrowed for the call.
   */
  const char *fencing_token;
  /**
   * Whether `timeout_ms` is set (otherwise the client's default timeout).
   */
  bool has_timeout;
  /**
   * Timeout in milliseconds (at least 1).
   */
  uint64_t timeout_ms;
} statestore_delete_options;

/**
 * The outcome of a DEL or VDEL.
 */
typedef struct statestore_delete_result {
  /**
   * A `statestore_delete_outcome` value.
   */
  int32_t outcome;
  /**
   * The version the service sent with its answer, or NULL.
   */
  const char *version;
} statestore_delete_result;

/**
 * One key's item of a `statestore_delete_many_result`.
 */
typedef struct statestore_delete_item {
  /**
   * `STATESTORE_OK`, or this key's error.
   */
  statestore_status status;
  /**
   * The error's message, or NULL when `status` is `STATESTORE_OK`.
   */
  const char *message;
  /**
   * The outcome when `status` is `STATESTORE_OK`; `STATESTORE_DELETED` (0) and NULL
   * otherwise: read `status` first.
   */
  struct statestore_delete_result result;
} statestore_delete_item;

/**
 * The result of `statestore_delete_many()`: `count` items, in the order of the keys. Free
 * it with `statestore_delete_many_result_free()`.
 */
typedef struct statestore_delete_many_result {
  /**
   * The items (NULL when `count` is 0).
   */
  const struct statestore_delete_item *items;
  /**
   * The number of items.
   */
  size_t count;
} statestore_delete_many_result;

/**
 * Completion of `statestore_delete_many_async()`: `result` is borrowed for the callback.
 */
typedef void (*statestore_delete_many_cb)(void *user_data,
                                          statestore_status status,
                                          const char *message,
                                          const struct statestore_delete_many_result *result);

/**
 * Completion of `statestore_connect_async()`: on success `client` is a new client that the
 * callback now owns (free it with `statestore_client_free()`); on failure it is NULL and
 * `message` says why (valid during the callback only).
 */
typedef void (*statestore_connect_cb)(void *user_data,
                                      statestore_status status,
                                      const char *message,
                                      struct statestore_client *client);

/**
 * The keys matching a pattern.
 */
typedef struct statestore_key_list {
  /**
   * `count` keys (NULL when `count` is 0).
   */
  const struct statestore_bytes *keys;
  /**
   * The number of keys.
   */
  size_t count;
} statestore_key_list;

/**
 * Completion of `statestore_set_async()`: `result` is borrowed for the callback (NULL on
 * failure); `message` is NULL on success.
 */
typedef void (*statestore_set_cb)(void *user_data,
                                  statestore_status status,
                                  const char *message,
                                  const struct statestore_set_result *result);

/**
 * Completion of `statestore_get_async()`: `value` is borrowed for the callback; NULL when
 * the key does not exist (status OK) or on failure.
 */
typedef void (*statestore_get_cb)(void *user_data,
                                  statestore_status status,
                                  const char *message,
                                  const struct statestore_value *value);

/**
 * Completion of `statestore_delete_async()` and `statestore_vdel_async()`: `result` is
 * borrowed for the callback (NULL on failure).
 */
typedef void (*statestore_delete_cb)(void *user_data,
                                     statestore_status status,
                                     const char *message,
                                     const struct statestore_delete_result *result);

/**
 * Completion of `statestore_keys_async()`: `keys` is borrowed for the callback (NULL on
 * failure).
 */
typedef void (*statestore_keys_cb)(void *user_data,
                                   statestore_status status,
                                   const char *message,
                                   const struct statestore_key_list *keys);

/**
 * Completion of `statestore_lock_acquire_async()`: on success the callback owns `guard`
 * (free it with `statestore_lock_guard_free()`); NULL on failure.
 */
typedef void (*statestore_guard_cb)(void *user_data,
                                    statestore_status status,
                                    const char *message,
                                    struct statestore_lock_guard *guard);

/**
 * An update function: gets the key's current value (`old` NULL: the key does not exist;
 * borrowed for the call) and returns a `statestore_update_action`. It runs with the lock
 * held: for `statestore_lock_update()` on the calling thread, for
 * `statestore_lock_update_async()` on the library's dispatcher thread.
 */
typedef int32_t (*statestore_update_fn)(void *user_data,
                                        const struct statestore_value *old,
                                        struct statestore_buffer *out);

/**
 * Completion of `statestore_lock_update_async()`: `written` is the value written, borrowed
 * for the callback; NULL when the update deleted the key, or on failure.
 */
typedef void (*statestore_update_cb)(void *user_data,
                                     statestore_status status,
                                     const char *message,
                                     const struct statestore_value *written);

/**
 * Completion of calls that return nothing but a status (`message` NULL on success).
 */
typedef void (*statestore_done_cb)(void *user_data, statestore_status status, const char *message);

/**
 * Completion of the acquisitions that give a fencing token: `fencing_token` is borrowed
 * for the callback (NULL on failure).
 */
typedef void (*statestore_token_cb)(void *user_data,
                                    statestore_status status,
                                    const char *message,
                                    const char *fencing_token);

/**
 * A log callback: `level` is a `statestore_log_level`, `target` the library module,
 * `message` the text; both strings are borrowed for the call. It may run on any thread,
 * several at once, also inside a call of this library (with the library's own locks held).
 * So it may call only `statestore_status_name()`, `statestore_status_description()`,
 * `statestore_version()` and `statestore_last_error_message()`: every other function fails
 * there with `STATESTORE_ERR_RUNTIME` and changes nothing (a client it tries to free or
 * close stays open and valid). Record what you need and act after the callback returns.
 */
typedef void (*statestore_log_cb)(void *user_data,
                                  int32_t level,
                                  const char *target,
                                  const char *message);

/**
 * One event. Byte strings are not NUL-terminated; pointers of absent parts are NULL.
 */
typedef struct statestore_event {
  /**
   * A `statestore_event_kind` value.
   */
  int32_t kind;
  /**
   * The observed key (the election's or lease's key for leadership and loss events).
   */
  const uint8_t *key;
  /**
   * Length of `key`.
   */
  size_t key_len;
  /**
   * Whether `value` is present (SET: always; RESYNCED: if the key exists).
   */
  bool has_value;
  /**
   * The value (NULL when absent).
   */
  const uint8_t *value;
  /**
   * Length of `value`.
   */
  size_t value_len;
  /**
   * The key's version if known, or NULL.
   */
  const char *version;
  /**
   * Whether `holder` is present (ELECTED: the leader; LOST: the new holder if known).
   */
  bool has_holder;
  /**
   * The holder's name (NULL when absent).
   */
  const uint8_t *holder;
  /**
   * Length of `holder`.
   */
  size_t holder_len;
  /**
   * A `statestore_loss_reason` value (LOST events), else `STATESTORE_LOSS_NONE`.
   */
  int32_t loss_reason;
  /**
   * A sentence on the loss (LOST events), else NULL.
   */
  const char *loss_message;
  /**
   * A `statestore_connection_state_code` value (CONNECTION events), else
   * `STATESTORE_CONNECTION_NONE`.
   */
  int32_t connection_state;
  /**
   * CONNECTION events: why the connection dropped, why the last attempt failed, or why
   * reconnecting gave up (names the broker's host:port); else NULL.
   */
  const char *connection_reason;
  /**
   * RECONNECTING: the number of the next attempt (1 for the first); GAVE_UP: the attempts
   * made; else 0.
   */
  uint32_t connection_attempt;
  /**
   * RECONNECTING: milliseconds before the next attempt; else -1.
   */
  int64_t connection_delay_ms;
  /**
   * CONNECTED after a reconnect: the broker had lost the session (requests in flight may
   * have been lost).
   */
  bool session_lost;
} statestore_event;

/**
 * Completion of `statestore_observe_async()`: on success the callback owns `observation`
 * (free it with `statestore_observation_free()`); NULL on failure.
 */
typedef void (*statestore_observe_cb)(void *user_data,
                                      statestore_status status,
                                      const char *message,
                                      struct statestore_observation *observation);

/**
 * An event callback: `event` is borrowed for the duration of the call. After the last
 * event it is called once more with `event` NULL: the observation has ended, the callback
 * will never be called again, and `user_data` may be released.
 */
typedef void (*statestore_event_cb)(void *user_data, const struct statestore_event *event);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The version of the library loaded at run time, `"MAJOR.MINOR.PATCH"` (e.g. `"0.1.0"`): a
 * static string, never free it. The header's `STATESTORE_VERSION` (and its `_MAJOR`, `_MINOR`,
 * `_PATCH` parts) is the version the program was compiled against; both come from the
 * workspace version in the root `Cargo.toml`. A program can compare them to detect a
 * library older than the header it was compiled with.
 */
const char *statestore_version(void);

/**
 * Ends the library's threads and waits until they have exited, for a program that must leave
 * no thread behind: call it last, once every handle other than options is freed (clients,
 * observations, locks, guards, leases, elections). A leak checker then finds nothing of the
 * library's but memory still reachable (valgrind: no "definitely" or "possibly lost" block,
 * without suppressions).
 * Later calls work: the library starts its threads again when it next needs them.
 *
 * Fails with `STATESTORE_ERR_RUNTIME`, changing nothing, while a handle other than options
 * is live (the message counts them) and inside any callback of this library. Call it when no
 * other thread uses the library: a call that another thread is starting meanwhile (a
 * connect) fails.
 */
statestore_status statestore_shutdown(void);

/**
 * Reads `count` keys in one call: `*result` gets one item per key, in their order, each
 * with its own status (a key's failure does not fail the others); free it with
 * `statestore_get_many_result_free()`. The protocol has no multi-key command: the GETs are
 * pipelined inside the library, at most the connect option `max_in_flight` at a time.
 * Returns an error status, with nothing sent, when an argument is wrong (NULL `keys` with
 * `count` > 0, an empty key: the message names `keys[i]`). `timeout_ms` < 0: the client's
 * default timeout for each GET (0 is refused).
 *
 * # Safety
 * `keys` is NULL (only with `count` 0) or points to `count` `statestore_bytes`, each
 * pointing to `len` readable bytes; `result` is NULL or points to writable storage.
 */
statestore_status statestore_get_many(const struct statestore_client *client,
                                      const struct statestore_bytes *keys,
                                      size_t count,
                                      int64_t timeout_ms,
                                      struct statestore_get_many_result **result);

/**
 * `statestore_get_many()` without blocking: `callback` runs once, with every key's item.
 *
 * # Safety
 * `keys` as for `statestore_get_many()` (copied before the function returns); `callback` may
 * be called with `user_data` on a library thread.
 */
statestore_status statestore_get_many_async(const struct statestore_client *client,
                                            const struct statestore_bytes *keys,
                                            size_t count,
                                            int64_t timeout_ms,
                                            statestore_get_many_cb callback,
                                            void *user_data);

/**
 * Sets `keys[i]` to `values[i]` for each of the `count` pairs, all with `options` (NULL:
 * defaults). `*result` gets one item per pair, in their order, each with its own status;
 * free it with `statestore_set_many_result_free()`. Pipelined and checked as
 * `statestore_get_many()`: an invalid pair (an empty key, a value too large for the broker)
 * fails the call, naming it, before anything is sent.
 *
 * # Safety
 * `keys` and `values` are NULL (only with `count` 0) or point to `count` `statestore_bytes`
 * each; `options` as for `statestore_set()`; `result` is NULL or points to writable storage.
 */
statestore_status statestore_set_many(const struct statestore_client *client,
                                      const struct statestore_bytes *keys,
                                      const struct statestore_bytes *values,
                                      size_t count,
                                      const struct statestore_set_options *options,
                                      struct statestore_set_many_result **result);

/**
 * `statestore_set_many()` without blocking.
 *
 * # Safety
 * The arguments as for `statestore_set_many()` (copied before the function returns);
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_set_many_async(const struct statestore_client *client,
                                            const struct statestore_bytes *keys,
                                            const struct statestore_bytes *values,
                                            size_t count,
                                            const struct statestore_set_options *options,
                                            statestore_set_many_cb callback,
                                            void *user_data);

/**
 * Deletes each of `count` keys with `options` (NULL: defaults). `*result` gets one item per
 * key, in their order, each with its own status; free it with
 * `statestore_delete_many_result_free()`. Pipelined and checked as `statestore_get_many()`.
 *
 * # Safety
 * `keys` as for `statestore_get_many()`; `options` as for `statestore_delete()`; `result` is
 * NULL or points to writable storage.
 */
statestore_status statestore_delete_many(const struct statestore_client *client,
                                         const struct statestore_bytes *keys,
                                         size_t count,
                                         const struct statestore_delete_options *options,
                                         struct statestore_delete_many_result **result);

/**
 * `statestore_delete_many()` without blocking.
 *
 * # Safety
 * The arguments as for `statestore_delete_many()` (copied before the function returns);
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_delete_many_async(const struct statestore_client *client,
                                               const struct statestore_bytes *keys,
                                               size_t count,
                                               const struct statestore_delete_options *options,
                                               statestore_delete_many_cb callback,
                                               void *user_data);

/**
 * Frees a `statestore_get_many()` result. NULL does nothing.
 *
 * # Safety
 * `result` is NULL or a result of `statestore_get_many()`, not yet freed.
 */
void statestore_get_many_result_free(struct statestore_get_many_result *result);

/**
 * Frees a `statestore_set_many()` result. NULL does nothing.
 *
 * # Safety
 * `result` is NULL or a result of `statestore_set_many()`, not yet freed.
 */
void statestore_set_many_result_free(struct statestore_set_many_result *result);

/**
 * Frees a `statestore_delete_many()` result. NULL does nothing.
 *
 * # Safety
 * `result` is NULL or a result of `statestore_delete_many()`, not yet freed.
 */
void statestore_delete_many_result_free(struct statestore_delete_many_result *result);

/**
 * Connects to the broker with `options` (not consumed: free it when convenient) and waits
 * until the connection is up or the options' default timeout passes. On success `*client`
 * is a new client (free it with `statestore_client_free()`); on failure it is NULL.
 *
 * # Safety
 * `client` is NULL or points to writable storage.
 */
statestore_status statestore_connect(const struct statestore_options *options,
                                     struct statestore_client **client);

/**
 * Connects with a connection URL, `mqtt://[user[:password]@]host[:port][?option=value&...]`
 * or `mqtts://...` (TLS; port 1883 or 8883 by default), and waits as `statestore_connect()`
 * does. Query options are the names `statestore_options_set()` takes (`?client_id=app&`
 * `keep_alive=30s&ca_file=/etc/ca.pem`); user and password are percent-decoded. `options`
 * may be NULL; if not, its callback mode and every option set on it with a setter apply on
 * top of the URL's (so they win); settings it got from `statestore_options_from_env()` do
 * not. It is not consumed. A NULL or malformed URL fails with
 * `STATESTORE_ERR_INVALID_ARGUMENT` naming the part at fault (scheme, host, port,
 * percent-encoding, an unknown option, a bad value); the message shows the URL with its
 * password as `***`.
 *
 * # Safety
 * `url` is NULL or a NUL-terminated string; `client` is NULL or points to writable storage.
 */
statestore_status statestore_connect_url(const char *url,
                                         const struct statestore_options *options,
                                         struct statestore_client **client);

/**
 * `statestore_connect_url()` without blocking; `callback` runs once on a library thread as
 * for `statestore_connect_async()`.
 *
 * # Safety
 * `url` is NULL or a NUL-terminated string; `callback` may be called with `user_data` on a
 * library thread.
 */
statestore_status statestore_connect_url_async(const char *url,
                                               const struct statestore_options *options,
                                               statestore_connect_cb callback,
                                               void *user_data);

/**
 * Connects without blocking; `callback` runs once on a library thread with the new client
 * or the error.
 *
 * # Safety
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_connect_async(const struct statestore_options *options,
                                           statestore_connect_cb callback,
                                           void *user_data);

/**
 * Closes the client: the connection ends, every pending call (blocking or async, of the
 * client and of its locks, leases and elections) completes with `STATESTORE_ERR_CLOSED`,
 * observations end, and close returns after every pending callback has run (called from
 * inside a callback it cannot wait for the others: they run after the current callback
 * returns). A lock, lease or election being acquired is given back first, while the
 * connection is up (its request may have been applied), so close never leaves it taken until
 * its TTL ends. Later calls fail with `STATESTORE_ERR_CLOSED`. Closing twice is fine. The
 * handle stays valid until `statestore_client_free()`.
 */
statestore_status statestore_close(struct statestore_client *client);

/**
 * Closes the client (see `statestore_close()`) if it is open, then frees the handle. NULL
 * does nothing. Locks, leases, elections and observations created from it must still be
 * freed. A free that fails changes nothing: where the client cannot be closed (inside an
 * inline or a log callback: `STATESTORE_ERR_RUNTIME`) it stays open and its handle valid.
 */
statestore_status statestore_client_free(struct statestore_client *client);

/**
 * The MQTT client id (generated when the options had none). `*client_id` is borrowed: valid
 * until the client is freed.
 *
 * # Safety
 * `client_id` is NULL or points to writable storage.
 */
statestore_status statestore_client_id(const struct statestore_client *client,
                                       const char **client_id);

/**
 * Frees a value returned by the library. NULL does nothing.
 *
 * # Safety
 * `value` is NULL or a value from this library, not yet freed.
 */
void statestore_value_free(struct statestore_value *value);

/**
 * Frees a SET result. NULL does nothing.
 *
 * # Safety
 * `result` is NULL or a SET result from this library, not yet freed.
 */
void statestore_set_result_free(struct statestore_set_result *result);

/**
 * Frees a DEL/VDEL result. NULL does nothing.
 *
 * # Safety
 * `result` is NULL or a DEL/VDEL result from this library, not yet freed.
 */
void statestore_delete_result_free(struct statestore_delete_result *result);

/**
 * Frees a key list. NULL does nothing.
 *
 * # Safety
 * `list` is NULL or a key list from this library, not yet freed.
 */
void statestore_key_list_free(struct statestore_key_list *list);

/**
 * Frees a string returned by the library (fencing tokens...). NULL does nothing.
 *
 * # Safety
 * `text` is NULL or a string this library gave to be freed here, not yet freed.
 */
void statestore_string_free(char *text);

/**
 * The SET condition called `name`, for `statestore_set_options.condition`: `"always"`,
 * `"nx"` or `"only_if_absent"`, `"nex"` or `"only_if_absent_or_equal"`, in any ASCII case
 * (the names the Python, Node and command line APIs accept, read from the library's one
 * table). An unknown name fails with `STATESTORE_ERR_INVALID_ARGUMENT`, whose message names
 * it and lists the accepted ones; so does NULL for either argument. On failure
 * `*condition` is left as it was.
 *
 * # Safety
 * `name` is NULL or NUL-terminated; `condition` is NULL or points to writable storage.
 */
statestore_status statestore_condition_from_name(const char *name, statestore_condition *condition);

/**
 * Sets `key` to `value`. `options` may be NULL (defaults). `*result` (if `result` is not
 * NULL) receives the outcome; free it with `statestore_set_result_free()`.
 *
 * # Safety
 * `key` points to `key_len` readable bytes and `value` to `value_len` (either NULL when its
 * length is 0); `options` is NULL or points to a `statestore_set_options` (its
 * `fencing_token` NULL or NUL-terminated); `result` is NULL or points to writable storage.
 */
statestore_status statestore_set(const struct statestore_client *client,
                                 const uint8_t *key,
                                 size_t key_len,
                                 const uint8_t *value,
                                 size_t value_len,
                                 const struct statestore_set_options *options,
                                 struct statestore_set_result **result);

/**
 * `statestore_set()` without blocking: `callback` runs once on a library thread.
 *
 * # Safety
 * `key`, `value` and `options` as for `statestore_set()` (read before the function returns);
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_set_async(const struct statestore_client *client,
                                       const uint8_t *key,
                                       size_t key_len,
                                       const uint8_t *value,
                                       size_t value_len,
                                       const struct statestore_set_options *options,
                                       statestore_set_cb callback,
                                       void *user_data);

/**
 * Reads `key`. `*value` is the value (free it with `statestore_value_free()`) or NULL if the
 * key does not exist (status `STATESTORE_OK` either way). `timeout_ms` < 0: the client's
 * default timeout (0 is refused).
 *
 * # Safety
 * `key` points to `key_len` readable bytes; `value` is NULL or points to writable storage.
 */
statestore_status statestore_get(const struct statestore_client *client,
                                 const uint8_t *key,
                                 size_t key_len,
                                 int64_t timeout_ms,
                                 struct statestore_value **value);

/**
 * `statestore_get()` without blocking: `callback` runs once on a library thread.
 *
 * # Safety
 * `key` as for `statestore_get()`; `callback` may be called with `user_data` on a library
 * thread.
 */
statestore_status statestore_get_async(const struct statestore_client *client,
                                       const uint8_t *key,
                                       size_t key_len,
                                       int64_t timeout_ms,
                                       statestore_get_cb callback,
                                       void *user_data);

/**
 * Deletes `key` (DEL). `options` may be NULL; `*result` (if `result` is not NULL) receives
 * the outcome (free with `statestore_delete_result_free()`).
 *
 * # Safety
 * `key` points to `key_len` readable bytes; `options` is NULL or points to a
 * `statestore_delete_options` (its `fencing_token` NULL or NUL-terminated); `result` is NULL
 * or points to writable storage.
 */
statestore_status statestore_delete(const struct statestore_client *client,
                                    const uint8_t *key,
                                    size_t key_len,
                                    const struct statestore_delete_options *options,
                                    struct statestore_delete_result **result);

/**
 * Deletes `key` only if it holds `value` (VDEL); otherwise the outcome is
 * `STATESTORE_VALUE_MISMATCH`.
 *
 * # Safety
 * As `statestore_delete()`, and `value` points to `value_len` readable bytes (NULL when
 * `value_len` is 0).
 */
statestore_status statestore_vdel(const struct statestore_client *client,
                                  const uint8_t *key,
                                  size_t key_len,
                                  const uint8_t *value,
                                  size_t value_len,
                                  const struct statestore_delete_options *options,
                                  struct statestore_delete_result **result);

/**
 * `statestore_delete()` without blocking.
 *
 * # Safety
 * `key` and `options` as for `statestore_delete()`; `callback` may be called with
 * `user_data` on a library thread.
 */
statestore_status statestore_delete_async(const struct statestore_client *client,
                                          const uint8_t *key,
                                          size_t key_len,
                                          const struct statestore_delete_options *options,
                                          statestore_delete_cb callback,
                                          void *user_data);

/**
 * `statestore_vdel()` without blocking.
 *
 * # Safety
 * `key`, `value` and `options` as for `statestore_vdel()`; `callback` may be called with
 * `user_data` on a library thread.
 */
statestore_status statestore_vdel_async(const struct statestore_client *client,
                                        const uint8_t *key,
                                        size_t key_len,
                                        const uint8_t *value,
                                        size_t value_len,
                                        const struct statestore_delete_options *options,
                                        statestore_delete_cb callback,
                                        void *user_data);

/**
 * Lists the keys matching `pattern`, all pages. Patterns follow the service's dialect (the
 * Rust glob crate's `Pattern`): `*`, `?`, `[abc]`, `[a-z]`, `[!0-9]` negates (`[^...]` does
 * not), `[*]` matches a literal `*`; no backslash escape. Free `*keys` with
 * `statestore_key_list_free()`.
 *
 * # Safety
 * `pattern` points to `pattern_len` readable bytes; `keys` is NULL or points to writable
 * storage.
 */
statestore_status statestore_keys(const struct statestore_client *client,
                                  const uint8_t *pattern,
                                  size_t pattern_len,
                                  struct statestore_key_list **keys);

/**
 * `statestore_keys()` without blocking.
 *
 * # Safety
 * `pattern` as for `statestore_keys()`; `callback` may be called with `user_data` on a
 * library thread.
 */
statestore_status statestore_keys_async(const struct statestore_client *client,
                                        const uint8_t *pattern,
                                        size_t pattern_len,
                                        statestore_keys_cb callback,
                                        void *user_data);

/**
 * The file descriptor that is readable while `_async` completions of `client` wait to be
 * run by `statestore_dispatch()`: watch it for reading in poll, epoll, select, libuv's
 * `uv_poll_t` or any loop of your own. The client must have been connected with
 * `STATESTORE_CALLBACKS_LOOP` (`STATESTORE_ERR_INVALID_ARGUMENT` otherwise). The
 * descriptor belongs to the client, stays the same for its life and is closed by
 * `statestore_client_free()`: do not read, write or close it.
 *
 * # Safety
 * `fd` is NULL or points to writable storage.
 */
statestore_status statestore_completion_fd(const struct statestore_client *client, int *fd);

/**
 * Runs, on the calling thread, every `_async` completion of `client` that is ready, in the
 * order the calls completed, and writes how many ran to `ran` (may be NULL). Completions
 * that arrive meanwhile wait for the next call (the descriptor is readable again then). Call
 * it when `statestore_completion_fd()` is readable; a call with nothing ready returns at once
 * with 0. The client must have been connected with `STATESTORE_CALLBACKS_LOOP`; it may not be
 * called from inside a callback of this library (`STATESTORE_ERR_RUNTIME`).
 *
 * # Safety
 * `ran` is NULL or points to writable storage.
 */
statestore_status statestore_dispatch(const struct statestore_client *client, size_t *ran);

/**
 * A lock on the key `name` whose holdings last `ttl_ms` (renewed automatically while held).
 *
 * # Safety
 * `name` points to `name_len` readable bytes; `lock` is NULL or points to writable storage.
 */
statestore_status statestore_lock_new(const struct statestore_client *client,
                                      const uint8_t *name,
                                      size_t name_len,
                                      uint64_t ttl_ms,
                                      struct statestore_lock **lock);

/**
 * Whether guards renew the lock automatically (default: yes). Without renewal a holding
 * ends after its TTL.
 */
statestore_status statestore_lock_set_auto_renew(const struct statestore_lock *lock,
                                                 bool auto_renew);

/**
 * Frees a lock. NULL does nothing. Guards taken from it stay valid.
 */
statestore_status statestore_lock_free(struct statestore_lock *lock);

/**
 * Acquires the lock, waiting up to `timeout_ms` (< 0: no limit; 0: one attempt) while
 * another holder has it: `STATESTORE_ERR_TIMEOUT` if it did not come free in time. On
 * success `*guard` is the holding (free it with `statestore_lock_guard_free()`).
 *
 * # Safety
 * `guard` is NULL or points to writable storage.
 */
statestore_status statestore_lock_acquire(const struct statestore_lock *lock,
                                          int64_t timeout_ms,
                                          struct statestore_lock_guard **guard);

/**
 * One attempt: `*guard` is the holding, or NULL if another holder has the lock (status OK).
 *
 * # Safety
 * `guard` is NULL or points to writable storage.
 */
statestore_status statestore_lock_try_acquire(const struct statestore_lock *lock,
                                              struct statestore_lock_guard **guard);

/**
 * `statestore_lock_acquire()` without blocking: `callback` runs once with the guard (which
 * it then owns) or the error.
 *
 * # Safety
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_lock_acquire_async(const struct statestore_lock *lock,
                                                int64_t timeout_ms,
                                                statestore_guard_cb callback,
                                                void *user_data);

/**
 * Copies `len` bytes at `data` into `buffer` as the value to write (NULL allowed when `len`
 * is 0). Call it from an update function only.
 *
 * # Safety
 * `data` points to `len` readable bytes (NULL when `len` is 0).
 */
statestore_status statestore_buffer_set(struct statestore_buffer *buffer,
                                        const uint8_t *data,
                                        size_t len);

/**
 * Updates `key` under the lock: acquires it (waiting up to `timeout_ms`, < 0: no limit),
 * reads `key`, calls `update`, writes its result with the lock's fencing token (or deletes,
 * or writes nothing), and releases the lock. Every writer of `key` must go through the
 * lock. `key` may not be the lock's own key. If the lock is lost before the write, nothing
 * is written and the call fails with `STATESTORE_ERR_NOT_HELD`. `*written` (if `written`
 * is not NULL) receives the value written (free with `statestore_value_free()`), NULL if
 * the key was deleted. While `update` runs, a blocking wait for the same lock from it (a
 * nested `statestore_lock_update()` or `statestore_lock_acquire()` of the same name on the
 * same client) fails at once with `STATESTORE_ERR_INVALID_ARGUMENT` instead of waiting for
 * itself.
 *
 * # Safety
 * `key` points to `key_len` readable bytes; `update` may be called with `user_data` on the
 * calling thread; `written` is NULL or points to writable storage.
 */
statestore_status statestore_lock_update(const struct statestore_lock *lock,
                                         const uint8_t *key,
                                         size_t key_len,
                                         int64_t timeout_ms,
                                         statestore_update_fn update,
                                         void *user_data,
                                         struct statestore_value **written);

/**
 * `statestore_lock_update()` without blocking. Once the lock is held and `key` read, `update`
 * runs on the library's dispatcher thread (the thread of the callbacks, one at a time: it
 * may call blocking functions of this library, and delays the other callbacks while it
 * runs); then `callback` runs exactly once, on that thread too (for a client with
 * `STATESTORE_CALLBACKS_INLINE`, where the write completed), with the outcome: the value
 * written (`STATESTORE_OK`), `STATESTORE_ERR_CANCELLED` if `update` returned
 * `STATESTORE_UPDATE_ABORT`, `STATESTORE_ERR_NOT_HELD` or a fencing error if the lock was
 * lost before the write, `STATESTORE_ERR_CLOSED` if the client closed first. Both get
 * `user_data`. `update` runs at most once, always before `callback`, and not at all when
 * the lock could not be taken (or the client closed while waiting for it).
 *
 * # Safety
 * `key` points to `key_len` readable bytes; `update` and `callback` may be called with
 * `user_data` on a library thread.
 */
statestore_status statestore_lock_update_async(const struct statestore_lock *lock,
                                               const uint8_t *key,
                                               size_t key_len,
                                               int64_t timeout_ms,
                                               statestore_update_fn update,
                                               statestore_update_cb callback,
                                               void *user_data);

/**
 * Reads who holds the lock now: `*holder` is the holder name written in the lock's key (a
 * value without version; free with `statestore_value_free()`), NULL when free.
 *
 * # Safety
 * `holder` is NULL or points to writable storage.
 */
statestore_status statestore_lock_holder(const struct statestore_lock *lock,
                                         struct statestore_value **holder);

/**
 * The fencing token of this holding: pass it in `statestore_set_options.fencing_token`
 * to write the keys the lock protects. Borrowed until the guard is freed.
 *
 * # Safety
 * `token` is NULL or points to writable storage.
 */
statestore_status statestore_lock_guard_fencing_token(const struct statestore_lock_guard *guard,
                                                      const char **token);

/**
 * Whether the lock is still held by this guard (false once released or lost).
 *
 * # Safety
 * `held` is NULL or points to writable storage.
 */
statestore_status statestore_lock_guard_is_held(const struct statestore_lock_guard *guard,
                                                bool *held);

/**
 * The loss of this holding as an observation that delivers one `STATESTORE_EVENT_LOST`
 * event (pull it with `statestore_observation_next()` or set a callback), then ends; it
 * ends without an event when the lock is released.
 *
 * # Safety
 * `observation` is NULL or points to writable storage.
 */
statestore_status statestore_lock_guard_watch_loss(const struct statestore_lock_guard *guard,
                                                   struct statestore_observation **observation);

/**
 * Releases the lock and waits for the service's answer. The guard must still be freed.
 */
statestore_status statestore_lock_guard_release(const struct statestore_lock_guard *guard);

/**
 * `statestore_lock_guard_release()` without blocking.
 *
 * # Safety
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_lock_guard_release_async(const struct statestore_lock_guard *guard,
                                                      statestore_done_cb callback,
                                                      void *user_data);

/**
 * Frees a guard, releasing the lock in the background if it is still held (release it
 * explicitly before closing the client: a background release queued at close is never
 * sent, and the lock then stays taken until its TTL passes). NULL does nothing.
 */
statestore_status statestore_lock_guard_free(struct statestore_lock_guard *guard);

/**
 * A lease on `key` for the holder name `holder` (unique per holder), renewed automatically
 * while held.
 *
 * # Safety
 * `key` points to `key_len` readable bytes and `holder` to `holder_len`; `lease` is NULL or
 * points to writable storage.
 */
statestore_status statestore_lease_new(const struct statestore_client *client,
                                       const uint8_t *key,
                                       size_t key_len,
                                       const uint8_t *holder,
                                       size_t holder_len,
                                       struct statestore_lease **lease);

/**
 * Turns automatic renewal on or off (default: on).
 */
statestore_status statestore_lease_set_auto_renew(const struct statestore_lease *lease,
                                                  bool auto_renew);

/**
 * Acquires the lease for `ttl_ms`, waiting up to `timeout_ms` (< 0: no limit; 0: one
 * attempt). `*fencing_token` (if not NULL) receives the token; free it with
 * `statestore_string_free()`.
 *
 * # Safety
 * `fencing_token` is NULL or points to writable storage.
 */
statestore_status statestore_lease_acquire(const struct statestore_lease *lease,
                                           uint64_t ttl_ms,
                                           int64_t timeout_ms,
                                           char **fencing_token);

/**
 * `statestore_lease_acquire()` without blocking.
 *
 * # Safety
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_lease_acquire_async(const struct statestore_lease *lease,
                                                 uint64_t ttl_ms,
                                                 int64_t timeout_ms,
                                                 statestore_token_cb callback,
                                                 void *user_data);

/**
 * One attempt: `*acquired` says whether the lease is now held. If it is and
 * `fencing_token` is not NULL, `*fencing_token` receives the token (free with
 * `statestore_string_free()`); if another holder has it and `holder` is not NULL,
 * `*holder` receives that holder's name when known (free with `statestore_value_free()`).
 *
 * # Safety
 * `acquired`, `fencing_token` and `holder` are NULL or point to writable storage.
 */
statestore_status statestore_lease_try_acquire(const struct statestore_lease *lease,
                                               uint64_t ttl_ms,
                                               bool *acquired,
                                               char **fencing_token,
                                               struct statestore_value **holder);

/**
 * The lease's state as this holder sees it: `*state` is a `statestore_lease_state`; when
 * held and `fencing_token` is not NULL, `*fencing_token` is the token (free with
 * `statestore_string_free()`); when lost and `loss_reason` is not NULL, `*loss_reason` is a
 * `statestore_loss_reason` (else `STATESTORE_LOSS_NONE`).
 *
 * # Safety
 * `state`, `fencing_token` and `loss_reason` are NULL or point to writable storage.
 */
statestore_status statestore_lease_get_state(const struct statestore_lease *lease,
                                             int32_t *state,
                                             char **fencing_token,
                                             int32_t *loss_reason);

/**
 * Renews the lease now (only needed without automatic renewal).
 */
statestore_status statestore_lease_renew(const struct statestore_lease *lease);

/**
 * Releases the lease (deletes the key only if it holds this holder's name).
 * `*released` (if not NULL) says whether it was held.
 *
 * # Safety
 * `released` is NULL or points to writable storage.
 */
statestore_status statestore_lease_release(const struct statestore_lease *lease, bool *released);

/**
 * `statestore_lease_release()` without blocking.
 *
 * # Safety
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_lease_release_async(const struct statestore_lease *lease,
                                                 statestore_done_cb callback,
                                                 void *user_data);

/**
 * The fencing token of the current holding, or NULL when not held. Free it with
 * `statestore_string_free()`.
 *
 * # Safety
 * `fencing_token` is NULL or points to writable storage.
 */
statestore_status statestore_lease_fencing_token(const struct statestore_lease *lease,
                                                 char **fencing_token);

/**
 * Whether the lease is held (as this holder sees it).
 *
 * # Safety
 * `held` is NULL or points to writable storage.
 */
statestore_status statestore_lease_is_held(const struct statestore_lease *lease, bool *held);

/**
 * Reads who holds the lease's key now: `*holder` is the holder's name (a value without
 * version; free with `statestore_value_free()`) or NULL if nobody holds it.
 *
 * # Safety
 * `holder` is NULL or points to writable storage.
 */
statestore_status statestore_lease_holder(const struct statestore_lease *lease,
                                          struct statestore_value **holder);

/**
 * The loss of the current holding as an observation: one `STATESTORE_EVENT_LOST` event,
 * then the end (no event if the lease is released instead).
 *
 * # Safety
 * `observation` is NULL or points to writable storage.
 */
statestore_status statestore_lease_watch_loss(const struct statestore_lease *lease,
                                              struct statestore_observation **observation);

/**
 * Frees a lease handle. A lease still held stops renewing and is released in the
 * background (call `statestore_lease_release()` first to know the outcome). NULL does
 * nothing.
 */
statestore_status statestore_lease_free(struct statestore_lease *lease);

/**
 * A candidate `candidate` (unique per candidate) in the election on key `name`;
 * leadership lasts `ttl_ms` and is renewed automatically.
 *
 * # Safety
 * `name` points to `name_len` readable bytes and `candidate` to `candidate_len`; `election`
 * is NULL or points to writable storage.
 */
statestore_status statestore_election_new(const struct statestore_client *client,
                                          const uint8_t *name,
                                          size_t name_len,
                                          const uint8_t *candidate,
                                          size_t candidate_len,
                                          uint64_t ttl_ms,
                                          struct statestore_election **election);

/**
 * Campaigns until elected, waiting up to `timeout_ms` (< 0: no limit; 0: one attempt).
 * `*fencing_token` (if not NULL) receives the leadership's token (free with
 * `statestore_string_free()`).
 *
 * # Safety
 * `fencing_token` is NULL or points to writable storage.
 */
statestore_status statestore_election_campaign(const struct statestore_election *election,
                                               int64_t timeout_ms,
                                               char **fencing_token);

/**
 * `statestore_election_campaign()` without blocking.
 *
 * # Safety
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_election_campaign_async(const struct statestore_election *election,
                                                     int64_t timeout_ms,
                                                     statestore_token_cb callback,
                                                     void *user_data);

/**
 * One attempt to become leader: as `statestore_lease_try_acquire()` (`*elected`, the
 * token, and the current leader's name when another candidate leads).
 *
 * # Safety
 * `elected`, `fencing_token` and `leader` are NULL or point to writable storage.
 */
statestore_status statestore_election_try_campaign(const struct statestore_election *election,
                                                   bool *elected,
                                                   char **fencing_token,
                                                   struct statestore_value **leader);

/**
 * Gives up leadership (or stops being a candidate).
 */
statestore_status statestore_election_resign(const struct statestore_election *election);

/**
 * `statestore_election_resign()` without blocking.
 *
 * # Safety
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_election_resign_async(const struct statestore_election *election,
                                                   statestore_done_cb callback,
                                                   void *user_data);

/**
 * Reads the current leader: `*leader` is its name (free with `statestore_value_free()`) or
 * NULL when there is none.
 *
 * # Safety
 * `leader` is NULL or points to writable storage.
 */
statestore_status statestore_election_leader(const struct statestore_election *election,
                                             struct statestore_value **leader);

/**
 * Whether this candidate is the leader (as it sees it).
 *
 * # Safety
 * `leader` is NULL or points to writable storage.
 */
statestore_status statestore_election_is_leader(const struct statestore_election *election,
                                                bool *leader);

/**
 * The fencing token of the current leadership, or NULL when not leader (free with
 * `statestore_string_free()`).
 *
 * # Safety
 * `fencing_token` is NULL or points to writable storage.
 */
statestore_status statestore_election_fencing_token(const struct statestore_election *election,
                                                    char **fencing_token);

/**
 * Observes the election's leader: `STATESTORE_EVENT_ELECTED` (with the leader's name in
 * `holder`) and `STATESTORE_EVENT_VACANT` events.
 *
 * # Safety
 * `observation` is NULL or points to writable storage.
 */
statestore_status statestore_election_observe(const struct statestore_election *election,
                                              struct statestore_observation **observation);

/**
 * The loss of the current leadership as an observation (one `STATESTORE_EVENT_LOST` event,
 * then the end; none if it resigns).
 *
 * # Safety
 * `observation` is NULL or points to writable storage.
 */
statestore_status statestore_election_watch_loss(const struct statestore_election *election,
                                                 struct statestore_observation **observation);

/**
 * Frees an election handle. A leader stops renewing and its leadership is released in the
 * background (call `statestore_election_resign()` first to know the outcome). NULL does
 * nothing.
 */
statestore_status statestore_election_free(struct statestore_election *election);

/**
 * Sends the library's log records at `level` or more severe to `callback` (NULL: stop
 * logging). Calling it again replaces the callback. Fails with `STATESTORE_ERR_RUNTIME` if
 * the process already installed another Rust `tracing` subscriber.
 *
 * # Safety
 * `callback` may be called with `user_data` on any thread, several calls at once.
 */
statestore_status statestore_set_log_callback(int32_t level,
                                              statestore_log_cb callback,
                                              void *user_data);

/**
 * The client's connection state now, in `*state` (a `statestore_connection_state_code`
 * value).
 *
 * # Safety
 * `state` is NULL or points to writable storage.
 */
statestore_status statestore_connection_state(const struct statestore_client *client,
                                              int32_t *state);

/**
 * The name of a connection state (`"connecting"`, `"connected"`, `"reconnecting"`,
 * `"gave_up"`, `"closed"`; `"none"` for `STATESTORE_CONNECTION_NONE`), or NULL for a value
 * that is none of them. Static: never free it.
 */
const char *statestore_connection_state_name(int32_t state);

/**
 * The changes of the client's connection state from now on, as an observation of
 * `STATESTORE_EVENT_CONNECTION` events, pulled with `statestore_observation_next()` or pushed
 * with `statestore_observation_set_callback()`. It ends after the CLOSED event (the client
 * closed); it does not keep the client open. Free it with `statestore_observation_free()`.
 *
 * # Safety
 * `observation` is NULL or points to writable storage.
 */
statestore_status statestore_connection_events(const struct statestore_client *client,
                                               struct statestore_observation **observation);

/**
 * Frees an event returned by `statestore_observation_next()`. NULL does nothing.
 *
 * # Safety
 * `event` is NULL or an event from this library, not yet freed.
 */
void statestore_event_free(struct statestore_event *event);

/**
 * Starts observing `key` (KEYNOTIFY) and waits for the service to confirm. Free
 * `*observation` with `statestore_observation_free()`.
 *
 * # Safety
 * `key` points to `key_len` readable bytes; `observation` is NULL or points to writable
 * storage.
 */
statestore_status statestore_observe(const struct statestore_client *client,
                                     const uint8_t *key,
                                     size_t key_len,
                                     struct statestore_observation **observation);

/**
 * `statestore_observe()` without blocking.
 *
 * # Safety
 * `key` as for `statestore_observe()`; `callback` may be called with `user_data` on a
 * library thread.
 */
statestore_status statestore_observe_async(const struct statestore_client *client,
                                           const uint8_t *key,
                                           size_t key_len,
                                           statestore_observe_cb callback,
                                           void *user_data);

/**
 * Stops every observation of `key` on this client (KEYNOTIFY STOP) and waits for the
 * service: their pull waiters get `STATESTORE_ERR_CLOSED` and their callbacks their final
 * call. The observation handles must still be freed.
 *
 * # Safety
 * `key` points to `key_len` readable bytes.
 */
statestore_status statestore_unobserve(const struct statestore_client *client,
                                       const uint8_t *key,
                                       size_t key_len);

/**
 * `statestore_unobserve()` without blocking.
 *
 * # Safety
 * `key` as for `statestore_unobserve()`; `callback` may be called with `user_data` on a
 * library thread.
 */
statestore_status statestore_unobserve_async(const struct statestore_client *client,
                                             const uint8_t *key,
                                             size_t key_len,
                                             statestore_done_cb callback,
                                             void *user_data);

/**
 * Waits up to `timeout_ms` for the next event (`timeout_ms` < 0: without limit; 0: only
 * take one already queued). On `STATESTORE_OK`, `*event` is the event (free it with
 * `statestore_event_free()`); on `STATESTORE_ERR_TIMEOUT` none came in time; on
 * `STATESTORE_ERR_CLOSED` the observation has ended (closed, unobserved, client closed,
 * or its single loss event already taken). In the callback style, events go to the
 * callback and this returns nothing new. Several threads may wait at once; each event goes
 * to one of them.
 *
 * # Safety
 * `event` is NULL or points to writable storage.
 */
statestore_status statestore_observation_next(const struct statestore_observation *observation,
                                              int64_t timeout_ms,
                                              struct statestore_event **event);

/**
 * Switches the observation to the callback style: every event (those already queued first)
 * goes to `callback` on a library thread, in order, one at a time. Setting another
 * callback replaces this one, which then gets its final NULL call. The final NULL call
 * comes when the observation ends; it may run on the thread that ends it (the one calling
 * `statestore_observation_close()`, `_free()`, `statestore_unobserve()` or
 * `statestore_close()`); it must not call functions on this observation other than
 * `statestore_observation_free()`.
 *
 * # Safety
 * `callback` may be called with `user_data` on a library thread.
 */
statestore_status statestore_observation_set_callback(const struct statestore_observation *observation,
                                                      statestore_event_cb callback,
                                                      void *user_data);

/**
 * The observed key, borrowed until the observation is freed.
 *
 * # Safety
 * `key` and `key_len` are NULL or point to writable storage.
 */
statestore_status statestore_observation_key(const struct statestore_observation *observation,
                                             const uint8_t **key,
                                             size_t *key_len);

/**
 * Ends the observation: waiters get `STATESTORE_ERR_CLOSED`, the callback its final NULL
 * call; the service is told to stop notifying once no observation of the key remains.
 * The handle stays valid until `statestore_observation_free()`.
 */
statestore_status statestore_observation_close(const struct statestore_observation *observation);

/**
 * Ends the observation (see `statestore_observation_close()`) and frees the handle. NULL
 * does nothing.
 */
statestore_status statestore_observation_free(struct statestore_observation *observation);

/**
 * Chooses where the completion callbacks of the `_async` calls of clients connected with
 * these options run: a `statestore_callback_mode` (default `STATESTORE_CALLBACKS_DISPATCHER`).
 * With `STATESTORE_CALLBACKS_INLINE` every other rule of callbacks holds (exactly one call,
 * never inside the `_async` function itself, `statestore_close()` completes pending calls and
 * waits for their callbacks), but callbacks may run on several threads at once, in any
 * order, and must not block (see `STATESTORE_CALLBACKS_INLINE`); the update function of
 * `statestore_lock_update_async()` then runs on the dispatcher thread. With
 * `STATESTORE_CALLBACKS_LOOP` they run when the program calls `statestore_dispatch()`
 * (see `STATESTORE_CALLBACKS_LOOP`). Observation callbacks and the callback of
 * `statestore_connect_async()` always run on the dispatcher thread.
 */
statestore_status statestore_options_set_callback_mode(struct statestore_options *options,
                                                       int32_t mode);

/**
 * New options: `localhost:1883`, plain TCP, a generated client id, keep-alive 60 s, session
 * expiry 3600 s, clean start, no credentials, call timeout 10 s, reconnect backoff 128 ms
 * doubling up to 60 s.
 *
 * # Safety
 * `options` is NULL or points to writable storage.
 */
statestore_status statestore_options_new(struct statestore_options **options);

/**
 * New options from the environment that Azure IoT Operations gives a pod: `AIO_BROKER_HOSTNAME`,
 * `AIO_BROKER_TCP_PORT`, `AIO_MQTT_USE_TLS`, `AIO_TLS_CA_FILE`, `AIO_SAT_FILE`,
 * `AIO_MQTT_CLIENT_ID`, ... A missing required variable or a bad value fails with
 * `STATESTORE_ERR_INVALID_ARGUMENT` naming it.
 *
 * # Safety
 * `options` is NULL or points to writable storage.
 */
statestore_status statestore_options_from_env(struct statestore_options **options);

/**
 * Frees options. NULL does nothing.
 */
statestore_status statestore_options_free(struct statestore_options *options);

/**
 * Sets any option by name from text, the way the `AIO_*` variables and config files spell
 * it: `name` is one of `host`, `port`, `client_id`, `keep_alive`, `session_expiry`,
 * `clean_start`, `tls`, `ca_file`, `cert_file`, `key_file`, `key_password_file`,
 * `username`, `password`, `password_file`, `sat_token_file`, `sat_check_interval`,
 * `default_timeout`, `reconnect_initial_delay`, `reconnect_max_delay`, `max_packet_size`, `max_in_flight`;
 * durations read `"10s"`, `"250ms"`; booleans `"true"`/`"false"`. An unknown name or a bad
 * value fails with `STATESTORE_ERR_INVALID_ARGUMENT` naming it.
 *
 * # Safety
 * `name` and `value` are NULL or NUL-terminated.
 */
statestore_status statestore_options_set(struct statestore_options *options,
                                         const char *name,
                                         const char *value);

/**
 * Sets the broker host name or address.
 *
 * # Safety
 * `host` is NULL or NUL-terminated.
 */
statestore_status statestore_options_set_host(struct statestore_options *options, const char *host);

/**
 * Sets the broker TCP port.
 */
statestore_status statestore_options_set_port(struct statestore_options *options, uint16_t port);

/**
 * Sets the MQTT client id (no `+`, `#`); generated when never set.
 *
 * # Safety
 * `client_id` is NULL or NUL-terminated.
 */
statestore_status statestore_options_set_client_id(struct statestore_options *options,
                                                   const char *client_id);

/**
 * Sets the MQTT keep-alive (5 s to 65535 s).
 */
statestore_status statestore_options_set_keep_alive_ms(struct statestore_options *options,
                                                       uint64_t keep_alive_ms);

/**
 * Sets how long the broker keeps the session after a disconnect (whole seconds count).
 */
statestore_status statestore_options_set_session_expiry_ms(struct statestore_options *options,
                                                           uint64_t session_expiry_ms);

/**
 * Whether the first connection starts a clean session.
 */
statestore_status statestore_options_set_clean_start(struct statestore_options *options,
                                                     bool clean_start);

/**
 * Turns TLS on (with the system's root certificates unless a CA file is set) or off.
 */
statestore_status statestore_options_set_tls(struct statestore_options *options, bool tls);

/**
 * Sets the PEM file of the CA certificates that validate the broker (turns TLS on).
 *
 * # Safety
 * `path` is NULL or NUL-terminated.
 */
statestore_status statestore_options_set_ca_file(struct statestore_options *options,
                                                 const char *path);

/**
 * Sets the client certificate chain (PEM) for X.509 authentication (with a key file).
 *
 * # Safety
 * `path` is NULL or NUL-terminated.
 */
statestore_status statestore_options_set_cert_file(struct statestore_options *options,
                                                   const char *path);

/**
 * Sets the private key (unencrypted PEM) of the client certificate.
 *
 * # Safety
 * `path` is NULL or NUL-terminated.
 */
statestore_status statestore_options_set_key_file(struct statestore_options *options,
                                                  const char *path);

/**
 * Sets the MQTT username.
 *
 * # Safety
 * `username` is NULL or NUL-terminated.
 */
statestore_status statestore_options_set_username(struct statestore_options *options,
                                                  const char *username);

/**
 * Sets the MQTT password (needs a username).
 *
 * # Safety
 * `password` is NULL or NUL-terminated.
 */
statestore_status statestore_options_set_password(struct statestore_options *options,
                                                  const char *password);

/**
 * Authenticates with a Kubernetes service-account token (`K8S-SAT`) read from `path`; the
 * file is watched and a new token makes the client reconnect with it.
 *
 * # Safety
 * `path` is NULL or NUL-terminated.
 */
statestore_status statestore_options_set_sat_token_file(struct statestore_options *options,
                                                        const char *path);

/**
 * Sets the timeout of calls that do not set their own, and of connecting (positive).
 */
statestore_status statestore_options_set_default_timeout_ms(struct statestore_options *options,
                                                            uint64_t timeout_ms);

/**
 * Sets the reconnect backoff: the first delay, doubling (with jitter) up to the maximum
 * (`0 < initial_ms <= max_ms`).
 */
statestore_status statestore_options_set_reconnect_backoff_ms(struct statestore_options *options,
                                                              uint64_t initial_ms,
                                                              uint64_t max_ms);

/**
 * The name of a status without its prefix: `"OK"`, `"TIMEOUT"`, `"FENCING_TOKEN_REQUIRED"`...
 * (`"UNKNOWN"` for a value that is no status). The string is static: never free it.
 */
const char *statestore_status_name(int32_t status);

/**
 * One line describing a status (static, never free it; `"unknown status"` for a value that
 * is no status).
 */
const char *statestore_status_description(int32_t status);

/**
 * The message of the calling thread's last failed call ("" if none failed yet). It names
 * the argument or says what happened and what to do. The string belongs to the library and
 * stays valid until the next failing call on this thread; copy it to keep it. Successful
 * calls do not clear it. Callbacks receive their message directly instead.
 */
const char *statestore_last_error_message(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* STATESTORE_H */
