/* One measurement of one C flavour, for `statestore-bench bindings` (bench/README.md).
 *
 * Flavours: `async` (statestore_set_async/statestore_get_async: N calls in flight, each
 * completion callback issues the slot's next call), `dispatch` (the same calls, with the
 * completions run by this program's poll loop: STATESTORE_CALLBACKS_LOOP, statestore_dispatch)
 * and `sync` (statestore_set/statestore_get from N threads sharing one client). Tests: `probe`, `throughput`, `boundary` (calls that
 * fail validation before any I/O, ns per call), `memory` (many operations, each also
 * allocating and freeing an options handle and, for the blocking calls, the result structs,
 * while resident memory is sampled) and `batch` (`--ops` keys as a loop of single calls, each
 * waited for, then as one statestore_get_many/statestore_set_many: loop_s, batch_s) and `idle` (a
 * connected client observing a key, idle for `--warmup` to settle, then for `--seconds`: the
 * process's CPU and context switches over that time). Prints one line `RESULT <json>`.
 *
 * Build: cc -O2 -std=c11 -Wall -Wextra -Werror c_driver.c $(pkg-config --cflags --libs statestore) -lpthread
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <statestore.h>

enum { WARMUP = 0, MEASURE = 1, STOP = 2 };
enum { MEMORY_SAMPLES = 100, MAX_SLOTS = 1024 };

struct args {
    const char *flavour, *test, *host, *op;
    int port, size, inflight, service_pid;
    double warmup, seconds;
    long long ops; /* -1: no cap */
};
static struct args A = {"sync", "throughput", "127.0.0.1", "set", 1883, 16, 1, 0, 0.1, 0.3, -1};

static statestore_client *client;
static uint8_t *value;

/* --- clocks and /proc ------------------------------------------------------------------- */

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec / 1e6;
}

static double status_mib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double mib = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, strlen(field)) == 0) {
            mib = strtod(line + strlen(field), NULL) / 1024.0;
            break;
        }
    }
    fclose(f);
    return mib;
}

/* Context switches of every thread of this process so far (voluntary + involuntary). */
static double ctx_switches(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_nvcsw + (double)u.ru_nivcsw;
}

