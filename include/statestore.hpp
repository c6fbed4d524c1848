/**
 * @file statestore.hpp
 * @brief Header-only C++17 layer over statestore.h: RAII handles, exceptions, lambdas.
 *
 * @code
 * #include <statestore.hpp>
 * int main() {
 *     auto client = statestore::Client::connect(statestore::Options().host("localhost").port(1883));
 *     client.set("color", "blue");
 *     if (auto v = client.get("color")) std::cout << v->data << "\n";
 *     auto lock = client.lock("lock/color", std::chrono::seconds(5));
 *     lock.update("counter", [](std::optional<std::string_view> old) {
 *         return std::to_string(old ? std::stoi(std::string(*old)) + 1 : 1);
 *     });
 * }
 * @endcode
 *
 * Rules:
 * - Every failure throws statestore::Error (a std::runtime_error) carrying the C status
 *   (`code()`, `name()`) and the library's message.
 * - Handles (Client, Options, Observation, Lock, LockGuard, Lease, Election) are move-only
 *   and free themselves; a Client closes itself when destroyed. No raw pointer is exposed.
 * - Keys and values are std::string_view in (binary safe: NUL bytes allowed) and
 *   std::string out; absent results are std::nullopt.
 * - Async calls take a lambda that runs once on a library thread with a Result<T>;
 *   exceptions must not leave it (as with std::thread, std::terminate is called).
 * - Every object may be used from any thread, as in the C API.
 */
#ifndef STATESTORE_HPP
#define STATESTORE_HPP

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "statestore.h"

