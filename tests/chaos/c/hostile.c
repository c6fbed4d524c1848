/* Hostile input through the C ABI, built with AddressSanitizer and UBSan:
 *
 * 1. a generator of random calls: NULL and valid pointers with any length (0, small, beyond
 *    the largest MQTT packet, SIZE_MAX: the header promises INVALID_ARGUMENT without reading),
 *    live, freed and foreign handles, options with any enum value, expiry, timeout and
 *    fencing token, option names and values as text, async calls without a callback;
 * 2. a close racing four threads of calls, then every call on the closed client;
 * 3. the malicious-server catalogue (tests/chaos/hostile.json) against
 *    `statestore-chaos hostile`, and its notification storm.
 *
 * Every call must return a status the library defines, never STATESTORE_ERR_INTERNAL; the
 * sanitizers catch any bad memory access; the run has a deadline (the script's timeout).
 *
 *   hostile-c SERVER_PORT HOSTILE_PORT CATALOGUE_JSON [ITERATIONS] [SEED]
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "statestore.h"

static int failures;
static uint64_t rng_state;

static uint64_t next_random(void) {
    /* xorshift64*: reproducible from the seed printed at start. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static uint64_t below(uint64_t n) { return n ? next_random() % n : 0; }

static void fail(const char *what, statestore_status status) {
    failures++;
    fprintf(stderr, "FAIL %s: status %d (%s): %s\n", what, (int)status, statestore_status_name(status),
            statestore_last_error_message());
}

/* A status must be one the library defines, and never an internal error. */
static statestore_status judged(const char *what, statestore_status status) {
    if (strcmp(statestore_status_name(status), "UNKNOWN") == 0 || status == STATESTORE_ERR_INTERNAL)
        fail(what, status);
    return status;
}

/* ---- 1. random calls ---- */

static uint8_t buffer[4096];
static uint8_t zeros[256];

/* A pointer and a length as a caller might pass them. */
static void bytes_arg(const uint8_t **data, size_t *len) {
    switch (below(8)) {
    case 0: *data = NULL; *len = 0; break;
    case 1: *data = NULL; *len = (size_t)below(16) + 1; break;       /* NULL with a length */
    case 2: *data = buffer; *len = 0; break;
    case 3: *data = buffer; *len = (size_t)268435456; break;         /* beyond any packet */
    case 4: *data = buffer; *len = SIZE_MAX; break;
    default: *data = buffer + below(64); *len = (size_t)below(200); break;
    }
}

static const char *token_arg(void) {
    static const char *tokens[] = {NULL, "", "garbage", "000000000000001:00000:node", "1:2:3:4", "999999999999999:99999:x",
                                   "-1:-1:", "\xff\xfe"};
    return tokens[below(sizeof tokens / sizeof *tokens)];
}

static uint64_t duration_arg(void) {
    static const uint64_t durations[] = {0, 1, 5, 100, 1000, 60000, UINT64_MAX, (uint64_t)INT64_MAX + 1};
    return durations[below(sizeof durations / sizeof *durations)];
}

static int64_t signed_timeout_arg(void) {
    static const int64_t timeouts[] = {-1, 0, 1, 100, 2000, INT64_MAX, INT64_MIN};
    return timeouts[below(sizeof timeouts / sizeof *timeouts)];
}

static statestore_set_options *set_options_arg(statestore_set_options *options) {
    if (below(4) == 0) return NULL;
    memset(options, 0, sizeof *options);
    options->condition = below(3) == 0 ? (int32_t)next_random() : (int32_t)below(3);
    options->has_expiry = below(2);
    options->expiry_ms = duration_arg();
    options->fencing_token = token_arg();
    options->persist = below(2);
    options->has_timeout = below(2);
    /* A call waits for its answer: the local server answers, so any timeout ends. */
    options->timeout_ms = duration_arg();
    return options;
}