static double service_cpu(void) {
    char path[64], text[1024];
    if (A.service_pid <= 0) return -1;
    snprintf(path, sizeof path, "/proc/%d/stat", A.service_pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strrchr(text, ')');
    if (!p) return -1;
    p += 2;
    unsigned long long utime = 0, stime = 0;
    for (int field = 0; field < 13 && p; field++) {
        if (field == 11) utime = strtoull(p, NULL, 10);
        if (field == 12) stime = strtoull(p, NULL, 10);
        p = strchr(p, ' ');
        if (p) p++;
    }
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* --- gate and recorder -------------------------------------------------------------------- */

static atomic_int phase = WARMUP;
static atomic_llong counted;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *latencies;
static size_t n_lat, cap_lat;
static long long ops_done, errors;
static char first_error[512];
static uint64_t last_completion;
static bool memory_mode;
static double samples[MEMORY_SAMPLES + 8][2];
static int n_samples;

/* Next phase for an operation about to be sent; -1: stop. */
static int gate_next(void) {
    int p = atomic_load(&phase);
    if (p == STOP) return -1;
    if (p != MEASURE || A.ops < 0) return p;
    long long n = atomic_fetch_add(&counted, 1);
    if (n >= A.ops) return -1;
    long long step = A.ops / MEMORY_SAMPLES > 0 ? A.ops / MEMORY_SAMPLES : 1;
    if (memory_mode && n > 0 && n % step == 0) {
        double rss = status_mib("VmRSS:");
        pthread_mutex_lock(&lock);
        if (n_samples < MEMORY_SAMPLES + 8) {
            samples[n_samples][0] = (double)n;
            samples[n_samples][1] = rss;
            n_samples++;
        }
        pthread_mutex_unlock(&lock);
    }
    return MEASURE;
}

static bool capped(void) { return atomic_load(&phase) == STOP || (A.ops >= 0 && atomic_load(&counted) >= A.ops); }

static void success(int p, uint64_t sent) {
    if (p != MEASURE) return;
    uint64_t now = now_ns();
    pthread_mutex_lock(&lock);
    if (!memory_mode) {
        if (n_lat == cap_lat) {
            cap_lat = cap_lat ? 2 * cap_lat : 65536;
            uint64_t *grown = realloc(latencies, cap_lat * sizeof *latencies);
            if (!grown) abort();
            latencies = grown;
        }
        latencies[n_lat++] = now - sent;
    }
    ops_done++;
    if (now > last_completion) last_completion = now;
    pthread_mutex_unlock(&lock);
}

static void failure(const char *what, int status, const char *message) {
    pthread_mutex_lock(&lock);
    errors++;
    if (!first_error[0])
        snprintf(first_error, sizeof first_error, "%s: %s: %s", what, statestore_status_name(status),
                 message ? message : "");
    pthread_mutex_unlock(&lock);
    atomic_store(&phase, STOP);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static void json_error(const char *key, const char *text) {
    printf("RESULT {\"%s\": ", key);
    json_string(text);
    printf("}\n");
    fflush(stdout);
}

struct window {
    uint64_t at;
    double cpu, service_cpu, switches;
};

static void window_open(struct window *w) {
    w->at = now_ns();
    w->cpu = cpu_seconds();
    w->switches = ctx_switches();
    w->service_cpu = service_cpu();
    /* A failure during the warm-up has stopped the run already: keep it stopped. */
    int warm = WARMUP;
    atomic_compare_exchange_strong(&phase, &warm, MEASURE);
}

static void print_figures(const struct window *w) {
    double end_cpu = cpu_seconds(), end_service = service_cpu(), end_switches = ctx_switches();
    uint64_t last = last_completion ? last_completion : now_ns();
    double elapsed = last > w->at ? (double)(last - w->at) / 1e9 : 0;
    qsort(latencies, n_lat, sizeof *latencies, cmp_u64);
#define Q(p) (n_lat ? (double)latencies[(size_t)((p) * n_lat) < n_lat ? (size_t)((p) * n_lat) : n_lat - 1] / 1000.0 : 0.0)
    printf("RESULT {\"ops\": %lld, \"errors\": %lld, \"error\": ", ops_done, errors);
    if (first_error[0]) json_string(first_error);
    else printf("null");
    printf(", \"elapsed_s\": %.6f, \"ops_per_sec\": %.3f, \"p50_us\": %.3f, \"p99_us\": %.3f, \"max_us\": %.3f",
           elapsed, elapsed > 0 ? ops_done / elapsed : 0.0, Q(0.5), Q(0.99),
           n_lat ? latencies[n_lat - 1] / 1000.0 : 0.0);
#undef Q
    printf(", \"cpu_us_per_op\": %.3f", ops_done ? (end_cpu - w->cpu) * 1e6 / ops_done : 0.0);
    if (ops_done) printf(", \"ctx_switches_per_op\": %.3f", (end_switches - w->switches) / ops_done);
    if (w->service_cpu >= 0 && end_service >= 0 && ops_done)
        printf(", \"service_cpu_us_per_op\": %.3f", (end_service - w->service_cpu) * 1e6 / ops_done);
    printf(", \"peak_rss_mb\": %.3f", status_mib("VmHWM:"));
    if (memory_mode && n_samples > 0) {
        double last_ops = samples[n_samples - 1][0], middle = samples[n_samples - 1][1];
        for (int i = 0; i < n_samples; i++)
            if (samples[i][0] >= last_ops / 2) {
                middle = samples[i][1];
                break;
            }
        double start = samples[0][1], end = samples[n_samples - 1][1];
        printf(", \"memory\": {\"samples\": [");
        for (int i = 0; i < n_samples; i++) printf("%s[%.0f, %.4f]", i ? ", " : "", samples[i][0], samples[i][1]);
        printf("], \"start_mb\": %.4f, \"end_mb\": %.4f, \"growth_mb\": %.4f, \"second_half_growth_mb\": %.4f}", start,
               end, end - start, end - middle);
    }
    printf("}\n");
    fflush(stdout);
}

/* --- one operation ---------------------------------------------------------------------------- */

static const char *operation(long i) {
    if (strcmp(A.op, "mix") == 0) return i % 2 == 0 ? "set" : "get";
    return A.op;
}

static void key_of(int slot, char *key, size_t *len) { *len = (size_t)snprintf(key, 32, "bench-key-%03d", slot); }

/* Memory runs churn a handle per operation too. */
static void churn_handle(void) {
    if (!memory_mode) return;
    statestore_options *o = NULL;
    if (statestore_options_new(&o) != STATESTORE_OK) failure("options_new", 0, statestore_last_error_message());
    statestore_options_free(o);
}

/* Whether a call succeeded, recording why not. */
static bool check_set(statestore_status st, const char *message, const statestore_set_result *r) {
    if (st != STATESTORE_OK) failure("SET", st, message);
    else if (!r || !r->applied) failure("SET not applied", st, "");
    else return true;
    return false;
}

static bool check_get(statestore_status st, const char *message, const statestore_value *v) {
    if (st != STATESTORE_OK) failure("GET", st, message);
    else if (!v || v->len != (size_t)A.size) failure("GET returned the wrong length", st, "");
    else return true;
    return false;
}

/* --- async ------------------------------------------------------------------------------------- */

struct slot {
    int index, phase;
    long i;
    uint64_t sent;
    char key[32];
    size_t key_len;
};
static struct slot slots[MAX_SLOTS];
static atomic_int active;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;

static void issue(struct slot *s);

static void retire(void) {
    pthread_mutex_lock(&done_lock);
    if (atomic_fetch_sub(&active, 1) == 1) pthread_cond_signal(&done_cond);
    pthread_mutex_unlock(&done_lock);
}

static void set_cb(void *user_data, statestore_status status, const char *message, const statestore_set_result *r) {
    struct slot *s = user_data;
    if (check_set(status, message, r)) success(s->phase, s->sent);
    issue(s);
}

static void get_cb(void *user_data, statestore_status status, const char *message, const statestore_value *v) {
    struct slot *s = user_data;
    if (check_get(status, message, v)) success(s->phase, s->sent);
    issue(s);
}

static void issue(struct slot *s) {
    int p = gate_next();
    if (p < 0) {
        retire();
        return;
    }
    s->phase = p;
    churn_handle();
    const char *op = operation(s->i++);
    s->sent = now_ns();
    statestore_status st =
        strcmp(op, "set") == 0
            ? statestore_set_async(client, (const uint8_t *)s->key, s->key_len, value, (size_t)A.size, NULL, set_cb, s)
            : statestore_get_async(client, (const uint8_t *)s->key, s->key_len, -1, get_cb, s);
    if (st != STATESTORE_OK) {
        failure("async call", st, statestore_last_error_message());
        retire();
    }
}

static void sleep_s(double s) {
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) == -1 && errno == EINTR) {}
}

static void wait_window(void) {
    uint64_t deadline = now_ns() + (uint64_t)(A.seconds * 1e9);
    while (now_ns() < deadline && !capped()) sleep_s(0.005);
    atomic_store(&phase, STOP);
}

static int run_async(void) {
    struct window w;
    atomic_store(&active, A.inflight);
    for (int i = 0; i < A.inflight; i++) {
        slots[i].index = i;
        key_of(i, slots[i].key, &slots[i].key_len);
    }
    for (int i = 0; i < A.inflight; i++) issue(&slots[i]);
    sleep_s(A.warmup);
    window_open(&w);
    wait_window();
    pthread_mutex_lock(&done_lock);
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 15;
    while (atomic_load(&active) > 0)
        if (pthread_cond_timedwait(&done_cond, &done_lock, &limit) == ETIMEDOUT) break;
    pthread_mutex_unlock(&done_lock);
    if (atomic_load(&active) > 0) {
        json_error("error", "calls in flight did not complete within 15 s");
        return 1;
    }
    print_figures(&w);
    return 0;
}

/* --- dispatch: the completions of the async calls run from this thread's poll loop ---------- */

/* Runs what is ready when the client's completion descriptor is readable (waiting at most 5 ms). */
static void dispatch_ready(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 5) > 0) statestore_dispatch(client, NULL);
}