namespace statestore {

/** A failure of the library: the C status and its message. */
class Error : public std::runtime_error {
public:
    Error(statestore_status code, const std::string &message)
        : std::runtime_error(message), code_(code) {}
    /** The C status (`STATESTORE_ERR_*`). */
    statestore_status code() const noexcept { return code_; }
    /** The status name without prefix, e.g. "TIMEOUT". */
    const char *name() const noexcept { return statestore_status_name(code_); }

private:
    statestore_status code_;
};

/** The outcome of an async call: a value or an Error. */
template <class T>
class Result {
public:
    explicit Result(T value) : value_(std::move(value)) {}
    explicit Result(Error error) : error_(std::move(error)) {}
    /** Whether the call succeeded. */
    bool ok() const noexcept { return !error_.has_value(); }
    /** The value; throws the Error if the call failed. */
    const T &value() const {
        if (error_) throw *error_;
        return *value_;
    }
    /** The value, movable; throws the Error if the call failed. */
    T take() {
        if (error_) throw *error_;
        return std::move(*value_);
    }
    /** The error, or nullptr on success. */
    const Error *error() const noexcept { return error_ ? &*error_ : nullptr; }

private:
    std::optional<T> value_;
    std::optional<Error> error_;
};

/** The value of calls that return nothing. */
struct Done {};

/** A value and its version. */
struct Value {
    std::string data;
    std::optional<std::string> version;
};

/** The outcome of a set. */
struct SetResult {
    bool applied = false;
    std::optional<std::string> version;
};

/** When a set applies. */
enum class Condition : int32_t {
    Always = STATESTORE_SET_ALWAYS,
    IfAbsent = STATESTORE_SET_IF_ABSENT,
    IfAbsentOrEqual = STATESTORE_SET_IF_ABSENT_OR_EQUAL,
};

/** Options of a set (the defaults: always, no expiry, no token, client's timeout). */
struct SetOptions {
    Condition condition = Condition::Always;
    std::optional<std::chrono::milliseconds> expiry;  ///< none: never expires
    std::optional<std::string> fencing_token;
    bool persist = false;
    std::optional<std::chrono::milliseconds> timeout;  ///< none: the client's default
};

/** Options of a delete or vdel. */
struct DeleteOptions {
    std::optional<std::string> fencing_token;
    std::optional<std::chrono::milliseconds> timeout;  ///< none: the client's default
};

/** What a delete did. */
enum class DeleteOutcome : int32_t {
    Deleted = STATESTORE_DELETED,
    NotFound = STATESTORE_NOT_FOUND,
    ValueMismatch = STATESTORE_VALUE_MISMATCH,
};

/** The outcome of a delete or vdel. */
struct DeleteResult {
    DeleteOutcome outcome = DeleteOutcome::NotFound;
    std::optional<std::string> version;
};

/** Event kinds (see statestore_event_kind). */
enum class EventKind : int32_t {
    Set = STATESTORE_EVENT_SET,
    Delete = STATESTORE_EVENT_DELETE,
    Resynced = STATESTORE_EVENT_RESYNCED,
    Elected = STATESTORE_EVENT_ELECTED,
    Vacant = STATESTORE_EVENT_VACANT,
    Lost = STATESTORE_EVENT_LOST,
    Connection = STATESTORE_EVENT_CONNECTION,
};

/** A client's connection state (see statestore_connection_state_code). */
enum class ConnectionState : int32_t {
    None = STATESTORE_CONNECTION_NONE,
    Connecting = STATESTORE_CONNECTION_CONNECTING,
    Connected = STATESTORE_CONNECTION_CONNECTED,
    Reconnecting = STATESTORE_CONNECTION_RECONNECTING,
    GaveUp = STATESTORE_CONNECTION_GAVE_UP,
    Closed = STATESTORE_CONNECTION_CLOSED,
};

/** Why a holding was lost. */
enum class LossReason : int32_t {
    None = STATESTORE_LOSS_NONE,
    Expired = STATESTORE_LOSS_EXPIRED,
    TakenOver = STATESTORE_LOSS_TAKEN_OVER,
    ClientClosed = STATESTORE_LOSS_CLIENT_CLOSED,
};

/** One event of an Observation. */
struct Event {
    EventKind kind = EventKind::Set;
    std::string key;
    std::optional<std::string> value;
    std::optional<std::string> version;
    std::optional<std::string> holder;
    LossReason loss_reason = LossReason::None;
    std::optional<std::string> loss_message;
    /** Connection events: the new state, why, the attempt, the wait before it. */
    ConnectionState connection_state = ConnectionState::None;
    std::optional<std::string> connection_reason;
    uint32_t connection_attempt = 0;
    std::optional<std::chrono::milliseconds> connection_delay;
    bool session_lost = false;
};

namespace detail {

inline void check(statestore_status status) {
    if (status != STATESTORE_OK) throw Error(status, statestore_last_error_message());
}

inline Error error_of(statestore_status status, const char *message) {
    return Error(status, message ? message : statestore_status_description(status));
}

inline const uint8_t *bytes(std::string_view s) noexcept {
    return reinterpret_cast<const uint8_t *>(s.data());
}

inline std::optional<std::string> text(const char *s) {
    return s ? std::optional<std::string>(s) : std::nullopt;
}

inline std::string str(const uint8_t *data, size_t len) {
    return len ? std::string(reinterpret_cast<const char *>(data), len) : std::string();
}

inline uint64_t ms(std::chrono::milliseconds d) { return d.count() > 0 ? uint64_t(d.count()) : 0; }

/** A timeout for calls where negative means "no limit". */
inline int64_t limit(std::optional<std::chrono::milliseconds> d) { return d ? int64_t(d->count()) : -1; }

inline Value value_of(const statestore_value &v) { return Value{str(v.data, v.len), text(v.version)}; }

inline SetResult set_result_of(const statestore_set_result &r) { return SetResult{r.applied, text(r.version)}; }

inline DeleteResult delete_result_of(const statestore_delete_result &r) {
    return DeleteResult{DeleteOutcome(r.outcome), text(r.version)};
}

inline Event event_of(const statestore_event &e) {
    Event event;
    event.kind = EventKind(e.kind);
    event.key = str(e.key, e.key_len);
    if (e.has_value) event.value = str(e.value, e.value_len);
    event.version = text(e.version);
    if (e.has_holder) event.holder = str(e.holder, e.holder_len);
    event.loss_reason = LossReason(e.loss_reason);
    event.loss_message = text(e.loss_message);
    event.connection_state = ConnectionState(e.connection_state);
    event.connection_reason = text(e.connection_reason);
    event.connection_attempt = e.connection_attempt;
    if (e.connection_delay_ms >= 0) event.connection_delay = std::chrono::milliseconds(e.connection_delay_ms);
    event.session_lost = e.session_lost;
    return event;
}

/** Owns a C handle and frees it with `Free`. */
template <class T, statestore_status (*Free)(T *)>
struct Deleter {
    void operator()(T *p) const noexcept { (void)Free(p); }
};
template <class T, statestore_status (*Free)(T *)>
using Handle = std::unique_ptr<T, Deleter<T, Free>>;

struct StringDeleter {
    void operator()(char *s) const noexcept { statestore_string_free(s); }
};
using OwnedString = std::unique_ptr<char, StringDeleter>;

inline std::optional<std::string> take(char *s) {
    OwnedString owned(s);
    return text(owned.get());
}

/** Runs a user callback; exceptions end the process, as on a std::thread. */
template <class F>
void invoke(F &&f) noexcept {
    f();
}

/** Heap-held lambda passed as user_data to a C callback that is called exactly once. */
template <class T>
struct Once {
    std::function<void(Result<T>)> fn;
    static Once *make(std::function<void(Result<T>)> fn) {
        if (!fn) throw Error(STATESTORE_ERR_INVALID_ARGUMENT, "callback is empty");
        return new Once{std::move(fn)};
    }
    static void complete(void *user, statestore_status status, const char *message,
                         std::optional<T> value) noexcept {
        if (status == STATESTORE_OK) {
            std::unique_ptr<Once> self(static_cast<Once *>(user));
            invoke([&] { self->fn(Result<T>(std::move(*value))); });
        } else {
            fail(user, error_of(status, message));
        }
    }
    static void fail(void *user, Error error) noexcept {
        std::unique_ptr<Once> self(static_cast<Once *>(user));
        invoke([&] { self->fn(Result<T>(std::move(error))); });
    }
};

/** Starts an async call: frees the lambda if the C call refused its arguments. */
template <class T, class Start>
void start(std::function<void(Result<T>)> fn, Start &&start_call) {
    Once<T> *once = Once<T>::make(std::move(fn));
    statestore_status status = start_call(static_cast<void *>(once));
    if (status != STATESTORE_OK) {
        delete once;
        check(status);
    }
}

/** A C++ update function: the old value (std::nullopt: absent) to the new one
 * (std::nullopt: delete). */
using UpdateFn = std::function<std::optional<std::string>(std::optional<std::string_view>)>;

/** Runs an UpdateFn as a statestore_update_fn; an exception is kept and aborts the update. */
struct Updater {
    const UpdateFn *fn;
    std::exception_ptr error;
    static int32_t run(void *user, const statestore_value *old, statestore_buffer *out) noexcept {
        auto *self = static_cast<Updater *>(user);
        try {
            std::optional<std::string_view> before;
            if (old) before = std::string_view(reinterpret_cast<const char *>(old->data), old->len);
            std::optional<std::string> after = (*self->fn)(before);
            if (!after) return STATESTORE_UPDATE_DELETE;
            check(statestore_buffer_set(out, bytes(*after), after->size()));
            return STATESTORE_UPDATE_WRITE;
        } catch (...) {
            self->error = std::current_exception();
            return STATESTORE_UPDATE_ABORT;
        }
    }
};

/** An exception as an Error: a statestore::Error as it is, anything else as CANCELLED. */
inline Error error_of(std::exception_ptr error) {
    try {
        std::rethrow_exception(error);
    } catch (const Error &e) {
        return e;
    } catch (const std::exception &e) {
        return Error(STATESTORE_ERR_CANCELLED, e.what());
    } catch (...) {
        return Error(STATESTORE_ERR_CANCELLED, "the update function threw");
    }
}

}  // namespace detail

/** Connection options (see statestore_options_*). Setters chain. */
class Options {
public:
    /** Defaults: localhost:1883, plain TCP. */
    Options() {
        statestore_options *o = nullptr;
        detail::check(statestore_options_new(&o));
        handle_.reset(o);
    }
    /** From the AIO_* environment variables. */
    static Options from_env() {
        statestore_options *o = nullptr;
        detail::check(statestore_options_from_env(&o));
        return Options(o);
    }
    /** Any option by name from text (see statestore_options_set). */
    Options &set(const std::string &name, const std::string &value) {
        detail::check(statestore_options_set(handle_.get(), name.c_str(), value.c_str()));
        return *this;
    }
    Options &host(const std::string &h) { return call(statestore_options_set_host, h); }
    Options &port(uint16_t p) {
        detail::check(statestore_options_set_port(handle_.get(), p));
        return *this;
    }
    Options &client_id(const std::string &id) { return call(statestore_options_set_client_id, id); }
    Options &keep_alive(std::chrono::milliseconds d) {
        detail::check(statestore_options_set_keep_alive_ms(handle_.get(), detail::ms(d)));
        return *this;
    }
    Options &session_expiry(std::chrono::milliseconds d) {
        detail::check(statestore_options_set_session_expiry_ms(handle_.get(), detail::ms(d)));
        return *this;
    }
    Options &clean_start(bool on) {
        detail::check(statestore_options_set_clean_start(handle_.get(), on));
        return *this;
    }
    Options &tls(bool on) {
        detail::check(statestore_options_set_tls(handle_.get(), on));
        return *this;
    }
    Options &ca_file(const std::string &p) { return call(statestore_options_set_ca_file, p); }
    Options &cert_file(const std::string &p) { return call(statestore_options_set_cert_file, p); }
    Options &key_file(const std::string &p) { return call(statestore_options_set_key_file, p); }
    Options &username(const std::string &u) { return call(statestore_options_set_username, u); }
    Options &password(const std::string &p) { return call(statestore_options_set_password, p); }
    Options &sat_token_file(const std::string &p) { return call(statestore_options_set_sat_token_file, p); }
    Options &default_timeout(std::chrono::milliseconds d) {
        detail::check(statestore_options_set_default_timeout_ms(handle_.get(), detail::ms(d)));
        return *this;
    }
    Options &reconnect_backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max) {
        detail::check(statestore_options_set_reconnect_backoff_ms(handle_.get(), detail::ms(initial),
                                                                   detail::ms(max)));
        return *this;
    }
    /** Async completions on the thread that completed the call instead of the dispatcher
     * (STATESTORE_CALLBACKS_INLINE): one thread switch less per call, but the lambdas must not
     * block, call blocking methods, or close or destroy the Client. */
    Options &inline_callbacks(bool on = true) {
        detail::check(statestore_options_set_callback_mode(
            handle_.get(), on ? STATESTORE_CALLBACKS_INLINE : STATESTORE_CALLBACKS_DISPATCHER));
        return *this;
    }
    /** Async completions from your own event loop (STATESTORE_CALLBACKS_LOOP): watch
     * Client::completion_fd() for reading and call Client::dispatch() when it is readable; the
     * lambdas then run on that thread. */
    Options &loop_callbacks() {
        detail::check(statestore_options_set_callback_mode(handle_.get(), STATESTORE_CALLBACKS_LOOP));
        return *this;
    }

private:
    friend class Client;
    explicit Options(statestore_options *o) : handle_(o) {}
    Options &call(statestore_status (*f)(statestore_options *, const char *), const std::string &v) {
        detail::check(f(handle_.get(), v.c_str()));
        return *this;
    }
    detail::Handle<statestore_options, statestore_options_free> handle_;
};