static void random_calls(const statestore_client *live, long iterations) {
    /* Foreign and stale handles: the header promises INVALID_ARGUMENT for them. */
    statestore_client *freed = NULL;
    statestore_options *options = NULL;
    judged("options_new", statestore_options_new(&options));
    statestore_options_set_port(options, 1);
    statestore_options_set_default_timeout_ms(options, 200);
    judged("connect refused", statestore_connect(options, &freed)); /* fails: nothing listens */
    statestore_options_free(options);
    const statestore_client *clients[] = {live, live, live, NULL, (const statestore_client *)zeros,
                                          (const statestore_client *)(uintptr_t)0x10};
    static const char *names[] = {"host", "port", "client_id", "keep_alive", "session_expiry", "clean_start",
                                  "tls", "ca_file", "cert_file", "key_file", "username", "password",
                                  "password_file", "sat_token_file", "sat_check_interval", "default_timeout",
                                  "reconnect_initial_delay", "reconnect_max_delay", "reconnect_max_attempts",
                                  "reconnect_max_elapsed", "max_packet_size", "max_in_flight", "nope",
                                  "", NULL, "keepAlive"};
    static const char *values[] = {"", "0", "-1", "1883", "65536", "10s", "250ms", "true", "maybe", "1e99",
                                   "/nonexistent/file", "18446744073709551616", NULL, "\xc3\x28"};
    for (long i = 0; i < iterations; i++) {
        const statestore_client *client = clients[below(sizeof clients / sizeof *clients)];
        const uint8_t *key, *value;
        size_t key_len, value_len;
        bytes_arg(&key, &key_len);
        bytes_arg(&value, &value_len);
        statestore_set_options set_options;
        switch (below(12)) {
        case 0: {
            statestore_set_result *result = NULL;
            judged("set", statestore_set(client, key, key_len, value, value_len, set_options_arg(&set_options),
                                         below(2) ? &result : NULL));
            statestore_set_result_free(result);
            break;
        }
        case 1: {
            statestore_value *read = NULL;
            judged("get", statestore_get(client, key, key_len, signed_timeout_arg(), &read));
            statestore_value_free(read);
            break;
        }
        case 2: {
            statestore_delete_options delete_options = {token_arg(), below(2), duration_arg()};
            if (delete_options.timeout_ms > 60000) delete_options.timeout_ms = 1000;
            statestore_delete_result *result = NULL;
            judged("delete", statestore_delete(client, key, key_len, below(2) ? &delete_options : NULL, &result));
            statestore_delete_result_free(result);
            break;
        }
        case 3: {
            statestore_delete_result *result = NULL;
            judged("vdel", statestore_vdel(client, key, key_len, value, value_len, NULL, &result));
            statestore_delete_result_free(result);
            break;
        }
        case 4: {
            statestore_key_list *list = NULL;
            /* A pattern over few keys: the store holds what this run wrote. */
            judged("keys", statestore_keys(client, key, key_len, &list));
            statestore_key_list_free(list);
            break;
        }
        case 5: {
            statestore_observation *observation = NULL;
            if (judged("observe", statestore_observe(client, key, key_len, &observation)) == STATESTORE_OK) {
                statestore_event *event = NULL;
                judged("observation_next", statestore_observation_next(observation, 0, &event));
                statestore_event_free(event);
                judged("observation_free", statestore_observation_free(observation));
            }
            break;
        }
        case 6: {
            statestore_lock *lock = NULL;
            if (judged("lock_new", statestore_lock_new(client, key, key_len, duration_arg(), &lock)) == STATESTORE_OK) {
                statestore_lock_guard *guard = NULL;
                if (judged("try_acquire", statestore_lock_try_acquire(lock, &guard)) == STATESTORE_OK && guard) {
                    const char *token = NULL;
                    judged("fencing_token", statestore_lock_guard_fencing_token(guard, &token));
                    judged("release", statestore_lock_guard_release(guard));
                    judged("guard_free", statestore_lock_guard_free(guard));
                    judged("guard_free twice", statestore_lock_guard_free(guard));
                }
                judged("lock_free", statestore_lock_free(lock));
            }
            break;
        }
        case 7: {
            statestore_options *opts = NULL;
            judged("options_new", statestore_options_new(below(8) ? &opts : NULL));
            judged("options_set", statestore_options_set(below(8) ? opts : NULL, names[below(sizeof names / sizeof *names)],
                                                         values[below(sizeof values / sizeof *values)]));
            judged("set_reconnect", statestore_options_set_reconnect_backoff_ms(opts, duration_arg(), duration_arg()));
            judged("set_timeout", statestore_options_set_default_timeout_ms(opts, duration_arg()));
            judged("options_free", statestore_options_free(opts));
            break;
        }
        case 8:
            /* Describing any number never fails. */
            if (statestore_status_name((int32_t)next_random()) == NULL ||
                statestore_status_description((int32_t)next_random()) == NULL)
                fail("status_name", STATESTORE_OK);
            break;
        case 9:
            /* Async calls without a callback are refused before anything starts. */
            if (judged("set_async", statestore_set_async(client, key, key_len, value, value_len, NULL, NULL, NULL)) ==
                STATESTORE_OK)
                fail("set_async without callback accepted", STATESTORE_OK);
            break;
        case 10: {
            /* A freed handle (freed twice: detected). */
            statestore_lock *lock = NULL;
            if (statestore_lock_new(live, (const uint8_t *)"l", 1, 1000, &lock) == STATESTORE_OK) {
                statestore_lock_free(lock);
                statestore_lock_guard *guard = NULL;
                if (judged("freed lock", statestore_lock_try_acquire(lock, &guard)) != STATESTORE_ERR_INVALID_ARGUMENT)
                    fail("a freed lock was accepted", STATESTORE_OK);
                if (judged("lock freed twice", statestore_lock_free(lock)) != STATESTORE_ERR_INVALID_ARGUMENT)
                    fail("a lock freed twice was not detected", STATESTORE_OK);
            }
            break;
        }
        default: {
            statestore_value *read = NULL;
            judged("get with a negative timeout", statestore_get(client, key, key_len, -5, &read));
            statestore_value_free(read);
        }
        }
    }
}

