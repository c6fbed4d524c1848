/* The shared scenarios (tests/scenarios, format in its README) run through the C API.
 *
 *   scenarios blocking|async DIR      (STATESTORE_TEST_PORT: the statestore-server's port)
 *
 * "blocking" uses the blocking functions and pulls events with statestore_observation_next();
 * "async" uses every _async twin (waiting for its callback) and receives events through
 * statestore_observation_set_callback(). An unknown op or argument fails its scenario. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "statestore.h"

static bool async_flavour;
static const char *port;
static char run_id[16];
static cJSON *ops;

/* ---------------------------------------------------------------- small helpers */

typedef struct {
    uint8_t *data;
    size_t len;
} bytes;

static void bytes_free(bytes *b) {
    free(b->data);
    b->data = NULL;
    b->len = 0;
}

static char failure[4096];

/* Records why the step failed (the first reason wins). Returns false for `return fail(...)`. */
static bool fail(const char *fmt, ...) {
    if (failure[0]) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(failure, sizeof failure, fmt, ap);
    va_end(ap);
    return false;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int b64val(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static bool utf8_text(const uint8_t *d, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = d[i];
        size_t extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : 9;
        if (c == 0 || extra == 9 || i + extra >= n + (extra == 0)) return false;
        for (size_t k = 1; k <= extra; k++)
            if ((d[i + k] & 0xC0) != 0x80) return false;
        i += extra + 1;
    }
    return true;
}

/* Bytes as JSON: text when it is UTF-8 without NUL, else {"hex": ...}. */
static cJSON *json_bytes(const uint8_t *d, size_t n) {
    if (utf8_text(d, n)) {
        char *s = malloc(n + 1);
        memcpy(s, d, n);
        s[n] = 0;
        cJSON *j = cJSON_CreateString(s);
        free(s);
        return j;
    }
    char *hex = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) sprintf(hex + 2 * i, "%02x", d[i]);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "hex", hex);
    free(hex);
    return j;
}

/* ---------------------------------------------------------------- scenario state */

enum kind { CLIENT, STREAM, GUARD, LEASE, ELECTION };

typedef struct event_node {
    cJSON *event; /* NULL: the end */
    struct event_node *next;
} event_node;

typedef struct {
    statestore_observation *obs;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    event_node *head, *tail;
    bool ended;
} stream;

typedef struct {
    char name[64];
    enum kind kind;
    void *ptr;
} handle;

static cJSON *vars;
static handle handles[64];
static int nhandles;
static char prefix[512];
static size_t prefix_len;

/* The latest handle with this name (a name reused by a later step shadows the earlier one,
 * which stays listed so that the cleanup frees it). */
static void *find(const char *name, enum kind kind) {
    for (int i = nhandles - 1; i >= 0; i--)
        if (handles[i].kind == kind && strcmp(handles[i].name, name) == 0) return handles[i].ptr;
    return NULL;
}

static void put_handle(const char *name, enum kind kind, void *ptr) {
    if (nhandles == 64) {
        fprintf(stderr, "too many handles\n");
        exit(2);
    }
    snprintf(handles[nhandles].name, sizeof handles[nhandles].name, "%s", name);
    handles[nhandles].kind = kind;
    handles[nhandles].ptr = ptr;
    nhandles++;
}

/* ---------------------------------------------------------------- argument resolution */

/* A byte string form (text, hex, base64, repeat, var) into bytes. */
static bool resolve_bytes(const cJSON *j, bytes *out) {
    out->data = NULL;
    out->len = 0;
    if (cJSON_IsString(j)) {
        out->len = strlen(j->valuestring);
        out->data = malloc(out->len + 1);
        memcpy(out->data, j->valuestring, out->len + 1);
        return true;
    }
    if (!cJSON_IsObject(j)) return fail("not a byte string: %s", cJSON_PrintUnformatted(j));
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "hex"))) {
        size_t n = strlen(v->valuestring);
        if (n % 2) return fail("odd hex string");
        out->data = malloc(n / 2 + 1);
        for (size_t i = 0; i < n / 2; i++) {
            int a = hexval(v->valuestring[2 * i]), b = hexval(v->valuestring[2 * i + 1]);
            if (a < 0 || b < 0) return fail("bad hex string");
            out->data[i] = (uint8_t)(a * 16 + b);
        }
        out->len = n / 2;
        return true;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "base64"))) {
        const char *s = v->valuestring;
        size_t n = strlen(s);
        out->data = malloc(n + 1);
        uint32_t acc = 0;
        int bits = 0;
        for (size_t i = 0; i < n && s[i] != '='; i++) {
            int x = b64val(s[i]);
            if (x < 0) return fail("bad base64");
            acc = (acc << 6) | (uint32_t)x;
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                out->data[out->len++] = (uint8_t)(acc >> bits);
            }
        }
        return true;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "repeat"))) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "times");
        size_t unit = strlen(v->valuestring), times = (size_t)t->valuedouble;
        out->len = unit * times;
        out->data = malloc(out->len + 1);
        for (size_t i = 0; i < times; i++) memcpy(out->data + i * unit, v->valuestring, unit);
        return true;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "var"))) {
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(vars, v->valuestring);
        if (!value) return fail("variable %s is not set", v->valuestring);
        if (cJSON_IsNull(value)) return fail("variable %s is null", v->valuestring);
        return resolve_bytes(value, out);
    }
    return fail("not a byte string: %s", cJSON_PrintUnformatted(j));
}

/* A text argument (a fencing token), possibly a variable; NULL when null. */
static bool resolve_text(const cJSON *j, char **out) {
    *out = NULL;
    if (!j || cJSON_IsNull(j)) return true;
    bytes b;
    if (!resolve_bytes(j, &b)) return false;
    b.data = realloc(b.data, b.len + 1);
    b.data[b.len] = 0;
    *out = (char *)b.data;
    return true;
}

static bool is_key_arg(const char *op, const char *arg) {
    if (strcmp(arg, "pattern") == 0) return strcmp(op, "keys") == 0;
    if (strcmp(arg, "name") == 0)
        return !strcmp(op, "lock") || !strcmp(op, "try_lock") || !strcmp(op, "lock_holder") || !strcmp(op, "update");
    if (strcmp(arg, "key") == 0)
        return !strcmp(op, "set") || !strcmp(op, "get") || !strcmp(op, "delete") || !strcmp(op, "vdel") ||
               !strcmp(op, "observe") || !strcmp(op, "unobserve") || !strcmp(op, "update") ||
               !strcmp(op, "lease") || !strcmp(op, "election");
    return false;
}

/* A byte argument, with the scenario's key prefix on key-like arguments (not on empty keys). */
static bool arg_bytes(const cJSON *step, const char *op, const char *name, bytes *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(step, name);
    if (!j) return fail("missing argument %s", name);
    if (!resolve_bytes(j, out)) return false;
    if (is_key_arg(op, name) && out->len > 0) {
        uint8_t *d = malloc(prefix_len + out->len);
        memcpy(d, prefix, prefix_len);
        memcpy(d + prefix_len, out->data, out->len);
        free(out->data);
        out->data = d;
        out->len += prefix_len;
    }
    return true;
}

/* A key from a result, prefix removed. */
static cJSON *result_key(const uint8_t *d, size_t n) {
    if (n < prefix_len || memcmp(d, prefix, prefix_len) != 0) {
        fail("result key without the scenario prefix");
        return cJSON_CreateNull();
    }
    return json_bytes(d + prefix_len, n - prefix_len);
}

static bool has(const cJSON *step, const char *name) { return cJSON_GetObjectItemCaseSensitive(step, name) != NULL; }