/** A stream of events: pull with next(), or push with on_event(). */
class Observation {
public:
    /** The next event; std::nullopt if none came within `timeout` (no value: wait without
     * limit). Throws Error with STATESTORE_ERR_CLOSED once the observation has ended. */
    std::optional<Event> next(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
        statestore_event *e = nullptr;
        statestore_status status = statestore_observation_next(handle_.get(), detail::limit(timeout), &e);
        if (status == STATESTORE_ERR_TIMEOUT) return std::nullopt;
        detail::check(status);
        std::unique_ptr<statestore_event, void (*)(statestore_event *)> owned(e, statestore_event_free);
        return detail::event_of(*owned);
    }
    /** Push style: `fn` gets every event on a library thread, then std::nullopt once when
     * the observation ends. */
    void on_event(std::function<void(std::optional<Event>)> fn) {
        if (!fn) throw Error(STATESTORE_ERR_INVALID_ARGUMENT, "callback is empty");
        auto *held = new std::function<void(std::optional<Event>)>(std::move(fn));
        statestore_status status = statestore_observation_set_callback(handle_.get(), &trampoline, held);
        if (status != STATESTORE_OK) {
            delete held;
            detail::check(status);
        }
    }
    /** The observed key. */
    std::string key() const {
        const uint8_t *k = nullptr;
        size_t len = 0;
        detail::check(statestore_observation_key(handle_.get(), &k, &len));
        return detail::str(k, len);
    }
    /** Ends the observation (the object stays valid). */
    void close() { detail::check(statestore_observation_close(handle_.get())); }

private:
    friend class Client;
    friend class LockGuard;
    friend class Lease;
    friend class Election;
    explicit Observation(statestore_observation *o) : handle_(o) {}
    static void trampoline(void *user, const statestore_event *event) noexcept {
        auto *fn = static_cast<std::function<void(std::optional<Event>)> *>(user);
        if (event) {
            detail::invoke([&] { (*fn)(detail::event_of(*event)); });
        } else {
            detail::invoke([&] { (*fn)(std::nullopt); });
            delete fn;
        }
    }
    detail::Handle<statestore_observation, statestore_observation_free> handle_;
};