/* ---- 2. close racing calls ---- */

static void *hammer(void *arg) {
    const statestore_client *client = arg;
    for (int i = 0; i < 300; i++) {
        char key[32];
        snprintf(key, sizeof key, "race%d", i);
        statestore_status status = statestore_set(client, (const uint8_t *)key, strlen(key), (const uint8_t *)"v", 1, NULL, NULL);
        if (status == STATESTORE_ERR_CLOSED) break;
        if (status != STATESTORE_OK) fail("set racing close", status);
        statestore_value *read = NULL;
        status = statestore_get(client, (const uint8_t *)key, strlen(key), -1, &read);
        statestore_value_free(read);
        if (status == STATESTORE_ERR_CLOSED) break;
        if (status != STATESTORE_OK) fail("get racing close", status);
    }
    return NULL;
}

static void close_races(uint16_t port) {
    for (int round = 0; round < 20; round++) {
        statestore_options *options = NULL;
        statestore_options_new(&options);
        statestore_options_set_host(options, "127.0.0.1");
        statestore_options_set_port(options, port);
        statestore_client *client = NULL;
        if (statestore_connect(options, &client) != STATESTORE_OK) {
            fail("connect", STATESTORE_OK);
            statestore_options_free(options);
            return;
        }
        statestore_options_free(options);
        pthread_t threads[4];
        for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, hammer, client);
        struct timespec pause = {0, (long)below(20) * 1000000L};
        nanosleep(&pause, NULL);
        judged("close", statestore_close(client));
        for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
        statestore_value *read = NULL;
        if (statestore_get(client, (const uint8_t *)"k", 1, -1, &read) != STATESTORE_ERR_CLOSED)
            fail("get after close", STATESTORE_OK);
        statestore_observation *observation = NULL;
        if (statestore_observe(client, (const uint8_t *)"k", 1, &observation) != STATESTORE_ERR_CLOSED)
            fail("observe after close", STATESTORE_OK);
        if (statestore_unobserve(client, (const uint8_t *)"k", 1) != STATESTORE_ERR_CLOSED)
            fail("unobserve after close", STATESTORE_OK);
        judged("close twice", statestore_close(client));
        judged("client_free", statestore_client_free(client));
        if (statestore_get(client, (const uint8_t *)"k", 1, -1, &read) != STATESTORE_ERR_INVALID_ARGUMENT)
            fail("get on a freed client", STATESTORE_OK);
    }
}

/* ---- 2b. async calls pending while another thread closes: each callback exactly once ---- */

static atomic_int completions;
static atomic_int bad_completions;

