/* The C writer of the chaos run: the writer protocol of tests/chaos/README.md through
 * libstatestore's blocking calls, with the observation pulled on a thread of its own.
 *
 *   writer-c HOST PORT LOCK COUNTER PREFIX DURATION_MS TIMEOUT_MS LOG
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "statestore.h"

enum { OWN_KEYS = 8, LOCK_TTL_MS = 3000, LOCK_WAIT_MS = 8000, PAUSE_MS = 20, QUIET_WAIT_MS = 90000 };

static FILE *log_file;
static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool stopping;

static void sleep_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000u + (uint64_t)tv.tv_usec / 1000u;
}

/* Appends `text` (len bytes) to `out` as a JSON string. */
static void json_string(char *out, size_t cap, const char *text, size_t len) {
    size_t n = strlen(out);
    if (n + 2 >= cap) return;
    out[n++] = '"';
    for (size_t i = 0; i < len && n + 8 < cap; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n++] = '"';
    out[n] = '\0';
}

static void log_line(const char *line) {
    pthread_mutex_lock(&log_mutex);
    fputs(line, log_file);
    fputc('\n', log_file);
    fflush(log_file);
    pthread_mutex_unlock(&log_mutex);
}

static int outcome_unknown(statestore_status status) {
    return status == STATESTORE_ERR_TIMEOUT || status == STATESTORE_ERR_CONNECTION_LOST;
}

/* One `op` record. value: written or read value (NULL with has_value 0: none/absent). */
static void log_op(const char *op, const char *key, uint64_t start, uint64_t timeout_ms, statestore_status status,
                   int is_read, const char *value, size_t value_len, int has_applied, int applied) {
    char line[4096] = "{\"t\":\"op\",\"op\":";
    json_string(line, sizeof line, op, strlen(op));
    strcat(line, ",\"key\":");
    json_string(line, sizeof line, key, strlen(key));
    size_t n = strlen(line);
    n += (size_t)snprintf(line + n, sizeof line - n,
                          ",\"start\":%" PRIu64 ",\"end\":%" PRIu64 ",\"timeout_ms\":%" PRIu64
                          ",\"ok\":%s,\"code\":\"%s\",\"unknown\":%s",
                          start, now_ms(), timeout_ms, status == STATESTORE_OK ? "true" : "false",
                          statestore_status_name(status), outcome_unknown(status) ? "true" : "false");
    if (value != NULL) {
        strcat(line, ",\"value\":");
        json_string(line, sizeof line, value, value_len);
    } else if (is_read && status == STATESTORE_OK) {
        strcat(line, ",\"value\":null");
    }
    if (has_applied && status == STATESTORE_OK) strcat(line, applied ? ",\"applied\":true" : ",\"applied\":false");
    if (status != STATESTORE_OK) {
        const char *message = statestore_last_error_message();
        strcat(line, ",\"message\":");
        json_string(line, sizeof line, message, strlen(message));
    }
    strcat(line, "}");
    log_line(line);
}

static void *pull_events(void *arg) {
    statestore_observation *observation = arg;
    while (!atomic_load(&stopping)) {
        statestore_event *event = NULL;
        statestore_status status = statestore_observation_next(observation, 200, &event);
        if (status == STATESTORE_ERR_TIMEOUT) continue;
        if (status != STATESTORE_OK) break;
        const char *kind = event->kind == STATESTORE_EVENT_SET        ? "set"
                           : event->kind == STATESTORE_EVENT_DELETE   ? "delete"
                           : event->kind == STATESTORE_EVENT_RESYNCED ? "resynced"
                                                                      : "other";
        char line[4096];
        snprintf(line, sizeof line, "{\"t\":\"event\",\"kind\":\"%s\",\"ts\":%" PRIu64 ",\"value\":", kind, now_ms());
        if (event->has_value)
            json_string(line, sizeof line, (const char *)event->value, event->value_len);
        else
            strcat(line, "null");
        strcat(line, "}");
        log_line(line);
        statestore_event_free(event);
    }
    return NULL;
}