static int64_t arg_int(const cJSON *step, const char *name, int64_t otherwise) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(step, name);
    return cJSON_IsNumber(j) ? (int64_t)j->valuedouble : otherwise;
}

static const char *arg_str(const cJSON *step, const char *name) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(step, name);
    return cJSON_IsString(j) ? j->valuestring : "";
}

/* ---------------------------------------------------------------- async waiting */

typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    bool done;
    statestore_status status;
    char message[1024];
    cJSON *result;
    void *handle;
} waiter;

static void waiter_init(waiter *w) {
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mutex, NULL);
    pthread_cond_init(&w->cond, NULL);
}

static void complete(waiter *w, statestore_status st, const char *msg, cJSON *result, void *h) {
    pthread_mutex_lock(&w->mutex);
    if (w->done) {
        fprintf(stderr, "a callback ran twice\n");
        abort();
    }
    w->status = st;
    snprintf(w->message, sizeof w->message, "%s", msg ? msg : "");
    w->result = result;
    w->handle = h;
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mutex);
}

/* Waits for the callback (the process's alarm bounds the wait), then frees the waiter's sync
 * objects; returns its status. */
static statestore_status wait_for(waiter *w, statestore_status started) {
    if (started != STATESTORE_OK) {
        /* Refused before starting: no callback comes, the message is the thread's. */
        snprintf(w->message, sizeof w->message, "%s", statestore_last_error_message());
        return started;
    }
    pthread_mutex_lock(&w->mutex);
    while (!w->done) pthread_cond_wait(&w->cond, &w->mutex);
    pthread_mutex_unlock(&w->mutex);
    pthread_mutex_destroy(&w->mutex);
    pthread_cond_destroy(&w->cond);
    return w->status;
}

static void on_connect(void *u, statestore_status st, const char *m, statestore_client *c) { complete(u, st, m, NULL, c); }
static void on_done(void *u, statestore_status st, const char *m) { complete(u, st, m, NULL, NULL); }
static void on_observe(void *u, statestore_status st, const char *m, statestore_observation *o) { complete(u, st, m, NULL, o); }
static void on_guard(void *u, statestore_status st, const char *m, statestore_lock_guard *g) { complete(u, st, m, NULL, g); }

static void on_set(void *u, statestore_status st, const char *m, const statestore_set_result *r) {
    cJSON *j = NULL;
    if (r) {
        j = cJSON_CreateObject();
        cJSON_AddBoolToObject(j, "applied", r->applied);
        cJSON_AddItemToObject(j, "version", r->version ? cJSON_CreateString(r->version) : cJSON_CreateNull());
    }
    complete(u, st, m, j, NULL);
}

static cJSON *value_json(const statestore_value *v) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "value", v ? json_bytes(v->data, v->len) : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "version", v && v->version ? cJSON_CreateString(v->version) : cJSON_CreateNull());
    return j;
}

static void on_get(void *u, statestore_status st, const char *m, const statestore_value *v) {
    complete(u, st, m, st == STATESTORE_OK ? value_json(v) : NULL, NULL);
}

static const char *outcome_name(int32_t o) {
    return o == STATESTORE_DELETED ? "deleted" : o == STATESTORE_NOT_FOUND ? "not_found" : "value_mismatch";
}

static cJSON *delete_json(const statestore_delete_result *r) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "outcome", outcome_name(r->outcome));
    cJSON_AddItemToObject(j, "version", r->version ? cJSON_CreateString(r->version) : cJSON_CreateNull());
    return j;
}

static void on_delete(void *u, statestore_status st, const char *m, const statestore_delete_result *r) {
    complete(u, st, m, r ? delete_json(r) : NULL, NULL);
}

static int cmp_keys(const void *a, const void *b) {
    const statestore_bytes *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->data, y->data, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static cJSON *keys_json(const statestore_key_list *l) {
    statestore_bytes *sorted = malloc((l->count + 1) * sizeof *sorted);
    memcpy(sorted, l->keys, l->count * sizeof *sorted);
    qsort(sorted, l->count, sizeof *sorted, cmp_keys);
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < l->count; i++) cJSON_AddItemToArray(arr, result_key(sorted[i].data, sorted[i].len));
    free(sorted);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "keys", arr);
    return j;
}

static void on_keys(void *u, statestore_status st, const char *m, const statestore_key_list *l) {
    complete(u, st, m, l ? keys_json(l) : NULL, NULL);
}

static void on_token(void *u, statestore_status st, const char *m, const char *token) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "token", token ? cJSON_CreateString(token) : cJSON_CreateNull());
    complete(u, st, m, j, NULL);
}

/* ---------------------------------------------------------------- events */

static const char *kind_name(int32_t k) {
    switch (k) {
    case STATESTORE_EVENT_SET: return "set";
    case STATESTORE_EVENT_DELETE: return "delete";
    case STATESTORE_EVENT_RESYNCED: return "resynced";
    case STATESTORE_EVENT_ELECTED: return "elected";
    case STATESTORE_EVENT_VACANT: return "vacant";
    case STATESTORE_EVENT_LOST: return "lost";
    default: return "?";
    }
}

static cJSON *event_json(const statestore_event *e) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "kind", kind_name(e->kind));
    cJSON_AddItemToObject(j, "key", result_key(e->key, e->key_len));
    cJSON_AddItemToObject(j, "value", e->has_value ? json_bytes(e->value, e->value_len) : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "version", e->version ? cJSON_CreateString(e->version) : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "holder", e->has_holder ? json_bytes(e->holder, e->holder_len) : cJSON_CreateNull());
    return j;
}

static cJSON *runner_event(const char *kind) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "kind", kind);
    cJSON_AddNullToObject(j, "key");
    cJSON_AddNullToObject(j, "value");
    cJSON_AddNullToObject(j, "version");
    cJSON_AddNullToObject(j, "holder");
    return j;
}

/* Push style: the callback queues events; next_event takes them with a deadline. The
 * callback's prefix check runs on the library thread, so it uses a copy of the prefix. */
static void on_event(void *user, const statestore_event *e) {
    stream *s = user;
    event_node *n = calloc(1, sizeof *n);
    n->event = e ? event_json(e) : NULL;
    pthread_mutex_lock(&s->mutex);
    if (s->tail) s->tail->next = n; else s->head = n;
    s->tail = n;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mutex);
}