/* The loop until `until_ns` or the window is capped. */
static void dispatch_until(int fd, uint64_t until_ns) {
    while (now_ns() < until_ns && !capped()) dispatch_ready(fd);
}

static int run_dispatch(void) {
    struct window w;
    int fd = -1;
    if (statestore_completion_fd(client, &fd) != STATESTORE_OK) {
        json_error("error", statestore_last_error_message());
        return 1;
    }
    atomic_store(&active, A.inflight);
    for (int i = 0; i < A.inflight; i++) {
        slots[i].index = i;
        key_of(i, slots[i].key, &slots[i].key_len);
    }
    for (int i = 0; i < A.inflight; i++) issue(&slots[i]);
    dispatch_until(fd, now_ns() + (uint64_t)(A.warmup * 1e9));
    window_open(&w);
    dispatch_until(fd, now_ns() + (uint64_t)(A.seconds * 1e9));
    atomic_store(&phase, STOP);
    uint64_t limit = now_ns() + 15000000000ull;
    while (atomic_load(&active) > 0 && now_ns() < limit) dispatch_ready(fd);
    if (atomic_load(&active) > 0) {
        json_error("error", "calls in flight did not complete within 15 s");
        return 1;
    }
    print_figures(&w);
    return 0;
}

/* --- blocking ---------------------------------------------------------------------------------- */