static int parse_counter(const statestore_value *value, uint64_t *out) {
    if (value == NULL) {
        *out = 0;
        return 1;
    }
    char text[32];
    if (value->len == 0 || value->len >= sizeof text) return 0;
    memcpy(text, value->data, value->len);
    text[value->len] = '\0';
    char *end;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0') return 0;
    *out = n;
    return 1;
}

static void increment(statestore_client *client, statestore_lock *lock, const char *lock_name, const char *counter,
                      uint64_t timeout_ms) {
    uint64_t start = now_ms();
    statestore_lock_guard *guard = NULL;
    statestore_status status = statestore_lock_acquire(lock, LOCK_WAIT_MS, &guard);
    log_op("lock", lock_name, start, LOCK_WAIT_MS + timeout_ms, status, 0, NULL, 0, 0, 0);
    if (status != STATESTORE_OK) return;
    uint64_t acquired = now_ms();
    const char *token = NULL;
    statestore_lock_guard_fencing_token(guard, &token);
    char token_copy[128];
    snprintf(token_copy, sizeof token_copy, "%s", token ? token : "");

    start = now_ms();
    statestore_value *old_value = NULL;
    status = statestore_get(client, (const uint8_t *)counter, strlen(counter), -1, &old_value);
    log_op("incr_get", counter, start, timeout_ms, status, 1, old_value ? (const char *)old_value->data : NULL,
           old_value ? old_value->len : 0, 0, 0);
    uint64_t old = 0;
    const char *end_how = "not_written";
    char line[1024];
    if (status == STATESTORE_OK && parse_counter(old_value, &old)) {
        bool held = false;
        statestore_lock_guard_is_held(guard, &held);
        if (!held) {
            snprintf(line, sizeof line,
                     "{\"t\":\"incr\",\"token\":\"%s\",\"old\":%" PRIu64 ",\"new\":%" PRIu64
                     ",\"outcome\":\"failed\",\"code\":\"NOT_HELD\",\"ts\":%" PRIu64 "}",
                     token_copy, old, old + 1, now_ms());
            log_line(line);
            end_how = "lost";
        } else {
            char next[32];
            snprintf(next, sizeof next, "%" PRIu64, old + 1);
            statestore_set_options options = {0};
            options.fencing_token = token_copy;
            options.persist = true;
            statestore_set_result *result = NULL;
            start = now_ms();
            status = statestore_set(client, (const uint8_t *)counter, strlen(counter), (const uint8_t *)next,
                                    strlen(next), &options, &result);
            log_op("incr_set", counter, start, timeout_ms, status, 0, next, strlen(next), 1,
                   result ? result->applied : 0);
            statestore_set_result_free(result);
            snprintf(line, sizeof line,
                     "{\"t\":\"incr\",\"token\":\"%s\",\"old\":%" PRIu64 ",\"new\":%" PRIu64
                     ",\"outcome\":\"%s\",\"code\":\"%s\",\"ts\":%" PRIu64 "}",
                     token_copy, old, old + 1,
                     status == STATESTORE_OK ? "ok" : outcome_unknown(status) ? "unknown" : "failed",
                     statestore_status_name(status), now_ms());
            log_line(line);
            end_how = "released";
        }
    }
    statestore_value_free(old_value);
    uint64_t end = now_ms();
    start = now_ms();
    status = statestore_lock_guard_release(guard);
    log_op("release", lock_name, start, timeout_ms, status, 0, NULL, 0, 0, 0);
    statestore_lock_guard_free(guard);
    snprintf(line, sizeof line,
             "{\"t\":\"hold\",\"token\":\"%s\",\"holder\":\"c-%d\",\"acq\":%" PRIu64 ",\"end\":%" PRIu64
             ",\"end_how\":\"%s\"}",
             token_copy, (int)getpid(), acquired, end, end_how);
    log_line(line);
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: %s HOST PORT LOCK COUNTER PREFIX DURATION_MS TIMEOUT_MS LOG\n", argv[0]);
        return 2;
    }
    const char *host = argv[1], *lock_name = argv[3], *counter = argv[4], *prefix = argv[5];
    uint16_t port = (uint16_t)strtoul(argv[2], NULL, 10);
    uint64_t duration_ms = strtoull(argv[6], NULL, 10), timeout_ms = strtoull(argv[7], NULL, 10);
    log_file = fopen(argv[8], "w");
    if (log_file == NULL) {
        perror(argv[8]);
        return 2;
    }
    char line[512];
    snprintf(line, sizeof line, "{\"t\":\"start\",\"flavour\":\"c\",\"pid\":%d,\"ts\":%" PRIu64 "}", (int)getpid(),
             now_ms());
    log_line(line);
    uint64_t end = now_ms() + duration_ms;

    statestore_options *options = NULL;
    statestore_options_new(&options);
    statestore_options_set_host(options, host);
    statestore_options_set_port(options, port);
    statestore_options_set_default_timeout_ms(options, timeout_ms);
    statestore_options_set_reconnect_backoff_ms(options, 100, 1000);
    statestore_client *client = NULL;
    for (;;) {
        uint64_t start = now_ms();
        statestore_status status = statestore_connect(options, &client);
        log_op("connect", "", start, timeout_ms, status, 0, NULL, 0, 0, 0);
        if (status == STATESTORE_OK) break;
        if (now_ms() >= end) return 1;
        sleep_ms(200);
    }
    statestore_options_free(options);

    statestore_observation *observation = NULL;
    for (;;) {
        uint64_t start = now_ms();
        statestore_status status = statestore_observe(client, (const uint8_t *)counter, strlen(counter), &observation);
        log_op("observe", counter, start, timeout_ms, status, 0, NULL, 0, 0, 0);
        if (status == STATESTORE_OK) break;
        if (now_ms() >= end) return 1;
    }
    pthread_t events;
    pthread_create(&events, NULL, pull_events, observation);

    statestore_lock *lock = NULL;
    if (statestore_lock_new(client, (const uint8_t *)lock_name, strlen(lock_name), LOCK_TTL_MS, &lock) !=
        STATESTORE_OK) {
        fprintf(stderr, "lock: %s\n", statestore_last_error_message());
        return 1;
    }
    for (uint64_t seq = 1; now_ms() < end; seq++) {
        char key[256], value[300];
        snprintf(key, sizeof key, "%sk%" PRIu64, prefix, seq % OWN_KEYS);
        snprintf(value, sizeof value, "%s#%" PRIu64, key, seq);
        statestore_set_options set_options = {0};
        set_options.persist = true;
        statestore_set_result *result = NULL;
        uint64_t start = now_ms();
        statestore_status status = statestore_set(client, (const uint8_t *)key, strlen(key), (const uint8_t *)value,
                                                  strlen(value), &set_options, &result);
        log_op("set", key, start, timeout_ms, status, 0, value, strlen(value), 1, result ? result->applied : 0);
        statestore_set_result_free(result);

        statestore_value *read = NULL;
        start = now_ms();
        status = statestore_get(client, (const uint8_t *)key, strlen(key), -1, &read);
        log_op("get", key, start, timeout_ms, status, 1, read ? (const char *)read->data : NULL, read ? read->len : 0,
               0, 0);
        statestore_value_free(read);

        if (seq % 3 == 0) increment(client, lock, lock_name, counter, timeout_ms);
        sleep_ms(PAUSE_MS);
    }
    snprintf(line, sizeof line, "{\"t\":\"quiet\",\"ts\":%" PRIu64 "}", now_ms());
    log_line(line);

    /* Wait for stdin to close (the run's signal), at most QUIET_WAIT_MS. */
    uint64_t quiet_end = now_ms() + QUIET_WAIT_MS;
    while (now_ms() < quiet_end) {
        struct pollfd fd = {.fd = 0, .events = POLLIN};
        if (poll(&fd, 1, 500) > 0) {
            char sink[256];
            if (read(0, sink, sizeof sink) <= 0) break;
        }
    }
    atomic_store(&stopping, true);
    pthread_join(events, NULL);
    statestore_observation_free(observation);
    statestore_lock_free(lock);
    uint64_t start = now_ms();
    statestore_status status = statestore_close(client);
    log_op("close", "", start, timeout_ms, status, 0, NULL, 0, 0, 0);
    statestore_client_free(client);
    snprintf(line, sizeof line, "{\"t\":\"end\",\"ts\":%" PRIu64 "}", now_ms());
    log_line(line);
    fclose(log_file);
    return 0;
}