static stream *new_stream(statestore_observation *obs) {
    stream *s = calloc(1, sizeof *s);
    s->obs = obs;
    pthread_mutex_init(&s->mutex, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (async_flavour && statestore_observation_set_callback(obs, on_event, s) != STATESTORE_OK) {
        fail("set_callback: %s", statestore_last_error_message());
    }
    return s;
}

static cJSON *next_event(stream *s, int64_t timeout_ms) {
    if (!async_flavour) {
        statestore_event *e = NULL;
        statestore_status st = statestore_observation_next(s->obs, timeout_ms, &e);
        if (st == STATESTORE_ERR_TIMEOUT) return runner_event("none");
        if (st == STATESTORE_ERR_CLOSED) return runner_event("end");
        if (st != STATESTORE_OK) {
            fail("next: %s: %s", statestore_status_name(st), statestore_last_error_message());
            return NULL;
        }
        cJSON *j = event_json(e);
        statestore_event_free(e);
        return j;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mutex);
    while (!s->head && !s->ended) {
        if (pthread_cond_timedwait(&s->cond, &s->mutex, &deadline) == ETIMEDOUT) break;
    }
    cJSON *j;
    if (s->head) {
        event_node *n = s->head;
        s->head = n->next;
        if (!s->head) s->tail = NULL;
        if (n->event) {
            j = n->event;
        } else {
            s->ended = true;
            j = runner_event("end");
        }
        free(n);
    } else {
        j = runner_event(s->ended ? "end" : "none");
    }
    pthread_mutex_unlock(&s->mutex);
    return j;
}

static void free_stream(stream *s) {
    statestore_observation_free(s->obs); /* the callback's final call comes before this returns or on its thread */
    /* Wait for the end marker in push style, so the callback never touches freed memory. */
    if (async_flavour) {
        pthread_mutex_lock(&s->mutex);
        for (;;) {
            bool end = s->ended;
            for (event_node *n = s->head; n && !end; n = n->next) end = n->event == NULL;
            if (end) break;
            pthread_cond_wait(&s->cond, &s->mutex);
        }
        pthread_mutex_unlock(&s->mutex);
    }
    while (s->head) {
        event_node *n = s->head;
        s->head = n->next;
        cJSON_Delete(n->event);
        free(n);
    }
    pthread_mutex_destroy(&s->mutex);
    pthread_cond_destroy(&s->cond);
    free(s);
}

/* ---------------------------------------------------------------- the operations */

/* Outcome of one op: status (and message) or a result object. */
typedef struct {
    statestore_status status;
    char message[1024];
    cJSON *result;
} outcome;

static void set_status(outcome *o, statestore_status st) {
    o->status = st;
    if (st != STATESTORE_OK) snprintf(o->message, sizeof o->message, "%s", statestore_last_error_message());
}

static void from_waiter(outcome *o, waiter *w, statestore_status st) {
    o->status = st;
    if (st != STATESTORE_OK) {
        snprintf(o->message, sizeof o->message, "%s", w->done ? w->message : statestore_last_error_message());
        cJSON_Delete(w->result);
        w->result = NULL;
    }
}

/* Connects with the scenario's options (names of CONNECT_OPTIONS, `_ms` durations); the
 * message of a failure goes to `message`. */
/* Connects with the step's options, or with `url` (NULL: none) and the step's options on top
 * of it (then the runner's server is not added: the URL names it). */
static statestore_status connect_client(const cJSON *options, const char *url, statestore_client **client, char *message, size_t size) {
    statestore_options *o = NULL;
    statestore_status st = statestore_options_new(&o);
    bool host = false, has_port = false;
    const cJSON *opt;
    cJSON_ArrayForEach(opt, options) {
        char setting[128], text[64];
        snprintf(setting, sizeof setting, "%s", opt->string);
        size_t n = strlen(setting);
        if (n > 3 && strcmp(setting + n - 3, "_ms") == 0) {
            setting[n - 3] = 0;
            snprintf(text, sizeof text, "%lldms", (long long)opt->valuedouble);
        } else if (cJSON_IsNumber(opt)) {
            snprintf(text, sizeof text, "%lld", (long long)opt->valuedouble);
        } else if (cJSON_IsBool(opt)) {
            snprintf(text, sizeof text, "%s", cJSON_IsTrue(opt) ? "true" : "false");
        } else if (cJSON_IsString(opt)) {
            snprintf(text, sizeof text, "%s", opt->valuestring);
        } else {
            fail("option %s: unsupported JSON type", setting);
            st = STATESTORE_ERR_INVALID_ARGUMENT;
            break;
        }
        host |= strcmp(setting, "host") == 0;
        has_port |= strcmp(setting, "port") == 0;
        if (st == STATESTORE_OK) st = statestore_options_set(o, setting, text);
    }
    if (st == STATESTORE_OK && !host && !url) st = statestore_options_set_host(o, "127.0.0.1");
    if (st == STATESTORE_OK && !has_port && !url) st = statestore_options_set(o, "port", port);
    if (st == STATESTORE_OK && async_flavour) {
        waiter w;
        waiter_init(&w);
        st = wait_for(&w, url ? statestore_connect_url_async(url, o, on_connect, &w)
                              : statestore_connect_async(o, on_connect, &w));
        *client = w.handle;
        if (st != STATESTORE_OK) snprintf(message, size, "%s", w.message);
    } else if (st == STATESTORE_OK) {
        st = url ? statestore_connect_url(url, o, client) : statestore_connect(o, client);
        if (st != STATESTORE_OK) snprintf(message, size, "%s", statestore_last_error_message());
    } else {
        snprintf(message, size, "%s", statestore_last_error_message());
    }
    statestore_options_free(o);
    return st;
}

static statestore_status lock_acquire(statestore_lock *lock, int64_t timeout, statestore_lock_guard **g) {
    if (!async_flavour) return statestore_lock_acquire(lock, timeout, g);
    waiter w;
    waiter_init(&w);
    statestore_status st = wait_for(&w, statestore_lock_acquire_async(lock, timeout, on_guard, &w));
    *g = w.handle;
    return st;
}

/* The user data of an update: the value fn_const writes, and (async) the completion. */
typedef struct {
    bytes *value;
    waiter w;
} update_call;

static int32_t fn_increment(void *u, const statestore_value *old, statestore_buffer *out) {
    (void)u;
    long n = 0;
    if (old) {
        char buf[32] = {0};
        memcpy(buf, old->data, old->len < 31 ? old->len : 31);
        n = atol(buf);
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", n + 1);
    statestore_buffer_set(out, (const uint8_t *)buf, strlen(buf));
    return STATESTORE_UPDATE_WRITE;
}

static int32_t fn_const(void *u, const statestore_value *old, statestore_buffer *out) {
    (void)old;
    bytes *b = ((update_call *)u)->value;
    statestore_buffer_set(out, b->data, b->len);
    return STATESTORE_UPDATE_WRITE;
}

static int32_t fn_delete(void *u, const statestore_value *old, statestore_buffer *out) {
    (void)u;
    (void)old;
    (void)out;
    return STATESTORE_UPDATE_DELETE;
}

static void add_text(cJSON *j, const char *name, const char *text) {
    cJSON_AddItemToObject(j, name, text ? cJSON_CreateString(text) : cJSON_CreateNull());
}

static void add_value(cJSON *j, const char *name, const statestore_value *v) {
    cJSON_AddItemToObject(j, name, v ? json_bytes(v->data, v->len) : cJSON_CreateNull());
}

static void on_updated(void *u, statestore_status st, const char *m, const statestore_value *v) {
    cJSON *j = NULL;
    if (st == STATESTORE_OK) {
        j = cJSON_CreateObject();
        add_value(j, "written", v);
    }
    complete(&((update_call *)u)->w, st, m, j, NULL);
}

static const char *reason_name(int32_t r) {
    return r == STATESTORE_LOSS_EXPIRED ? "expired" : r == STATESTORE_LOSS_TAKEN_OVER ? "taken_over"
         : r == STATESTORE_LOSS_CLIENT_CLOSED ? "client_closed" : NULL;
}

#define CLIENT_ARG(var)                                                        \
    statestore_client *var = find(arg_str(step, "client"), CLIENT);          \
    if (!var) return fail("no client named %s", arg_str(step, "client"))
#define HANDLE_ARG(var, type, argname, kind)                                   \
    type *var = find(arg_str(step, argname), kind);                            \
    if (!var) return fail("no %s named %s", argname, arg_str(step, argname))

/* The options of a set or set_many step; `*token` (to free) holds the fencing token, `*named` the
 * status of the condition's name. */
static bool set_options_of(const cJSON *step, statestore_set_options *so, char **token, statestore_status *named) {
    if (!resolve_text(cJSON_GetObjectItemCaseSensitive(step, "fencing_token"), token)) return false;
    memset(so, 0, sizeof *so);
    /* The library's own names: an unknown one fails as it does in every language. */
    const char *cond = arg_str(step, "condition");
    statestore_condition condition = STATESTORE_SET_ALWAYS;
    *named = cond[0] ? statestore_condition_from_name(cond, &condition) : STATESTORE_OK;
    so->condition = condition;
    so->has_expiry = has(step, "expiry_ms");
    so->expiry_ms = (uint64_t)arg_int(step, "expiry_ms", 0);
    so->fencing_token = *token;
    so->persist = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(step, "persist"));
    so->has_timeout = has(step, "timeout_ms");
    so->timeout_ms = (uint64_t)arg_int(step, "timeout_ms", 0);
    return true;
}

/* A list form ([...], {"numbered": P, "count": N}, {"each": E, "count": N}) as a new array to
 * delete, or NULL when `j` is none. */
static cJSON *list_form(const cJSON *j) {
    if (cJSON_IsArray(j)) return cJSON_Duplicate(j, true);
    if (!cJSON_IsObject(j)) return NULL;
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(j, "count");
    const cJSON *numbered = cJSON_GetObjectItemCaseSensitive(j, "numbered");
    const cJSON *each = cJSON_GetObjectItemCaseSensitive(j, "each");
    if (!cJSON_IsNumber(count) || (!cJSON_IsString(numbered) && !each)) return NULL;
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; i < count->valueint; i++) {
        if (each) {
            cJSON_AddItemToArray(list, cJSON_Duplicate(each, true));
        } else {
            char text[256];
            snprintf(text, sizeof text, "%s%d", numbered->valuestring, i);
            cJSON_AddItemToArray(list, cJSON_CreateString(text));
        }
    }
    return list;
}