static void *sync_worker(void *arg) {
    struct slot *s = arg;
    for (;;) {
        int p = gate_next();
        if (p < 0) return NULL;
        churn_handle();
        const char *op = operation(s->i++);
        uint64_t sent = now_ns();
        if (strcmp(op, "set") == 0) {
            statestore_set_result *r = NULL;
            statestore_status st = statestore_set(client, (const uint8_t *)s->key, s->key_len, value, (size_t)A.size, NULL, &r);
            if (check_set(st, statestore_last_error_message(), r)) success(p, sent);
            statestore_set_result_free(r);
        } else {
            statestore_value *v = NULL;
            statestore_status st = statestore_get(client, (const uint8_t *)s->key, s->key_len, -1, &v);
            if (check_get(st, statestore_last_error_message(), v)) success(p, sent);
            statestore_value_free(v);
        }
        if (atomic_load(&phase) == STOP) return NULL;
    }
}

static int run_sync(void) {
    struct window w;
    pthread_t threads[MAX_SLOTS];
    for (int i = 0; i < A.inflight; i++) {
        slots[i].index = i;
        key_of(i, slots[i].key, &slots[i].key_len);
        if (pthread_create(&threads[i], NULL, sync_worker, &slots[i]) != 0) {
            json_error("error", "cannot start a thread");
            return 1;
        }
    }
    sleep_s(A.warmup);
    window_open(&w);
    wait_window();
    for (int i = 0; i < A.inflight; i++) pthread_join(threads[i], NULL);
    print_figures(&w);
    return 0;
}

/* --- boundary ---------------------------------------------------------------------------------- */

static int run_boundary(bool async) {
    long long calls = A.ops > 0 ? A.ops : 1000000;
    uint64_t started = now_ns();
    for (long long i = 0; i < calls; i++) {
        statestore_status st =
            async ? statestore_set_async(client, (const uint8_t *)"", 0, value, 1, NULL, set_cb, NULL)
                  : statestore_set(client, (const uint8_t *)"", 0, value, 1, NULL, NULL);
        if (st != STATESTORE_ERR_INVALID_ARGUMENT) {
            json_error("error", "SET of an empty key did not fail with STATESTORE_ERR_INVALID_ARGUMENT");
            return 1;
        }
    }
    double ns = (double)(now_ns() - started) / (double)calls;
    printf("RESULT {\"ops\": %lld, \"errors\": 0, \"ns_per_call\": %.3f}\n", calls, ns);
    fflush(stdout);
    return 0;
}

/* --- batch: a loop of single calls against one batch call -------------------------------------- */

static pthread_mutex_t batch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t batch_cond = PTHREAD_COND_INITIALIZER;
static atomic_bool batch_completed;
static int batch_fd = -1; /* dispatch: the completion descriptor this thread polls */
static statestore_bytes *batch_keys, *batch_values;
static size_t batch_count;