/** A held lock; destroying it releases the lock in the background. */
class LockGuard {
public:
    /** The fencing token to pass in SetOptions::fencing_token. */
    std::string fencing_token() const {
        const char *t = nullptr;
        detail::check(statestore_lock_guard_fencing_token(handle_.get(), &t));
        return t;
    }
    /** Whether the lock is still held. */
    bool held() const {
        bool h = false;
        detail::check(statestore_lock_guard_is_held(handle_.get(), &h));
        return h;
    }
    /** Releases the lock and waits for the answer. */
    void release() { detail::check(statestore_lock_guard_release(handle_.get())); }
    /** The loss of this holding: one Lost event, then the end. */
    Observation watch_loss() const {
        statestore_observation *o = nullptr;
        detail::check(statestore_lock_guard_watch_loss(handle_.get(), &o));
        return Observation(o);
    }

private:
    friend class Lock;
    explicit LockGuard(statestore_lock_guard *g) : handle_(g) {}
    detail::Handle<statestore_lock_guard, statestore_lock_guard_free> handle_;
};

/** A lock on the state store. */
class Lock {
public:
    /** Acquires, waiting up to `timeout` (no value: no limit). */
    LockGuard acquire(std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
        statestore_lock_guard *g = nullptr;
        detail::check(statestore_lock_acquire(handle_.get(), detail::limit(timeout), &g));
        return LockGuard(g);
    }
    /** One attempt: std::nullopt if another holder has the lock. */
    std::optional<LockGuard> try_acquire() const {
        statestore_lock_guard *g = nullptr;
        detail::check(statestore_lock_try_acquire(handle_.get(), &g));
        if (!g) return std::nullopt;
        return LockGuard(g);
    }
    /** Acquires without blocking; `fn` runs once on a library thread. */
    void acquire_async(std::optional<std::chrono::milliseconds> timeout,
                       std::function<void(Result<LockGuard>)> fn) const {
        detail::start<LockGuard>(std::move(fn), [&](void *user) {
            return statestore_lock_acquire_async(handle_.get(), detail::limit(timeout), &on_guard, user);
        });
    }
    /** Updates `key` under the lock: `fn` gets the current value (std::nullopt: absent) and
     * returns the new one (std::nullopt: delete the key). An exception thrown by `fn`
     * writes nothing and is rethrown here. Returns what was written (std::nullopt: the key
     * was deleted); every writer of `key` must use the lock. `fn` runs on this thread. */
    std::optional<std::string> update(std::string_view key, const detail::UpdateFn &fn,
                                      std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
        detail::Updater updater{&fn, nullptr};
        statestore_value *written = nullptr;
        statestore_status status = statestore_lock_update(handle_.get(), detail::bytes(key), key.size(),
                                                          detail::limit(timeout), &detail::Updater::run,
                                                          &updater, &written);
        std::unique_ptr<statestore_value, void (*)(statestore_value *)> owned(written, statestore_value_free);
        if (updater.error) std::rethrow_exception(updater.error);
        detail::check(status);
        if (!written) return std::nullopt;
        return detail::str(written->data, written->len);
    }
    /** update() without blocking: once the lock is held, `fn` runs on the library's
     * dispatcher thread (it may block, delaying other callbacks), then `done` runs once on
     * that thread with what was written (std::nullopt: the key was deleted) or the error
     * (STATESTORE_ERR_CLOSED if the client closes first; `fn` then may not run at all). An
     * exception thrown by `fn` writes nothing and reaches `done` as its Error: a
     * statestore::Error as thrown, anything else as STATESTORE_ERR_CANCELLED with its
     * message. */
    void update_async(std::string_view key, detail::UpdateFn fn,
                      std::function<void(Result<std::optional<std::string>>)> done,
                      std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
        if (!fn) throw Error(STATESTORE_ERR_INVALID_ARGUMENT, "update function is empty");
        detail::start<std::optional<std::string>>(std::move(done), [&](void *once) {
            auto *call = new AsyncUpdate{std::move(fn), {}, once};
            call->updater.fn = &call->fn;
            statestore_status status = statestore_lock_update_async(
                handle_.get(), detail::bytes(key), key.size(), detail::limit(timeout), &AsyncUpdate::run,
                &AsyncUpdate::complete, call);
            if (status != STATESTORE_OK) delete call;
            return status;
        });
    }
    /** Who holds the lock now (a generated holder name), read from the service. */
    std::optional<std::string> holder() const {
        statestore_value *v = nullptr;
        detail::check(statestore_lock_holder(handle_.get(), &v));
        std::unique_ptr<statestore_value, void (*)(statestore_value *)> owned(v, statestore_value_free);
        if (!v) return std::nullopt;
        return detail::str(v->data, v->len);
    }
    /** Whether guards renew automatically (default true). */
    void auto_renew(bool on) const { detail::check(statestore_lock_set_auto_renew(handle_.get(), on)); }

private:
    friend class Client;
    explicit Lock(statestore_lock *l) : handle_(l) {}
    static void on_guard(void *user, statestore_status status, const char *message,
                         statestore_lock_guard *g) noexcept {
        std::optional<LockGuard> guard;
        if (g) guard.emplace(LockGuard(g));
        detail::Once<LockGuard>::complete(user, status, message, std::move(guard));
    }
    /** The user data of an update_async(): the function, its exception, the completion. */
    struct AsyncUpdate {
        detail::UpdateFn fn;
        detail::Updater updater;
        void *once;  // a detail::Once<std::optional<std::string>>
        static int32_t run(void *user, const statestore_value *old, statestore_buffer *out) noexcept {
            return detail::Updater::run(&static_cast<AsyncUpdate *>(user)->updater, old, out);
        }
        static void complete(void *user, statestore_status status, const char *message,
                             const statestore_value *written) noexcept {
            std::unique_ptr<AsyncUpdate> self(static_cast<AsyncUpdate *>(user));
            using Once = detail::Once<std::optional<std::string>>;
            if (self->updater.error) {
                Once::fail(self->once, detail::error_of(self->updater.error));
            } else {
                std::optional<std::string> value;
                if (written) value = detail::str(written->data, written->len);
                Once::complete(self->once, status, message, std::optional<std::optional<std::string>>(value));
            }
        }
    };
    detail::Handle<statestore_lock, statestore_lock_free> handle_;
};