/* The keys (a list form) of the batch argument `name`, each with the scenario's prefix (not on
 * empty keys), and, for the pairs of set_many, the values (`values` not NULL). */
typedef struct {
    statestore_bytes *keys, *values;
    bytes *owned;
    size_t count, nowned;
} batch_args;

static void batch_free(batch_args *b) {
    for (size_t i = 0; i < b->nowned; i++) bytes_free(&b->owned[i]);
    free(b->owned);
    free(b->keys);
    free(b->values);
}

static bool batch_arg(const cJSON *step, const char *name, bool pairs, batch_args *b) {
    memset(b, 0, sizeof *b);
    cJSON *list = list_form(cJSON_GetObjectItemCaseSensitive(step, name));
    if (!list) return fail("%s is not a list form", name);
    b->count = (size_t)cJSON_GetArraySize(list);
    b->keys = calloc(b->count + 1, sizeof *b->keys);
    b->values = pairs ? calloc(b->count + 1, sizeof *b->values) : NULL;
    b->owned = calloc(2 * b->count + 1, sizeof *b->owned);
    bool ok = true;
    for (size_t i = 0; ok && i < b->count; i++) {
        const cJSON *item = cJSON_GetArrayItem(list, (int)i);
        const cJSON *k = pairs && cJSON_IsArray(item) ? cJSON_GetArrayItem(item, 0) : item;
        const cJSON *v = pairs && cJSON_IsArray(item) ? cJSON_GetArrayItem(item, 1) : item;
        bytes *key = &b->owned[b->nowned++];
        ok = resolve_bytes(k, key);
        if (ok && key->len > 0) {
            uint8_t *d = malloc(prefix_len + key->len);
            memcpy(d, prefix, prefix_len);
            memcpy(d + prefix_len, key->data, key->len);
            free(key->data);
            key->data = d;
            key->len += prefix_len;
        }
        if (ok) b->keys[i] = (statestore_bytes){key->data, key->len};
        if (ok && pairs) {
            bytes *value = &b->owned[b->nowned++];
            ok = resolve_bytes(v, value);
            if (ok) b->values[i] = (statestore_bytes){value->data, value->len};
        }
    }
    cJSON_Delete(list);
    return ok;
}

/* A batch's result fields: `name` with each item's value (`value` of it; null when it
 * failed) and `errors` with each failed item's status name. */
#define BATCH_JSON(result, name, value)                                                          \
    do {                                                                                         \
        cJSON *values_ = cJSON_CreateArray(), *errors_ = cJSON_CreateArray();                    \
        for (size_t i_ = 0; i_ < (result)->count; i_++) {                                        \
            const __typeof__((result)->items[0]) *it = &(result)->items[i_];                     \
            bool ok_ = it->status == STATESTORE_OK;                                              \
            cJSON_AddItemToArray(values_, ok_ ? (value) : cJSON_CreateNull());                   \
            cJSON_AddItemToArray(errors_, ok_ ? cJSON_CreateNull()                               \
                                              : cJSON_CreateString(statestore_status_name(it->status))); \
        }                                                                                        \
        batch_json_ = cJSON_CreateObject();                                                      \
        cJSON_AddItemToObject(batch_json_, name, values_);                                       \
        cJSON_AddItemToObject(batch_json_, "errors", errors_);                                   \
    } while (0)

static cJSON *get_many_json(const statestore_get_many_result *r) {
    cJSON *batch_json_;
    BATCH_JSON(r, "values", it->found ? json_bytes(it->value.data, it->value.len) : cJSON_CreateNull());
    return batch_json_;
}
static cJSON *set_many_json(const statestore_set_many_result *r) {
    cJSON *batch_json_;
    BATCH_JSON(r, "applied", cJSON_CreateBool(it->result.applied));
    return batch_json_;
}
static cJSON *delete_many_json(const statestore_delete_many_result *r) {
    cJSON *batch_json_;
    BATCH_JSON(r, "outcomes", cJSON_CreateString(outcome_name(it->result.outcome)));
    return batch_json_;
}
static void on_get_many(void *u, statestore_status st, const char *m, const statestore_get_many_result *r) {
    complete(u, st, m, r ? get_many_json(r) : NULL, NULL);
}
static void on_set_many(void *u, statestore_status st, const char *m, const statestore_set_many_result *r) {
    complete(u, st, m, r ? set_many_json(r) : NULL, NULL);
}
static void on_delete_many(void *u, statestore_status st, const char *m, const statestore_delete_many_result *r) {
    complete(u, st, m, r ? delete_many_json(r) : NULL, NULL);
}

/* Runs a batch call: `_async` (then waits) or blocking, the result converted by `json`. */
#define RUN_BATCH(o, r, type, blocking, async, json)                                     \
    do {                                                                                 \
        if (async_flavour) {                                                             \
            waiter w;                                                                    \
            waiter_init(&w);                                                             \
            statestore_status st = wait_for(&w, async);                                  \
            from_waiter(o, &w, st);                                                      \
            if (st == STATESTORE_OK) { cJSON_Delete(r); (o)->result = w.result; }        \
        } else {                                                                         \
            type *res = NULL;                                                            \
            set_status(o, blocking);                                                     \
            if (res) { cJSON_Delete(r); (o)->result = json(res); }                       \
            type##_free(res);                                                            \
        }                                                                                \
    } while (0)