static void batch_complete(void) {
    pthread_mutex_lock(&batch_lock);
    atomic_store(&batch_completed, true);
    pthread_cond_signal(&batch_cond);
    pthread_mutex_unlock(&batch_lock);
}

/* Waits for the call just made to complete: run by this thread's poll loop (dispatch) or on the
 * library's dispatcher thread (async). */
static void batch_wait(void) {
    if (batch_fd >= 0) {
        while (!atomic_load(&batch_completed)) dispatch_ready(batch_fd);
    } else {
        pthread_mutex_lock(&batch_lock);
        while (!atomic_load(&batch_completed)) pthread_cond_wait(&batch_cond, &batch_lock);
        pthread_mutex_unlock(&batch_lock);
    }
    atomic_store(&batch_completed, false);
}

static void check_set_many(statestore_status st, const char *message, const statestore_set_many_result *r) {
    if (st != STATESTORE_OK || !r) {
        failure("SET many", st, message);
        return;
    }
    for (size_t i = 0; i < r->count; i++) check_set(r->items[i].status, r->items[i].message, &r->items[i].result);
}

static void check_get_many(statestore_status st, const char *message, const statestore_get_many_result *r) {
    if (st != STATESTORE_OK || !r) {
        failure("GET many", st, message);
        return;
    }
    for (size_t i = 0; i < r->count; i++)
        check_get(r->items[i].status, r->items[i].message, r->items[i].found ? &r->items[i].value : NULL);
}

static void one_set_cb(void *user_data, statestore_status status, const char *message, const statestore_set_result *r) {
    (void)user_data;
    check_set(status, message, r);
    batch_complete();
}

static void one_get_cb(void *user_data, statestore_status status, const char *message, const statestore_value *v) {
    (void)user_data;
    check_get(status, message, v);
    batch_complete();
}

static void many_set_cb(void *user_data, statestore_status status, const char *message,
                        const statestore_set_many_result *r) {
    (void)user_data;
    check_set_many(status, message, r);
    batch_complete();
}

static void many_get_cb(void *user_data, statestore_status status, const char *message,
                        const statestore_get_many_result *r) {
    (void)user_data;
    check_get_many(status, message, r);
    batch_complete();
}

/* A call that failed before it was sent completes at once. */
static void batch_sent(statestore_status st) {
    if (st != STATESTORE_OK) failure("async call", st, statestore_last_error_message());
    else batch_wait();
}

static void batch_one(bool set, bool async, size_t i) {
    const statestore_bytes *k = &batch_keys[i];
    if (async && set) {
        batch_sent(statestore_set_async(client, k->data, k->len, value, (size_t)A.size, NULL, one_set_cb, NULL));
    } else if (async) {
        batch_sent(statestore_get_async(client, k->data, k->len, -1, one_get_cb, NULL));
    } else if (set) {
        statestore_set_result *r = NULL;
        statestore_status st = statestore_set(client, k->data, k->len, value, (size_t)A.size, NULL, &r);
        check_set(st, statestore_last_error_message(), r);
        statestore_set_result_free(r);
    } else {
        statestore_value *v = NULL;
        statestore_status st = statestore_get(client, k->data, k->len, -1, &v);
        check_get(st, statestore_last_error_message(), v);
        statestore_value_free(v);
    }
}

static void batch_many(bool set, bool async) {
    if (async && set) {
        batch_sent(statestore_set_many_async(client, batch_keys, batch_values, batch_count, NULL, many_set_cb, NULL));
    } else if (async) {
        batch_sent(statestore_get_many_async(client, batch_keys, batch_count, -1, many_get_cb, NULL));
    } else if (set) {
        statestore_set_many_result *r = NULL;
        statestore_status st = statestore_set_many(client, batch_keys, batch_values, batch_count, NULL, &r);
        check_set_many(st, statestore_last_error_message(), r);
        statestore_set_many_result_free(r);
    } else {
        statestore_get_many_result *r = NULL;
        statestore_status st = statestore_get_many(client, batch_keys, batch_count, -1, &r);
        check_get_many(st, statestore_last_error_message(), r);
        statestore_get_many_result_free(r);
    }
}