static void on_set_done(void *user_data, statestore_status status, const char *message, const statestore_set_result *result) {
    (void)user_data;
    (void)message;
    (void)result;
    if (status != STATESTORE_OK && status != STATESTORE_ERR_CLOSED) atomic_fetch_add(&bad_completions, 1);
    atomic_fetch_add(&completions, 1);
}

static void on_get_done(void *user_data, statestore_status status, const char *message, const statestore_value *value) {
    (void)user_data;
    (void)message;
    (void)value;
    if (status != STATESTORE_OK && status != STATESTORE_ERR_CLOSED) atomic_fetch_add(&bad_completions, 1);
    atomic_fetch_add(&completions, 1);
}

static void *close_client(void *arg) {
    judged("close from another thread", statestore_close(arg));
    return NULL;
}

static void async_close_races(uint16_t port) {
    for (int round = 0; round < 10; round++) {
        statestore_options *options = NULL;
        statestore_options_new(&options);
        statestore_options_set_host(options, "127.0.0.1");
        statestore_options_set_port(options, port);
        statestore_client *client = NULL;
        statestore_status status = statestore_connect(options, &client);
        statestore_options_free(options);
        if (status != STATESTORE_OK) {
            fail("connect", status);
            return;
        }
        atomic_store(&completions, 0);
        atomic_store(&bad_completions, 0);
        int issued = 0;
        pthread_t closer;
        for (int i = 0; i < 400; i++) {
            if (i == 200) pthread_create(&closer, NULL, close_client, client);
            statestore_status started =
                i % 2 ? statestore_set_async(client, (const uint8_t *)"async", 5, (const uint8_t *)"v", 1, NULL, on_set_done, NULL)
                      : statestore_get_async(client, (const uint8_t *)"async", 5, -1, on_get_done, NULL);
            if (started == STATESTORE_OK) issued++;
            else if (started != STATESTORE_ERR_CLOSED) fail("async call", started);
        }
        pthread_join(closer, NULL);
        /* statestore_close returns after every pending callback ran; calls started after it
         * are refused or complete with CLOSED on their own: wait a little for those. */
        for (int spin = 0; spin < 500 && atomic_load(&completions) < issued; spin++) {
            struct timespec pause = {0, 10 * 1000000L};
            nanosleep(&pause, NULL);
        }
        if (atomic_load(&completions) != issued || atomic_load(&bad_completions) != 0) {
            fprintf(stderr, "round %d: %d calls started, %d callbacks, %d with an unexpected status\n", round, issued,
                    atomic_load(&completions), atomic_load(&bad_completions));
            fail("every callback exactly once, OK or CLOSED", STATESTORE_OK);
        }
        judged("client_free", statestore_client_free(client));
    }
}

/* ---- 3. the malicious server ---- */