static bool run_op(const char *op, const cJSON *step, outcome *o) {
    bytes key = {0}, value = {0};
    bool ok = true;
    o->result = cJSON_CreateObject();
    cJSON *r = o->result;

    if (!strcmp(op, "connect")) {
        statestore_client *c = NULL;
        o->status = connect_client(cJSON_GetObjectItemCaseSensitive(step, "options"), NULL, &c, o->message, sizeof o->message);
        if (o->status == STATESTORE_OK) put_handle(arg_str(step, "client"), CLIENT, c);
    } else if (!strcmp(op, "connect_url")) {
        /* {server} in the URL stands for the runner's server. */
        char url[1024], server[64];
        snprintf(server, sizeof server, "127.0.0.1:%s", port);
        const char *pattern = arg_str(step, "url"), *at = strstr(pattern, "{server}");
        if (at) snprintf(url, sizeof url, "%.*s%s%s", (int)(at - pattern), pattern, server, at + strlen("{server}"));
        else snprintf(url, sizeof url, "%s", pattern);
        statestore_client *c = NULL;
        o->status = connect_client(cJSON_GetObjectItemCaseSensitive(step, "options"), url, &c, o->message, sizeof o->message);
        if (o->status == STATESTORE_OK) put_handle(arg_str(step, "client"), CLIENT, c);
        const cJSON *text;
        if (o->status != STATESTORE_OK) {
            cJSON_ArrayForEach(text, cJSON_GetObjectItemCaseSensitive(step, "message_has"))
                if (!strstr(o->message, text->valuestring)) return fail("the error message lacks \"%s\": %s", text->valuestring, o->message);
            cJSON_ArrayForEach(text, cJSON_GetObjectItemCaseSensitive(step, "message_lacks"))
                if (strstr(o->message, text->valuestring)) return fail("the error message shows \"%s\": %s", text->valuestring, o->message);
        }
    } else if (!strcmp(op, "close")) {
        CLIENT_ARG(c);
        set_status(o, statestore_close(c));
    } else if (!strcmp(op, "set")) {
        CLIENT_ARG(c);
        char *token = NULL;
        if (!arg_bytes(step, op, "key", &key) || !arg_bytes(step, op, "value", &value)) return false;
        statestore_set_options so;
        statestore_status named;
        if (!set_options_of(step, &so, &token, &named)) return false;
        if (named != STATESTORE_OK) {
            set_status(o, named);
        } else if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = wait_for(&w, statestore_set_async(c, key.data, key.len, value.data, value.len, &so, on_set, &w));
            from_waiter(o, &w, st);
            if (st == STATESTORE_OK) { cJSON_Delete(r); o->result = w.result; }
        } else {
            statestore_set_result *res = NULL;
            set_status(o, statestore_set(c, key.data, key.len, value.data, value.len, &so, &res));
            if (res) {
                cJSON_AddBoolToObject(r, "applied", res->applied);
                add_text(r, "version", res->version);
            }
            statestore_set_result_free(res);
        }
        free(token);
    } else if (!strcmp(op, "get")) {
        CLIENT_ARG(c);
        if (!arg_bytes(step, op, "key", &key)) return false;
        int64_t timeout = arg_int(step, "timeout_ms", -1);
        if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = wait_for(&w, statestore_get_async(c, key.data, key.len, timeout, on_get, &w));
            from_waiter(o, &w, st);
            if (st == STATESTORE_OK) { cJSON_Delete(r); o->result = w.result; }
        } else {
            statestore_value *v = NULL;
            set_status(o, statestore_get(c, key.data, key.len, timeout, &v));
            if (o->status == STATESTORE_OK) { cJSON_Delete(r); o->result = value_json(v); }
            statestore_value_free(v);
        }
    } else if (!strcmp(op, "get_many") || !strcmp(op, "delete_many") || !strcmp(op, "set_many")) {
        CLIENT_ARG(c);
        batch_args b;
        bool set = !strcmp(op, "set_many");
        if (!batch_arg(step, set ? "items" : "keys", set, &b)) {
            batch_free(&b);
            return false;
        }
        char *token = NULL;
        if (set) {
            statestore_set_options so;
            statestore_status named;
            if (!set_options_of(step, &so, &token, &named)) ok = false;
            else if (named != STATESTORE_OK) set_status(o, named);
            else
                RUN_BATCH(o, r, statestore_set_many_result, statestore_set_many(c, b.keys, b.values, b.count, &so, &res),
                          statestore_set_many_async(c, b.keys, b.values, b.count, &so, on_set_many, &w), set_many_json);
        } else if (!strcmp(op, "get_many")) {
            int64_t timeout = arg_int(step, "timeout_ms", -1);
            RUN_BATCH(o, r, statestore_get_many_result, statestore_get_many(c, b.keys, b.count, timeout, &res),
                      statestore_get_many_async(c, b.keys, b.count, timeout, on_get_many, &w), get_many_json);
        } else if (!resolve_text(cJSON_GetObjectItemCaseSensitive(step, "fencing_token"), &token)) {
            ok = false;
        } else {
            statestore_delete_options d = {token, has(step, "timeout_ms"), (uint64_t)arg_int(step, "timeout_ms", 0)};
            RUN_BATCH(o, r, statestore_delete_many_result, statestore_delete_many(c, b.keys, b.count, &d, &res),
                      statestore_delete_many_async(c, b.keys, b.count, &d, on_delete_many, &w), delete_many_json);
        }
        free(token);
        batch_free(&b);
    } else if (!strcmp(op, "delete") || !strcmp(op, "vdel")) {
        CLIENT_ARG(c);
        bool vdel = !strcmp(op, "vdel");
        char *token = NULL;
        if (!arg_bytes(step, op, "key", &key) || (vdel && !arg_bytes(step, op, "value", &value)) ||
            !resolve_text(cJSON_GetObjectItemCaseSensitive(step, "fencing_token"), &token))
            return false;
        statestore_delete_options d = {token, has(step, "timeout_ms"), (uint64_t)arg_int(step, "timeout_ms", 0)};
        if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = vdel ? statestore_vdel_async(c, key.data, key.len, value.data, value.len, &d, on_delete, &w)
                                        : statestore_delete_async(c, key.data, key.len, &d, on_delete, &w);
            st = wait_for(&w, st);
            from_waiter(o, &w, st);
            if (st == STATESTORE_OK) { cJSON_Delete(r); o->result = w.result; }
        } else {
            statestore_delete_result *res = NULL;
            set_status(o, vdel ? statestore_vdel(c, key.data, key.len, value.data, value.len, &d, &res)
                               : statestore_delete(c, key.data, key.len, &d, &res));
            if (res) { cJSON_Delete(r); o->result = delete_json(res); }
            statestore_delete_result_free(res);
        }
        free(token);
    } else if (!strcmp(op, "keys")) {
        CLIENT_ARG(c);
        if (!arg_bytes(step, op, "pattern", &key)) return false;
        if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = wait_for(&w, statestore_keys_async(c, key.data, key.len, on_keys, &w));
            from_waiter(o, &w, st);
            if (st == STATESTORE_OK) { cJSON_Delete(r); o->result = w.result; }
        } else {
            statestore_key_list *l = NULL;
            set_status(o, statestore_keys(c, key.data, key.len, &l));
            if (l) { cJSON_Delete(r); o->result = keys_json(l); }
            statestore_key_list_free(l);
        }
    } else if (!strcmp(op, "observe")) {
        CLIENT_ARG(c);
        if (!arg_bytes(step, op, "key", &key)) return false;
        statestore_observation *obs = NULL;
        if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = wait_for(&w, statestore_observe_async(c, key.data, key.len, on_observe, &w));
            from_waiter(o, &w, st);
            obs = w.handle;
        } else {
            set_status(o, statestore_observe(c, key.data, key.len, &obs));
        }
        if (obs) put_handle(arg_str(step, "stream"), STREAM, new_stream(obs));
    } else if (!strcmp(op, "unobserve")) {
        CLIENT_ARG(c);
        if (!arg_bytes(step, op, "key", &key)) return false;
        if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = wait_for(&w, statestore_unobserve_async(c, key.data, key.len, on_done, &w));
            from_waiter(o, &w, st);
        } else {
            set_status(o, statestore_unobserve(c, key.data, key.len));
        }
    } else if (!strcmp(op, "next_event")) {
        HANDLE_ARG(s, stream, "stream", STREAM);
        cJSON *e = next_event(s, arg_int(step, "timeout_ms", 0));
        if (!e) return false;
        cJSON_Delete(r);
        o->result = e;
    } else if (!strcmp(op, "close_stream")) {
        HANDLE_ARG(s, stream, "stream", STREAM);
        set_status(o, statestore_observation_close(s->obs));
    } else if (!strcmp(op, "lock") || !strcmp(op, "try_lock")) {
        CLIENT_ARG(c);
        if (!arg_bytes(step, op, "name", &key)) return false;
        statestore_lock *lock = NULL;
        statestore_lock_guard *g = NULL;
        statestore_status st = statestore_lock_new(c, key.data, key.len, (uint64_t)arg_int(step, "ttl_ms", 0), &lock);
        if (st == STATESTORE_OK && has(step, "auto_renew"))
            st = statestore_lock_set_auto_renew(lock, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(step, "auto_renew")));
        if (st == STATESTORE_OK) {
            st = !strcmp(op, "lock") ? lock_acquire(lock, arg_int(step, "timeout_ms", -1), &g)
                                     : statestore_lock_try_acquire(lock, &g);
        }
        set_status(o, st);
        if (st == STATESTORE_OK) {
            const char *token = NULL;
            if (g) statestore_lock_guard_fencing_token(g, &token);
            if (!strcmp(op, "try_lock")) cJSON_AddBoolToObject(r, "acquired", g != NULL);
            add_text(r, "token", token);
            if (g) put_handle(arg_str(step, "guard"), GUARD, g);
        }
        statestore_lock_free(lock);
    } else if (!strcmp(op, "unlock")) {
        HANDLE_ARG(g, statestore_lock_guard, "guard", GUARD);
        if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = wait_for(&w, statestore_lock_guard_release_async(g, on_done, &w));
            from_waiter(o, &w, st);
        } else {
            set_status(o, statestore_lock_guard_release(g));
        }
    } else if (!strcmp(op, "lock_holder")) {
        CLIENT_ARG(c);
        if (!arg_bytes(step, op, "name", &key)) return false;
        statestore_lock *lock = NULL;
        statestore_value *v = NULL;
        statestore_status st = statestore_lock_new(c, key.data, key.len, 1000, &lock);
        if (st == STATESTORE_OK) st = statestore_lock_holder(lock, &v);
        set_status(o, st);
        add_value(r, "holder", v);
        statestore_value_free(v);
        statestore_lock_free(lock);
    } else if (!strcmp(op, "update")) {
        CLIENT_ARG(c);
        bytes name = {0};
        if (!arg_bytes(step, op, "name", &name) || !arg_bytes(step, op, "key", &key)) return false;
        const char *fn = arg_str(step, "fn");
        statestore_update_fn f = !strcmp(fn, "increment") ? fn_increment : !strcmp(fn, "set_const") ? fn_const
                               : !strcmp(fn, "delete") ? fn_delete : NULL;
        if (!f) return fail("unknown update fn %s", fn);
        if (f == fn_const && !arg_bytes(step, op, "value", &value)) return false;
        statestore_lock *lock = NULL;
        statestore_value *written = NULL;
        update_call uc = {.value = &value};
        statestore_status st = statestore_lock_new(c, name.data, name.len, (uint64_t)arg_int(step, "ttl_ms", 0), &lock);
        int64_t timeout = arg_int(step, "timeout_ms", -1);
        if (st != STATESTORE_OK) {
            set_status(o, st);
            add_value(r, "written", NULL);
        } else if (async_flavour) {
            waiter_init(&uc.w);
            st = wait_for(&uc.w, statestore_lock_update_async(lock, key.data, key.len, timeout, f, on_updated, &uc));
            from_waiter(o, &uc.w, st);
            cJSON *w = uc.w.result ? cJSON_DetachItemFromObjectCaseSensitive(uc.w.result, "written") : NULL;
            cJSON_AddItemToObject(r, "written", w ? w : cJSON_CreateNull());
            cJSON_Delete(uc.w.result);
        } else {
            set_status(o, statestore_lock_update(lock, key.data, key.len, timeout, f, &uc, &written));
            add_value(r, "written", written);
        }
        statestore_value_free(written);
        statestore_lock_free(lock);
        bytes_free(&name);
    } else if (!strcmp(op, "lease")) {
        CLIENT_ARG(c);
        bytes holder = {0};
        if (!arg_bytes(step, op, "key", &key) || !arg_bytes(step, op, "holder", &holder)) return false;
        statestore_lease *l = NULL;
        statestore_status st = statestore_lease_new(c, key.data, key.len, holder.data, holder.len, &l);
        if (st == STATESTORE_OK)
            st = statestore_lease_set_auto_renew(l, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(step, "auto_renew")));
        set_status(o, st);
        if (l) put_handle(arg_str(step, "lease"), LEASE, l);
        bytes_free(&holder);
    } else if (!strcmp(op, "lease_try_acquire")) {
        HANDLE_ARG(l, statestore_lease, "lease", LEASE);
        bool acquired = false;
        char *token = NULL;
        statestore_value *holder = NULL;
        set_status(o, statestore_lease_try_acquire(l, (uint64_t)arg_int(step, "ttl_ms", 0), &acquired, &token, &holder));
        cJSON_AddBoolToObject(r, "acquired", acquired);
        add_text(r, "token", token);
        add_value(r, "holder", holder);
        statestore_string_free(token);
        statestore_value_free(holder);
    } else if (!strcmp(op, "lease_acquire")) {
        HANDLE_ARG(l, statestore_lease, "lease", LEASE);
        uint64_t ttl = (uint64_t)arg_int(step, "ttl_ms", 0);
        int64_t timeout = arg_int(step, "timeout_ms", -1);
        if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = wait_for(&w, statestore_lease_acquire_async(l, ttl, timeout, on_token, &w));
            from_waiter(o, &w, st);
            if (st == STATESTORE_OK) { cJSON_Delete(r); o->result = w.result; }
        } else {
            char *token = NULL;
            set_status(o, statestore_lease_acquire(l, ttl, timeout, &token));
            add_text(r, "token", token);
            statestore_string_free(token);
        }
    } else if (!strcmp(op, "lease_renew")) {
        HANDLE_ARG(l, statestore_lease, "lease", LEASE);
        set_status(o, statestore_lease_renew(l));
    } else if (!strcmp(op, "lease_release")) {
        HANDLE_ARG(l, statestore_lease, "lease", LEASE);
        bool released = false;
        set_status(o, statestore_lease_release(l, &released));
        cJSON_AddBoolToObject(r, "released", released);
    } else if (!strcmp(op, "lease_holder")) {
        HANDLE_ARG(l, statestore_lease, "lease", LEASE);
        statestore_value *v = NULL;
        set_status(o, statestore_lease_holder(l, &v));
        add_value(r, "holder", v);
        statestore_value_free(v);
    } else if (!strcmp(op, "lease_state")) {
        HANDLE_ARG(l, statestore_lease, "lease", LEASE);
        int32_t state = 0, reason = 0;
        char *token = NULL;
        set_status(o, statestore_lease_get_state(l, &state, &token, &reason));
        cJSON_AddStringToObject(r, "state", state == STATESTORE_LEASE_HELD ? "held" : state == STATESTORE_LEASE_LOST ? "lost" : "not_held");
        add_text(r, "token", token);
        add_text(r, "reason", reason_name(reason));
        statestore_string_free(token);
    } else if (!strcmp(op, "lease_lost")) {
        HANDLE_ARG(l, statestore_lease, "lease", LEASE);
        statestore_observation *loss = NULL;
        statestore_status st = statestore_lease_watch_loss(l, &loss);
        if (st == STATESTORE_OK) {
            stream *s = new_stream(loss);
            cJSON *e = next_event(s, arg_int(step, "timeout_ms", 0));
            const char *kind = e ? cJSON_GetObjectItemCaseSensitive(e, "kind")->valuestring : "end";
            /* Still held when the time is up ("none"), or released ("end"): no loss. */
            if (!strcmp(kind, "none") || !strcmp(kind, "end")) {
                cJSON_AddNullToObject(r, "reason");
            } else {
                int32_t state = 0, reason = 0;
                st = statestore_lease_get_state(l, &state, NULL, &reason);
                add_text(r, "reason", reason_name(reason));
            }
            cJSON_Delete(e);
            free_stream(s);
        }
        o->status = st;
    } else if (!strcmp(op, "election")) {
        CLIENT_ARG(c);
        bytes candidate = {0};
        if (!arg_bytes(step, op, "key", &key) || !arg_bytes(step, op, "candidate", &candidate)) return false;
        statestore_election *e = NULL;
        set_status(o, statestore_election_new(c, key.data, key.len, candidate.data, candidate.len,
                                              (uint64_t)arg_int(step, "ttl_ms", 0), &e));
        if (e) put_handle(arg_str(step, "election"), ELECTION, e);
        bytes_free(&candidate);
    } else if (!strcmp(op, "campaign")) {
        HANDLE_ARG(e, statestore_election, "election", ELECTION);
        int64_t timeout = arg_int(step, "timeout_ms", -1);
        if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = wait_for(&w, statestore_election_campaign_async(e, timeout, on_token, &w));
            from_waiter(o, &w, st);
            if (st == STATESTORE_OK) { cJSON_Delete(r); o->result = w.result; }
        } else {
            char *token = NULL;
            set_status(o, statestore_election_campaign(e, timeout, &token));
            add_text(r, "token", token);
            statestore_string_free(token);
        }
    } else if (!strcmp(op, "try_campaign")) {
        HANDLE_ARG(e, statestore_election, "election", ELECTION);
        bool acquired = false;
        char *token = NULL;
        statestore_value *leader = NULL;
        set_status(o, statestore_election_try_campaign(e, &acquired, &token, &leader));
        cJSON_AddBoolToObject(r, "acquired", acquired);
        add_text(r, "token", token);
        add_value(r, "holder", leader);
        statestore_string_free(token);
        statestore_value_free(leader);
    } else if (!strcmp(op, "resign")) {
        HANDLE_ARG(e, statestore_election, "election", ELECTION);
        if (async_flavour) {
            waiter w;
            waiter_init(&w);
            statestore_status st = wait_for(&w, statestore_election_resign_async(e, on_done, &w));
            from_waiter(o, &w, st);
        } else {
            set_status(o, statestore_election_resign(e));
        }
    } else if (!strcmp(op, "leader")) {
        HANDLE_ARG(e, statestore_election, "election", ELECTION);
        statestore_value *v = NULL;
        set_status(o, statestore_election_leader(e, &v));
        add_value(r, "leader", v);
        statestore_value_free(v);
    } else if (!strcmp(op, "observe_leader")) {
        HANDLE_ARG(e, statestore_election, "election", ELECTION);
        statestore_observation *obs = NULL;
        set_status(o, statestore_election_observe(e, &obs));
        if (obs) put_handle(arg_str(step, "stream"), STREAM, new_stream(obs));
    } else {
        ok = fail("unknown op %s", op);
    }
    bytes_free(&key);
    bytes_free(&value);
    return ok;
}