static int run_batch(bool async, bool dispatch) {
    if (dispatch && statestore_completion_fd(client, &batch_fd) != STATESTORE_OK) {
        json_error("error", statestore_last_error_message());
        return 1;
    }
    batch_count = A.ops > 0 ? (size_t)A.ops : 1000;
    char *names = malloc(batch_count * 32);
    batch_keys = malloc(batch_count * sizeof *batch_keys);
    batch_values = malloc(batch_count * sizeof *batch_values);
    if (!names || !batch_keys || !batch_values) {
        json_error("error", "out of memory");
        return 1;
    }
    for (size_t i = 0; i < batch_count; i++) {
        batch_keys[i].data = (const uint8_t *)names + i * 32;
        batch_keys[i].len = (size_t)snprintf(names + i * 32, 32, "bench-batch-%05zu", i);
        batch_values[i].data = value;
        batch_values[i].len = (size_t)A.size;
    }
    bool set = strcmp(A.op, "set") == 0;
    batch_many(true, async);
    uint64_t looped = 0, batched = 0;
    /* A warm-up pass (not counted) when the profile has a warm-up, then the measured pass. */
    for (int pass = A.warmup > 0 ? 2 : 1; pass > 0 && !errors; pass--) {
        uint64_t started = now_ns();
        for (size_t i = 0; i < batch_count && !errors; i++) batch_one(set, async, i);
        looped = now_ns() - started;
        started = now_ns();
        batch_many(set, async);
        batched = now_ns() - started;
    }
    free(names);
    free(batch_keys);
    free(batch_values);
    if (errors) {
        json_error("error", first_error);
        return 1;
    }
    printf("RESULT {\"ops\": %zu, \"errors\": 0, \"elapsed_s\": %.9f, \"loop_s\": %.9f, \"batch_s\": %.9f, "
           "\"peak_rss_mb\": %.3f}\n",
           batch_count, (double)(looped + batched) / 1e9, (double)looped / 1e9, (double)batched / 1e9,
           status_mib("VmHWM:"));
    fflush(stdout);
    return 0;
}

/* --- idle: a connected client observing a key, doing nothing ----------------------------------- */

static atomic_int idle_events;

static void idle_event(void *user_data, const statestore_event *event) {
    (void)user_data;
    if (event) atomic_fetch_add(&idle_events, 1);
}

/* The idle application of each flavour for `seconds`: `async` gets events by callback while its
 * thread sleeps; `dispatch` waits in its own poll loop on the completion fd alone; `sync` is a
 * thread blocked in statestore_observation_next. STATESTORE_ERR_TIMEOUT: no event came. */
static statestore_status idle_for(statestore_observation *observation, int fd, bool async, bool dispatch,
                                  double seconds) {
    uint64_t until = now_ns() + (uint64_t)(seconds * 1e9);
    if (dispatch) {
        for (uint64_t now; (now = now_ns()) < until;) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, (int)((until - now + 999999) / 1000000)) > 0) statestore_dispatch(client, NULL);
        }
    } else if (async) {
        sleep_s(seconds);
    } else {
        statestore_event *event = NULL;
        statestore_status waited = statestore_observation_next(observation, (int64_t)(seconds * 1000), &event);
        statestore_event_free(event);
        return waited;
    }
    return STATESTORE_ERR_TIMEOUT;
}