namespace detail {
inline void on_token(void *user, statestore_status status, const char *message, const char *token) noexcept {
    Once<std::string>::complete(user, status, message,
                                token ? std::optional<std::string>(token) : std::nullopt);
}
inline void on_done(void *user, statestore_status status, const char *message) noexcept {
    Once<Done>::complete(user, status, message, Done{});
}
}  // namespace detail

/** A lease with a holder name. */
class Lease {
public:
    /** Acquires for `ttl`, waiting up to `timeout` (no value: no limit); the fencing token. */
    std::string acquire(std::chrono::milliseconds ttl,
                        std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
        char *t = nullptr;
        detail::check(statestore_lease_acquire(handle_.get(), detail::ms(ttl), detail::limit(timeout), &t));
        return *detail::take(t);
    }
    /** acquire() without blocking; `fn` gets the fencing token. */
    void acquire_async(std::chrono::milliseconds ttl, std::optional<std::chrono::milliseconds> timeout,
                       std::function<void(Result<std::string>)> fn) const {
        detail::start<std::string>(std::move(fn), [&](void *user) {
            return statestore_lease_acquire_async(handle_.get(), detail::ms(ttl), detail::limit(timeout),
                                                  &detail::on_token, user);
        });
    }
    /** One attempt: the fencing token, or std::nullopt if another holder has it. */
    std::optional<std::string> try_acquire(std::chrono::milliseconds ttl) const {
        bool acquired = false;
        char *t = nullptr;
        detail::check(statestore_lease_try_acquire(handle_.get(), detail::ms(ttl), &acquired, &t, nullptr));
        return detail::take(t);
    }
    /** Releases; whether it was held. */
    bool release() const {
        bool released = false;
        detail::check(statestore_lease_release(handle_.get(), &released));
        return released;
    }
    /** Renews now (without automatic renewal). */
    void renew() const { detail::check(statestore_lease_renew(handle_.get())); }
    /** The fencing token while held. */
    std::optional<std::string> fencing_token() const {
        char *t = nullptr;
        detail::check(statestore_lease_fencing_token(handle_.get(), &t));
        return detail::take(t);
    }
    bool held() const {
        bool h = false;
        detail::check(statestore_lease_is_held(handle_.get(), &h));
        return h;
    }
    /** Who holds the key now, read from the service. */
    std::optional<std::string> holder() const {
        statestore_value *v = nullptr;
        detail::check(statestore_lease_holder(handle_.get(), &v));
        std::unique_ptr<statestore_value, void (*)(statestore_value *)> owned(v, statestore_value_free);
        if (!v) return std::nullopt;
        return detail::str(v->data, v->len);
    }
    void auto_renew(bool on) const { detail::check(statestore_lease_set_auto_renew(handle_.get(), on)); }
    /** The loss of the current holding: one Lost event, then the end. */
    Observation watch_loss() const {
        statestore_observation *o = nullptr;
        detail::check(statestore_lease_watch_loss(handle_.get(), &o));
        return Observation(o);
    }

private:
    friend class Client;
    explicit Lease(statestore_lease *l) : handle_(l) {}
    detail::Handle<statestore_lease, statestore_lease_free> handle_;
};

/** A candidate in a leader election. */
class Election {
public:
    /** Campaigns until elected or `timeout` (no value: no limit); the fencing token. */
    std::string campaign(std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
        char *t = nullptr;
        detail::check(statestore_election_campaign(handle_.get(), detail::limit(timeout), &t));
        return *detail::take(t);
    }
    void campaign_async(std::optional<std::chrono::milliseconds> timeout,
                        std::function<void(Result<std::string>)> fn) const {
        detail::start<std::string>(std::move(fn), [&](void *user) {
            return statestore_election_campaign_async(handle_.get(), detail::limit(timeout), &detail::on_token,
                                                      user);
        });
    }
    /** One attempt: the fencing token, or std::nullopt if another candidate leads. */
    std::optional<std::string> try_campaign() const {
        bool elected = false;
        char *t = nullptr;
        detail::check(statestore_election_try_campaign(handle_.get(), &elected, &t, nullptr));
        return detail::take(t);
    }
    void resign() const { detail::check(statestore_election_resign(handle_.get())); }
    /** The current leader's name, read from the service. */
    std::optional<std::string> leader() const {
        statestore_value *v = nullptr;
        detail::check(statestore_election_leader(handle_.get(), &v));
        std::unique_ptr<statestore_value, void (*)(statestore_value *)> owned(v, statestore_value_free);
        if (!v) return std::nullopt;
        return detail::str(v->data, v->len);
    }
    bool is_leader() const {
        bool l = false;
        detail::check(statestore_election_is_leader(handle_.get(), &l));
        return l;
    }
    std::optional<std::string> fencing_token() const {
        char *t = nullptr;
        detail::check(statestore_election_fencing_token(handle_.get(), &t));
        return detail::take(t);
    }
    /** Leadership changes: Elected (holder = leader) and Vacant events. */
    Observation observe() const {
        statestore_observation *o = nullptr;
        detail::check(statestore_election_observe(handle_.get(), &o));
        return Observation(o);
    }
    Observation watch_loss() const {
        statestore_observation *o = nullptr;
        detail::check(statestore_election_watch_loss(handle_.get(), &o));
        return Observation(o);
    }

private:
    friend class Client;
    explicit Election(statestore_election *e) : handle_(e) {}
    detail::Handle<statestore_election, statestore_election_free> handle_;
};