/* ---------------------------------------------------------------- expectations */

static bool hlc_parse(const char *s, unsigned long long *wall, unsigned long *counter, const char **node) {
    char *end;
    *wall = strtoull(s, &end, 10);
    if (*end != ':') return false;
    *counter = strtoul(end + 1, &end, 10);
    if (*end != ':') return false;
    *node = end + 1;
    return true;
}

static int hlc_cmp(const char *a, const char *b) {
    unsigned long long wa, wb;
    unsigned long ca, cb;
    const char *na, *nb;
    if (!hlc_parse(a, &wa, &ca, &na) || !hlc_parse(b, &wb, &cb, &nb)) return -2;
    if (wa != wb) return wa < wb ? -1 : 1;
    if (ca != cb) return ca < cb ? -1 : 1;
    int c = strcmp(na, nb);
    return (c > 0) - (c < 0);
}

static bool is_null(const cJSON *j) { return j == NULL || cJSON_IsNull(j); }

static bool matches(const cJSON *expected, const cJSON *actual) {
    if (cJSON_IsNull(expected)) return is_null(actual);
    if (cJSON_IsBool(expected)) return cJSON_IsBool(actual) && cJSON_IsTrue(expected) == cJSON_IsTrue(actual);
    cJSON *list = list_form(expected);
    if (list) {
        bool same = cJSON_IsArray(actual) && cJSON_GetArraySize(list) == cJSON_GetArraySize(actual);
        for (int i = 0; same && i < cJSON_GetArraySize(list); i++)
            same = matches(cJSON_GetArrayItem(list, i), cJSON_GetArrayItem(actual, i));
        cJSON_Delete(list);
        return same;
    }
    const cJSON *v;
    if (cJSON_IsObject(expected) && (v = cJSON_GetObjectItemCaseSensitive(expected, "present")))
        return cJSON_IsTrue(v) ? !is_null(actual) : is_null(actual);
    if (cJSON_IsObject(expected) && (v = cJSON_GetObjectItemCaseSensitive(expected, "newer_than"))) {
        const cJSON *base = cJSON_GetObjectItemCaseSensitive(vars, v->valuestring);
        if (!cJSON_IsString(base)) return fail("variable %s is not a version", v->valuestring);
        return cJSON_IsString(actual) && hlc_cmp(actual->valuestring, base->valuestring) == 1;
    }
    if (cJSON_IsObject(expected) && (v = cJSON_GetObjectItemCaseSensitive(expected, "var"))) {
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(vars, v->valuestring);
        if (!value) return fail("variable %s is not set", v->valuestring);
        if (cJSON_IsNull(value) || cJSON_IsBool(value)) return matches(value, actual);
        expected = value;
    }
    if (is_null(actual) || cJSON_IsBool(actual) || cJSON_IsArray(actual)) return false;
    bytes want, got;
    if (!resolve_bytes(expected, &want)) return false;
    if (!resolve_bytes(actual, &got)) {
        bytes_free(&want);
        return false;
    }
    bool same = want.len == got.len && (want.len == 0 || memcmp(want.data, got.data, want.len) == 0);
    bytes_free(&want);
    bytes_free(&got);
    return same;
}