static void catalogue(uint16_t port, const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        perror(path);
        failures++;
        return;
    }
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[n] = '\0';
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        fail("hostile.json does not parse", STATESTORE_OK);
        return;
    }
    int timeout_ms = cJSON_GetObjectItem(root, "timeout_ms")->valueint;
    statestore_options *options = NULL;
    statestore_options_new(&options);
    statestore_options_set_host(options, "127.0.0.1");
    statestore_options_set_port(options, port);
    statestore_options_set_default_timeout_ms(options, (uint64_t)timeout_ms);
    statestore_client *client = NULL;
    if (statestore_connect(options, &client) != STATESTORE_OK) {
        fail("connect to the hostile service", STATESTORE_OK);
        statestore_options_free(options);
        cJSON_Delete(root);
        return;
    }
    statestore_options_free(options);
    cJSON *calls = cJSON_GetObjectItem(root, "calls");
    int count = cJSON_GetArraySize(calls);
    for (int i = 0; i <= count; i++) {
        cJSON *call = i < count ? cJSON_GetArrayItem(calls, i) : cJSON_GetObjectItem(root, "after");
        const char *op = cJSON_GetObjectItem(call, "op")->valuestring;
        const char *key = cJSON_GetObjectItem(call, "key")->valuestring;
        statestore_status status;
        statestore_value *read = NULL;
        if (strcmp(op, "get") == 0) {
            status = statestore_get(client, (const uint8_t *)key, strlen(key), -1, &read);
        } else if (strcmp(op, "set") == 0) {
            status = statestore_set(client, (const uint8_t *)key, strlen(key), (const uint8_t *)"v", 1, NULL, NULL);
        } else {
            status = statestore_delete(client, (const uint8_t *)key, strlen(key), NULL, NULL);
        }
        int expected = 0;
        cJSON *name;
        cJSON_ArrayForEach(name, cJSON_GetObjectItem(call, "expect")) {
            if (strcmp(name->valuestring, statestore_status_name(status)) == 0) expected = 1;
        }
        if (!expected) {
            fprintf(stderr, "%s %s: ", op, key);
            fail("unexpected answer to a hostile reply", status);
        }
        cJSON *len = cJSON_GetObjectItem(call, "value_len");
        if (read && len && read->len != (size_t)len->valuedouble) fail("value length", status);
        cJSON *hex = cJSON_GetObjectItem(call, "value_hex");
        if (read && hex) {
            char got[64] = "";
            for (size_t b = 0; b < read->len && b < 16; b++) snprintf(got + 2 * b, 3, "%02x", read->data[b]);
            if (strcmp(got, hex->valuestring) != 0) fail("value bytes", status);
        }
        statestore_value_free(read);
    }
    cJSON *notify = cJSON_GetObjectItem(root, "notify");
    const char *key = cJSON_GetObjectItem(notify, "key")->valuestring;
    const char *final_value = cJSON_GetObjectItem(notify, "final")->valuestring;
    int storm = cJSON_GetObjectItem(notify, "storm")->valueint;
    statestore_observation *observation = NULL;
    if (judged("observe the storm", statestore_observe(client, (const uint8_t *)key, strlen(key), &observation)) ==
        STATESTORE_OK) {
        int sets = 0, done = 0;
        time_t deadline = time(NULL) + 60;
        while (!done && time(NULL) < deadline) {
            statestore_event *event = NULL;
            statestore_status status = statestore_observation_next(observation, 1000, &event);
            if (status == STATESTORE_ERR_TIMEOUT) continue;
            if (status != STATESTORE_OK) {
                fail("observation_next", status);
                break;
            }
            if (event->kind != STATESTORE_EVENT_SET) fail("not a SET event", STATESTORE_OK);
            sets++;
            done = event->value_len == strlen(final_value) && memcmp(event->value, final_value, event->value_len) == 0;
            statestore_event_free(event);
        }
        if (!done || sets != storm + 2) {
            fprintf(stderr, "storm: %d set events, final seen: %d\n", sets, done);
            fail("notification storm", STATESTORE_OK);
        }
        statestore_observation_free(observation);
    }
    statestore_client_free(client);
    cJSON_Delete(root);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s SERVER_PORT HOSTILE_PORT CATALOGUE_JSON [ITERATIONS] [SEED]\n", argv[0]);
        return 2;
    }
    uint16_t server_port = (uint16_t)atoi(argv[1]), hostile_port = (uint16_t)atoi(argv[2]);
    long iterations = argc > 4 ? atol(argv[4]) : 20000;
    rng_state = argc > 5 ? strtoull(argv[5], NULL, 10) : (uint64_t)time(NULL);
    if (rng_state == 0) rng_state = 1;
    printf("hostile-c: seed %" PRIu64 ", %ld random calls\n", rng_state, iterations);
    for (size_t i = 0; i < sizeof buffer; i++) buffer[i] = (uint8_t)next_random();

    statestore_options *options = NULL;
    statestore_options_new(&options);
    statestore_options_set_host(options, "127.0.0.1");
    statestore_options_set_port(options, server_port);
    statestore_options_set_default_timeout_ms(options, 5000);
    statestore_client *client = NULL;
    if (statestore_connect(options, &client) != STATESTORE_OK) {
        fprintf(stderr, "connect: %s\n", statestore_last_error_message());
        return 1;
    }
    statestore_options_free(options);
    random_calls(client, iterations);
    statestore_client_free(client);
    printf("hostile-c: random calls done (%d failures)\n", failures);
    close_races(server_port);
    printf("hostile-c: close races done (%d failures)\n", failures);
    async_close_races(server_port);
    printf("hostile-c: async calls racing close done (%d failures)\n", failures);
    catalogue(hostile_port, argv[3]);
    printf("hostile-c: malicious server done (%d failures)\n", failures);
    return failures ? 1 : 0;
}