/** A connection to the state store. Destroying it closes it. */
class Client {
public:
    /** Connects (blocking). */
    static Client connect(const Options &options) {
        statestore_client *c = nullptr;
        detail::check(statestore_connect(options.handle_.get(), &c));
        return Client(c);
    }
    /** Connects without blocking; `fn` runs once on a library thread. */
    static void connect_async(const Options &options, std::function<void(Result<Client>)> fn) {
        detail::start<Client>(std::move(fn), [&](void *user) {
            return statestore_connect_async(options.handle_.get(), &on_client, user);
        });
    }
    /** Connects (blocking) with a connection URL, `mqtt://[user[:password]@]host[:port][?option=value&...]`
     *  or `mqtts://...`; see statestore_connect_url(). */
    static Client connect_url(const std::string &url) {
        statestore_client *c = nullptr;
        detail::check(statestore_connect_url(url.c_str(), nullptr, &c));
        return Client(c);
    }
    /** Connects with a URL; the options set on `options` win over the URL's. */
    static Client connect_url(const std::string &url, const Options &options) {
        statestore_client *c = nullptr;
        detail::check(statestore_connect_url(url.c_str(), options.handle_.get(), &c));
        return Client(c);
    }
    /** connect_url() without blocking; `fn` runs once on a library thread. */
    static void connect_url_async(const std::string &url, const Options &options,
                                  std::function<void(Result<Client>)> fn) {
        detail::start<Client>(std::move(fn), [&](void *user) {
            return statestore_connect_url_async(url.c_str(), options.handle_.get(), &on_client, user);
        });
    }