/* ---------------------------------------------------------------- scenarios */

static bool validate(const cJSON *step, const char **op_out) {
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(step, "op");
    if (!cJSON_IsString(op)) return fail("a step without op");
    *op_out = op->valuestring;
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ops, "ops"), op->valuestring);
    if (!spec) return fail("unknown op %s", op->valuestring);
    const cJSON *required = cJSON_GetObjectItemCaseSensitive(spec, "required");
    const cJSON *optional = cJSON_GetObjectItemCaseSensitive(spec, "optional");
    const cJSON *a;
    cJSON_ArrayForEach(a, required) if (!has(step, a->valuestring)) return fail("%s: missing argument %s", op->valuestring, a->valuestring);
    const cJSON *arg;
    cJSON_ArrayForEach(arg, step) {
        const char *n = arg->string;
        if (!strcmp(n, "op") || !strcmp(n, "expect") || !strcmp(n, "save") || !strcmp(n, "comment")) continue;
        bool known = false;
        cJSON_ArrayForEach(a, required) known |= !strcmp(a->valuestring, n);
        cJSON_ArrayForEach(a, optional) known |= !strcmp(a->valuestring, n);
        if (!known) return fail("%s: unknown argument %s", op->valuestring, n);
    }
    return true;
}

static bool check_result(const char *op, const cJSON *expect, outcome *o) {
    const cJSON *want_error = cJSON_GetObjectItemCaseSensitive(expect, "error");
    if (want_error) {
        if (o->status == STATESTORE_OK) return fail("expected error %s, got success %s", want_error->valuestring, cJSON_PrintUnformatted(o->result));
        if (strcmp(statestore_status_name(o->status), want_error->valuestring) != 0)
            return fail("expected error %s, got %s (%s)", want_error->valuestring, statestore_status_name(o->status), o->message);
        return true;
    }
    if (o->status != STATESTORE_OK) return fail("expected success, got %s (%s)", statestore_status_name(o->status), o->message);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ops, "ops"), op);
    const cJSON *fields = cJSON_GetObjectItemCaseSensitive(spec, "result");
    const cJSON *f;
    cJSON_ArrayForEach(f, expect) {
        bool known = false;
        const cJSON *a;
        cJSON_ArrayForEach(a, fields) known |= !strcmp(a->valuestring, f->string);
        if (!known) return fail("%s has no result field %s", op, f->string);
        const cJSON *actual = cJSON_GetObjectItemCaseSensitive(o->result, f->string);
        if (!matches(f, actual)) {
            char *w = cJSON_PrintUnformatted(f), *g = cJSON_PrintUnformatted(o->result);
            fail("field %s: expected %s, got %s", f->string, w, g);
            free(w);
            free(g);
            return false;
        }
    }
    return true;
}

