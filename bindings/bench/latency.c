/* Median latency of blocking GETs through the C API, and throughput of async GETs with 64 in
 * flight, against a running state store: the counterpart of examples/latency_rust.rs (same
 * loop with the Rust clients), so the two can run back to back on one server.
 *   cc -O2 latency.c $(pkg-config --cflags --libs statestore) -lpthread -o latency
 *   ./latency PORT [N]                                                                  */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <statestore.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static statestore_client *client;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long remaining, outstanding;

static void on_get(void *user, statestore_status st, const char *msg, const statestore_value *v) {
    (void)user;
    (void)v;
    if (st != STATESTORE_OK) {
        fprintf(stderr, "get: %s\n", msg);
        exit(1);
    }
    pthread_mutex_lock(&mutex);
    int again = remaining > 0;
    if (again) remaining--;
    else outstanding--;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&mutex);
    if (again && statestore_get_async(client, (const uint8_t *)"bench/k", 7, -1, on_get, NULL) != STATESTORE_OK) exit(1);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    long n = argc > 2 ? atol(argv[2]) : 20000;
    statestore_options *o;
    statestore_options_new(&o);
    statestore_options_set_host(o, "127.0.0.1");
    statestore_options_set(o, "port", argv[1]);
    if (statestore_connect(o, &client) != STATESTORE_OK) {
        fprintf(stderr, "%s\n", statestore_last_error_message());
        return 1;
    }
    statestore_options_free(o);
    statestore_set(client, (const uint8_t *)"bench/k", 7, (const uint8_t *)"0123456789abcdef", 16, NULL, NULL);
    uint64_t *lat = malloc((size_t)n * sizeof *lat);
    for (long i = 0; i < n / 10; i++) { /* warm-up */
        statestore_value *v = NULL;
        statestore_get(client, (const uint8_t *)"bench/k", 7, -1, &v);
        statestore_value_free(v);
    }
    for (long i = 0; i < n; i++) {
        statestore_value *v = NULL;
        uint64_t t = now_ns();
        if (statestore_get(client, (const uint8_t *)"bench/k", 7, -1, &v) != STATESTORE_OK) return 1;
        lat[i] = now_ns() - t;
        statestore_value_free(v);
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp);
    printf("c blocking get: p50 %.1f us, p99 %.1f us\n", lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3);

    remaining = n * 2 - 64;
    outstanding = 64;
    uint64_t t0 = now_ns();
    for (int i = 0; i < 64; i++) statestore_get_async(client, (const uint8_t *)"bench/k", 7, -1, on_get, NULL);
    pthread_mutex_lock(&mutex);
    while (outstanding > 0) pthread_cond_wait(&cond, &mutex);
    pthread_mutex_unlock(&mutex);
    double secs = (now_ns() - t0) / 1e9;
    printf("c async get, 64 in flight: %.0f ops/s\n", (double)(n * 2) / secs);
    free(lat);
    statestore_client_free(client);
    return 0;
}