    SetResult set(std::string_view key, std::string_view value, const SetOptions &options = {}) const {
        statestore_set_options o = c_options(options);
        statestore_set_result *r = nullptr;
        detail::check(statestore_set(handle_.get(), detail::bytes(key), key.size(), detail::bytes(value),
                                     value.size(), &o, &r));
        std::unique_ptr<statestore_set_result, void (*)(statestore_set_result *)> owned(r, statestore_set_result_free);
        return detail::set_result_of(*r);
    }
    void set_async(std::string_view key, std::string_view value, const SetOptions &options,
                   std::function<void(Result<SetResult>)> fn) const {
        statestore_set_options o = c_options(options);
        detail::start<SetResult>(std::move(fn), [&](void *user) {
            return statestore_set_async(handle_.get(), detail::bytes(key), key.size(), detail::bytes(value),
                                        value.size(), &o, &on_set, user);
        });
    }
    /** The value, or std::nullopt if the key does not exist. */
    std::optional<Value> get(std::string_view key,
                             std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
        statestore_value *v = nullptr;
        detail::check(statestore_get(handle_.get(), detail::bytes(key), key.size(), detail::limit(timeout), &v));
        std::unique_ptr<statestore_value, void (*)(statestore_value *)> owned(v, statestore_value_free);
        if (!v) return std::nullopt;
        return detail::value_of(*v);
    }
    void get_async(std::string_view key, std::function<void(Result<std::optional<Value>>)> fn) const {
        detail::start<std::optional<Value>>(std::move(fn), [&](void *user) {
            return statestore_get_async(handle_.get(), detail::bytes(key), key.size(), -1, &on_get, user);
        });
    }
    DeleteResult del(std::string_view key, const DeleteOptions &options = {}) const {
        statestore_delete_options o = c_options(options);
        statestore_delete_result *r = nullptr;
        detail::check(statestore_delete(handle_.get(), detail::bytes(key), key.size(), &o, &r));
        return own(r);
    }
    DeleteResult vdel(std::string_view key, std::string_view value, const DeleteOptions &options = {}) const {
        statestore_delete_options o = c_options(options);
        statestore_delete_result *r = nullptr;
        detail::check(statestore_vdel(handle_.get(), detail::bytes(key), key.size(), detail::bytes(value),
                                      value.size(), &o, &r));
        return own(r);
    }
    void del_async(std::string_view key, std::function<void(Result<DeleteResult>)> fn) const {
        detail::start<DeleteResult>(std::move(fn), [&](void *user) {
            return statestore_delete_async(handle_.get(), detail::bytes(key), key.size(), nullptr, &on_delete, user);
        });
    }
    void vdel_async(std::string_view key, std::string_view value, std::function<void(Result<DeleteResult>)> fn) const {
        detail::start<DeleteResult>(std::move(fn), [&](void *user) {
            return statestore_vdel_async(handle_.get(), detail::bytes(key), key.size(), detail::bytes(value),
                                         value.size(), nullptr, &on_delete, user);
        });
    }
    /** The values of `keys` (client-side pipelining, up to the option max_in_flight at once): one
     *  Result per key in their order, a failed key's Error in its place; throws Error, with
     *  nothing sent, for an invalid key. */
    std::vector<Result<std::optional<Value>>> get_many(
        const std::vector<std::string_view> &keys,
        std::optional<std::chrono::milliseconds> timeout = std::nullopt) const {
        std::vector<statestore_bytes> k = bytes_of(keys);
        statestore_get_many_result *r = nullptr;
        detail::check(statestore_get_many(handle_.get(), k.data(), k.size(), detail::limit(timeout), &r));
        std::unique_ptr<statestore_get_many_result, void (*)(statestore_get_many_result *)> owned(
            r, statestore_get_many_result_free);
        return items_of<std::optional<Value>>(*r, &get_item_of);
    }
    void get_many_async(const std::vector<std::string_view> &keys,
                        std::function<void(Result<std::vector<Result<std::optional<Value>>>>)> fn) const {
        std::vector<statestore_bytes> k = bytes_of(keys);
        detail::start<std::vector<Result<std::optional<Value>>>>(std::move(fn), [&](void *user) {
            return statestore_get_many_async(handle_.get(), k.data(), k.size(), -1, &on_get_many, user);
        });
    }
    /** Sets each (key, value) pair with the same options: one Result per pair, in their order. */
    std::vector<Result<SetResult>> set_many(const std::vector<std::pair<std::string_view, std::string_view>> &items,
                                            const SetOptions &options = {}) const {
        std::vector<statestore_bytes> k, v;
        split(items, k, v);
        statestore_set_options o = c_options(options);
        statestore_set_many_result *r = nullptr;
        detail::check(statestore_set_many(handle_.get(), k.data(), v.data(), k.size(), &o, &r));
        std::unique_ptr<statestore_set_many_result, void (*)(statestore_set_many_result *)> owned(
            r, statestore_set_many_result_free);
        return items_of<SetResult>(*r, &set_item_of);
    }
    void set_many_async(const std::vector<std::pair<std::string_view, std::string_view>> &items,
                        const SetOptions &options, std::function<void(Result<std::vector<Result<SetResult>>>)> fn) const {
        std::vector<statestore_bytes> k, v;
        split(items, k, v);
        statestore_set_options o = c_options(options);
        detail::start<std::vector<Result<SetResult>>>(std::move(fn), [&](void *user) {
            return statestore_set_many_async(handle_.get(), k.data(), v.data(), k.size(), &o, &on_set_many, user);
        });
    }
    /** Deletes each of `keys` with the same options: one Result per key, in their order. */
    std::vector<Result<DeleteResult>> delete_many(const std::vector<std::string_view> &keys,
                                                  const DeleteOptions &options = {}) const {
        std::vector<statestore_bytes> k = bytes_of(keys);
        statestore_delete_options o = c_options(options);
        statestore_delete_many_result *r = nullptr;
        detail::check(statestore_delete_many(handle_.get(), k.data(), k.size(), &o, &r));
        std::unique_ptr<statestore_delete_many_result, void (*)(statestore_delete_many_result *)> owned(
            r, statestore_delete_many_result_free);
        return items_of<DeleteResult>(*r,
                                      &delete_item_of);
    }
    void delete_many_async(const std::vector<std::string_view> &keys, const DeleteOptions &options,
                           std::function<void(Result<std::vector<Result<DeleteResult>>>)> fn) const {
        std::vector<statestore_bytes> k = bytes_of(keys);
        statestore_delete_options o = c_options(options);
        detail::start<std::vector<Result<DeleteResult>>>(std::move(fn), [&](void *user) {
            return statestore_delete_many_async(handle_.get(), k.data(), k.size(), &o, &on_delete_many, user);
        });
    }
    /** The keys matching a glob pattern. */
    std::vector<std::string> keys(std::string_view pattern) const {
        statestore_key_list *l = nullptr;
        detail::check(statestore_keys(handle_.get(), detail::bytes(pattern), pattern.size(), &l));
        std::unique_ptr<statestore_key_list, void (*)(statestore_key_list *)> owned(l, statestore_key_list_free);
        return list_of(*l);
    }
    void keys_async(std::string_view pattern, std::function<void(Result<std::vector<std::string>>)> fn) const {
        detail::start<std::vector<std::string>>(std::move(fn), [&](void *user) {
            return statestore_keys_async(handle_.get(), detail::bytes(pattern), pattern.size(), &on_keys, user);
        });
    }
    Observation observe(std::string_view key) const {
        statestore_observation *o = nullptr;
        detail::check(statestore_observe(handle_.get(), detail::bytes(key), key.size(), &o));
        return Observation(o);
    }
    void unobserve(std::string_view key) const {
        detail::check(statestore_unobserve(handle_.get(), detail::bytes(key), key.size()));
    }
    Lock lock(std::string_view name, std::chrono::milliseconds ttl) const {
        statestore_lock *l = nullptr;
        detail::check(statestore_lock_new(handle_.get(), detail::bytes(name), name.size(), detail::ms(ttl), &l));
        return Lock(l);
    }
    Lease lease(std::string_view key, std::string_view holder) const {
        statestore_lease *l = nullptr;
        detail::check(statestore_lease_new(handle_.get(), detail::bytes(key), key.size(), detail::bytes(holder),
                                           holder.size(), &l));
        return Lease(l);
    }
    Election election(std::string_view name, std::string_view candidate, std::chrono::milliseconds ttl) const {
        statestore_election *e = nullptr;
        detail::check(statestore_election_new(handle_.get(), detail::bytes(name), name.size(),
                                              detail::bytes(candidate), candidate.size(), detail::ms(ttl), &e));
        return Election(e);
    }
    /** The connection's state now. */
    ConnectionState connection_state() const {
        int32_t state = 0;
        detail::check(statestore_connection_state(handle_.get(), &state));
        return ConnectionState(state);
    }
    /** The connection's changes from now on, as EventKind::Connection events; ends after
     * ConnectionState::Closed. */
    Observation connection_events() const {
        statestore_observation *o = nullptr;
        detail::check(statestore_connection_events(handle_.get(), &o));
        return Observation(o);
    }
    std::string client_id() const {
        const char *id = nullptr;
        detail::check(statestore_client_id(handle_.get(), &id));
        return id;
    }
    /** The descriptor that is readable while async completions wait for dispatch() (a client
     * connected with Options::loop_callbacks()). Owned by the client: do not close it. */
    int completion_fd() const {
        int fd = -1;
        detail::check(statestore_completion_fd(handle_.get(), &fd));
        return fd;
    }
    /** Runs the async completions that are ready on this thread; returns how many ran. */
    size_t dispatch() const {
        size_t ran = 0;
        detail::check(statestore_dispatch(handle_.get(), &ran));
        return ran;
    }
    /** Closes: pending calls complete with STATESTORE_ERR_CLOSED first. */
    void close() const { detail::check(statestore_close(handle_.get())); }

private:
    explicit Client(statestore_client *c) : handle_(c) {}
    static statestore_set_options c_options(const SetOptions &o) {
        statestore_set_options c{};
        c.condition = int32_t(o.condition);
        c.has_expiry = o.expiry.has_value();
        c.expiry_ms = o.expiry ? detail::ms(*o.expiry) : 0;
        c.fencing_token = o.fencing_token ? o.fencing_token->c_str() : nullptr;
        c.persist = o.persist;
        c.has_timeout = o.timeout.has_value();
        c.timeout_ms = o.timeout ? detail::ms(*o.timeout) : 0;
        return c;
    }
    static statestore_delete_options c_options(const DeleteOptions &o) {
        statestore_delete_options c{};
        c.fencing_token = o.fencing_token ? o.fencing_token->c_str() : nullptr;
        c.has_timeout = o.timeout.has_value();
        c.timeout_ms = o.timeout ? detail::ms(*o.timeout) : 0;
        return c;
    }
    static DeleteResult own(statestore_delete_result *r) {
        std::unique_ptr<statestore_delete_result, void (*)(statestore_delete_result *)> owned(
            r, statestore_delete_result_free);
        return detail::delete_result_of(*r);
    }
    static std::vector<statestore_bytes> bytes_of(const std::vector<std::string_view> &keys) {
        std::vector<statestore_bytes> out;
        out.reserve(keys.size());
        for (std::string_view k : keys) out.push_back(statestore_bytes{detail::bytes(k), k.size()});
        return out;
    }
    static void split(const std::vector<std::pair<std::string_view, std::string_view>> &items,
                      std::vector<statestore_bytes> &keys, std::vector<statestore_bytes> &values) {
        keys.reserve(items.size());
        values.reserve(items.size());
        for (const auto &item : items) {
            keys.push_back(statestore_bytes{detail::bytes(item.first), item.first.size()});
            values.push_back(statestore_bytes{detail::bytes(item.second), item.second.size()});
        }
    }
    static std::optional<Value> get_item_of(const statestore_get_item &i) {
        return i.found ? std::optional<Value>(detail::value_of(i.value)) : std::nullopt;
    }
    static SetResult set_item_of(const statestore_set_item &i) { return detail::set_result_of(i.result); }
    static DeleteResult delete_item_of(const statestore_delete_item &i) { return detail::delete_result_of(i.result); }
    /** Each item of a batch result as a Result: `convert` of a succeeded one, the Error of a failed one. */
    template <class T, class R, class F>
    static std::vector<Result<T>> items_of(const R &r, F convert) {
        std::vector<Result<T>> out;
        out.reserve(r.count);
        for (size_t i = 0; i < r.count; i++) {
            if (r.items[i].status == STATESTORE_OK)
                out.emplace_back(convert(r.items[i]));
            else
                out.emplace_back(detail::error_of(r.items[i].status, r.items[i].message));
        }
        return out;
    }
    template <class T, class R, class F>
    static void complete_many(void *user, statestore_status status, const char *message, const R *r, F convert) {
        using Items = std::vector<Result<T>>;
        detail::Once<Items>::complete(user, status, message,
                                      r ? std::optional<Items>(items_of<T>(*r, convert)) : std::nullopt);
    }
    static void on_get_many(void *user, statestore_status status, const char *message,
                            const statestore_get_many_result *r) noexcept {
        complete_many<std::optional<Value>>(user, status, message, r, &get_item_of);
    }
    static void on_set_many(void *user, statestore_status status, const char *message,
                            const statestore_set_many_result *r) noexcept {
        complete_many<SetResult>(user, status, message, r,
                                 &set_item_of);
    }
    static void on_delete_many(void *user, statestore_status status, const char *message,
                               const statestore_delete_many_result *r) noexcept {
        complete_many<DeleteResult>(user, status, message, r,
                                    &delete_item_of);
    }
    static std::vector<std::string> list_of(const statestore_key_list &l) {
        std::vector<std::string> keys;
        keys.reserve(l.count);
        for (size_t i = 0; i < l.count; i++) keys.push_back(detail::str(l.keys[i].data, l.keys[i].len));
        return keys;
    }
    static void on_client(void *user, statestore_status status, const char *message, statestore_client *c) noexcept {
        std::optional<Client> client;
        if (c) client.emplace(Client(c));
        detail::Once<Client>::complete(user, status, message, std::move(client));
    }
    static void on_set(void *user, statestore_status status, const char *message,
                       const statestore_set_result *r) noexcept {
        detail::Once<SetResult>::complete(user, status, message,
                                          r ? std::optional<SetResult>(detail::set_result_of(*r)) : std::nullopt);
    }
    static void on_get(void *user, statestore_status status, const char *message, const statestore_value *v) noexcept {
        std::optional<Value> value;
        if (v) value = detail::value_of(*v);
        detail::Once<std::optional<Value>>::complete(user, status, message, std::optional<std::optional<Value>>(value));
    }
    static void on_delete(void *user, statestore_status status, const char *message,
                          const statestore_delete_result *r) noexcept {
        detail::Once<DeleteResult>::complete(
            user, status, message, r ? std::optional<DeleteResult>(detail::delete_result_of(*r)) : std::nullopt);
    }
    static void on_keys(void *user, statestore_status status, const char *message,
                        const statestore_key_list *l) noexcept {
        detail::Once<std::vector<std::string>>::complete(
            user, status, message, l ? std::optional<std::vector<std::string>>(list_of(*l)) : std::nullopt);
    }
    detail::Handle<statestore_client, statestore_client_free> handle_;
};

/// statestore_condition_from_name(): the condition called `name` ("always", "nx",
/// "only_if_absent", "nex", "only_if_absent_or_equal", any ASCII case); throws Error
/// (INVALID_ARGUMENT, naming the word and the accepted ones) for any other.
inline Condition condition_from_name(const std::string &name) {
    statestore_condition condition = STATESTORE_SET_ALWAYS;
    detail::check(statestore_condition_from_name(name.c_str(), &condition));
    return Condition(condition);
}

/// statestore_shutdown(): ends the library's threads once every handle but Options is gone
/// (for a leak-checked program's last line); throws Error while any is live or in a callback.
inline void shutdown() { detail::check(statestore_shutdown()); }

}  // namespace statestore

#endif