/* Frees what the scenario left: streams first (their callbacks may still run), then guards,
 * leases, elections, and the clients last. */
static void cleanup_handles(void) {
    static const enum kind order[] = {STREAM, GUARD, LEASE, ELECTION, CLIENT};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        for (int i = 0; i < nhandles; i++) {
            if (handles[i].kind != order[k]) continue;
            void *p = handles[i].ptr;
            switch (handles[i].kind) {
            case STREAM: free_stream(p); break;
            case GUARD: statestore_lock_guard_free(p); break;
            case LEASE: statestore_lease_free(p); break;
            case ELECTION: statestore_election_free(p); break;
            case CLIENT: statestore_client_free(p); break;
            }
        }
    }
    nhandles = 0;
}

static const char *current_scenario = "";
static void on_alarm(int sig) {
    (void)sig;
    char text[512];
    int n = snprintf(text, sizeof text, "scenario %s: deadline expired\n", current_scenario);
    (void)!write(2, text, (size_t)n);
    _exit(3);
}

/* Runs one scenario file; returns true if it passed. */
static bool run_scenario(const char *dir, const char *rel) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    size_t got = fread(text, 1, (size_t)n, f);
    text[got] = 0;
    fclose(f);
    cJSON *sc = cJSON_Parse(text);
    free(text);
    failure[0] = 0;
    char expected_name[1024];
    snprintf(expected_name, sizeof expected_name, "%.*s", (int)(strlen(rel) - 5), rel);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(sc, "name");
    current_scenario = expected_name;
    /* A scenario's deadline. batch/ten_thousand takes about 15 s on a quiet machine, and the
     * test command runs this beside two other groups on two cores. */
    alarm(300);
    bool passed = true;
    int index = -1;
    const char *op = "";
    const cJSON *step = NULL;
    if (!sc || !cJSON_IsString(name) || strcmp(name->valuestring, expected_name) != 0) {
        passed = fail("name does not match the file path (or the file is not JSON)");
    } else {
        prefix_len = (size_t)snprintf(prefix, sizeof prefix, "scn-%s/%s/", run_id, expected_name);
        vars = cJSON_CreateObject();
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(sc, "clients")) {
            statestore_client *client = NULL;
            char message[1024] = "";
            if (connect_client(NULL, NULL, &client, message, sizeof message) != STATESTORE_OK) {
                passed = fail("connecting client %s: %s", c->valuestring, message);
                break;
            }
            put_handle(c->valuestring, CLIENT, client);
        }
        cJSON_ArrayForEach(step, cJSON_GetObjectItemCaseSensitive(sc, "steps")) {
            if (!passed) break;
            index++;
            op = "";
            if (!validate(step, &op)) { passed = false; break; }
            outcome o = {0};
            if (!run_op(op, step, &o) || failure[0]) {
                cJSON_Delete(o.result);
                passed = false;
                if (!failure[0]) fail("runner error");
                break;
            }
            const cJSON *expect = cJSON_GetObjectItemCaseSensitive(step, "expect");
            if (!check_result(op, expect, &o)) {
                cJSON_Delete(o.result);
                passed = false;
                break;
            }
            const cJSON *save;
            cJSON_ArrayForEach(save, cJSON_GetObjectItemCaseSensitive(step, "save")) {
                const cJSON *field = cJSON_GetObjectItemCaseSensitive(o.result, save->valuestring);
                cJSON_DeleteItemFromObjectCaseSensitive(vars, save->string);
                cJSON_AddItemToObject(vars, save->string, field ? cJSON_Duplicate(field, true) : cJSON_CreateNull());
            }
            cJSON_Delete(o.result);
        }
        cleanup_handles();
        cJSON_Delete(vars);
        vars = NULL;
    }
    alarm(0);
    if (!passed) {
        const cJSON *comment = step ? cJSON_GetObjectItemCaseSensitive(step, "comment") : NULL;
        printf("FAIL %s step %d (%s)%s%s: %s\n", expected_name, index, op, comment ? " " : "",
               comment ? comment->valuestring : "", failure);
    } else {
        printf("ok   %s\n", expected_name);
    }
    cJSON_Delete(sc);
    return passed;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Collects every *.json under dir (relative paths), except ops.json. */
static void collect(const char *dir, const char *rel, char ***files, size_t *n) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[2048], full[4096];
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", dir, sub);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            collect(dir, sub, files, n);
        } else {
            size_t len = strlen(sub);
            if (len > 5 && !strcmp(sub + len - 5, ".json") && strcmp(sub, "ops.json") != 0) {
                *files = realloc(*files, (*n + 1) * sizeof **files);
                (*files)[(*n)++] = strdup(sub);
            }
        }
    }
    closedir(d);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "blocking") && strcmp(argv[1], "async"))) {
        fprintf(stderr, "usage: %s blocking|async SCENARIO_DIR\n", argv[0]);
        return 2;
    }
    async_flavour = !strcmp(argv[1], "async");
    port = getenv("STATESTORE_TEST_PORT");
    if (!port) {
        fprintf(stderr, "STATESTORE_TEST_PORT is not set\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    snprintf(run_id, sizeof run_id, "%08x", (unsigned)rand());
    char ops_path[2048];
    snprintf(ops_path, sizeof ops_path, "%s/ops.json", argv[2]);
    FILE *f = fopen(ops_path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", ops_path);
        return 2;
    }
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    ops = cJSON_Parse(buf);
    char **files = NULL;
    size_t count = 0;
    collect(argv[2], "", &files, &count);
    qsort(files, count, sizeof *files, cmp_str);
    int passed = 0, failed = 0;
    for (size_t i = 0; i < count; i++) {
        if (run_scenario(argv[2], files[i])) passed++; else failed++;
        free(files[i]);
    }
    free(files);
    cJSON_Delete(ops);
    printf("scenarios (%s): %d passed, %d failed\n", argv[1], passed, failed);
    if (passed + failed < 40) {
        printf("fewer than 40 scenarios ran\n");
        return 1;
    }
    return failed ? 1 : 0;
}