/* Idles `--warmup` seconds to settle, then measures `--seconds` of idling. */
static int run_idle(bool async, bool dispatch) {
    statestore_observation *observation = NULL;
    int fd = -1;
    if (statestore_observe(client, (const uint8_t *)"bench-idle", 10, &observation) != STATESTORE_OK ||
        (async && statestore_observation_set_callback(observation, idle_event, NULL) != STATESTORE_OK) ||
        (dispatch && statestore_completion_fd(client, &fd) != STATESTORE_OK)) {
        json_error("error", statestore_last_error_message());
        return 1;
    }
    double settle_cpu = cpu_seconds();
    statestore_status waited = idle_for(observation, fd, async, dispatch, A.warmup);
    double cpu = cpu_seconds(), switches = ctx_switches();
    uint64_t started = now_ns();
    if (waited == STATESTORE_ERR_TIMEOUT) waited = idle_for(observation, fd, async, dispatch, A.seconds);
    double elapsed = (double)(now_ns() - started) / 1e9;
    double cpu_ms = (cpu_seconds() - cpu) * 1e3, idle_switches = ctx_switches() - switches;
    statestore_observation_free(observation);
    if (waited != STATESTORE_ERR_TIMEOUT || atomic_load(&idle_events) > 0) {
        json_error("error", "an idle observation gave an event");
        return 1;
    }
    printf("RESULT {\"elapsed_s\": %.6f, \"idle_cpu_ms\": %.3f, \"idle_ctx_switches\": %.0f, \"settle_cpu_ms\": %.3f}\n",
           elapsed, cpu_ms, idle_switches, (cpu - settle_cpu) * 1e3);
    fflush(stdout);
    return 0;
}

/* --- main --------------------------------------------------------------------------------------- */

static void usage(const char *arg) {
    fprintf(stderr, "c_driver: bad argument %s\n", arg);
    exit(2);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage(a);
        const char *v = argv[++i];
        if (!strcmp(a, "--flavour")) A.flavour = v;
        else if (!strcmp(a, "--test")) A.test = v;
        else if (!strcmp(a, "--host")) A.host = v;
        else if (!strcmp(a, "--port")) A.port = atoi(v);
        else if (!strcmp(a, "--op")) A.op = v;
        else if (!strcmp(a, "--size")) A.size = atoi(v);
        else if (!strcmp(a, "--inflight")) A.inflight = atoi(v);
        else if (!strcmp(a, "--warmup")) A.warmup = atof(v);
        else if (!strcmp(a, "--seconds")) A.seconds = atof(v);
        else if (!strcmp(a, "--ops")) A.ops = atoll(v);
        else if (!strcmp(a, "--service-pid")) A.service_pid = atoi(v);
        else usage(a);
    }
    bool dispatch = strcmp(A.flavour, "dispatch") == 0;
    bool async = dispatch || strcmp(A.flavour, "async") == 0;
    if (!async && strcmp(A.flavour, "sync") != 0) usage(A.flavour);
    if (!strcmp(A.test, "probe")) {
        printf("RESULT {\"ok\": true, \"version\": \"libstatestore %s\"}\n", statestore_version());
        return 0;
    }
    if (A.inflight < 1 || A.inflight > MAX_SLOTS) usage("--inflight");
    memory_mode = strcmp(A.test, "memory") == 0;
    if (memory_mode) A.op = "mix";
    value = malloc((size_t)A.size + 1);
    memset(value, 'v', (size_t)A.size + 1);

    statestore_options *options = NULL;
    if (statestore_options_new(&options) != STATESTORE_OK ||
        statestore_options_set_host(options, A.host) != STATESTORE_OK ||
        statestore_options_set_port(options, (uint16_t)A.port) != STATESTORE_OK ||
        (dispatch && statestore_options_set_callback_mode(options, STATESTORE_CALLBACKS_LOOP) != STATESTORE_OK) ||
        statestore_connect(options, &client) != STATESTORE_OK) {
        json_error("error", statestore_last_error_message());
        return 1;
    }
    statestore_options_free(options);
    int rc;
    if (!strcmp(A.test, "boundary")) {
        rc = run_boundary(async);
    } else if (!strcmp(A.test, "batch")) {
        rc = run_batch(async, dispatch);
    } else if (!strcmp(A.test, "idle")) {
        rc = run_idle(async, dispatch);
    } else {
        for (int i = 0; i < A.inflight; i++) {
            char key[32];
            size_t len;
            key_of(i, key, &len);
            if (statestore_set(client, (const uint8_t *)key, len, value, (size_t)A.size, NULL, NULL) != STATESTORE_OK) {
                json_error("error", statestore_last_error_message());
                return 1;
            }
        }
        rc = dispatch ? run_dispatch() : async ? run_async() : run_sync();
    }
    statestore_client_free(client);
    free(value);
    free(latencies);
    return rc;
}
