/* Helpers of the C tests: assertions that name the failing call, the server address from
 * the environment, and a deadline for every test program. */
#ifndef STATESTORE_TEST_CHECK_H
#define STATESTORE_TEST_CHECK_H

#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "statestore.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

/* A call that must succeed. */
#define OK(call)                                                                         \
    do {                                                                                 \
        statestore_status st_ = (call);                                                  \
        if (st_ != STATESTORE_OK) {                                                      \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,          \
                    statestore_status_name(st_), statestore_last_error_message());      \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* A call that must fail with `code`. */
#define FAILS(code, call)                                                                \
    do {                                                                                 \
        statestore_status st_ = (call);                                                  \
        if (st_ != (code)) {                                                             \
            fprintf(stderr, "%s:%d: %s -> %s (%s), expected %s\n", __FILE__, __LINE__,   \
                    #call, statestore_status_name(st_), statestore_last_error_message(), \
                    statestore_status_name(code));                                       \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#define K(s) (const uint8_t *)(s), strlen(s)

static void deadline_expired(int sig) {
    (void)sig;
    static const char text[] = "test deadline expired\n";
    (void)!write(2, text, sizeof text - 1);
    _exit(3);
}

/* Every test program ends within `seconds` (valgrind runs get a multiple). */
static inline void test_deadline(unsigned seconds) {
    const char *factor = getenv("STATESTORE_TEST_SLOWDOWN");
    unsigned f = factor ? (unsigned)atoi(factor) : 1;
    signal(SIGALRM, deadline_expired);
    alarm(seconds * (f ? f : 1));
}

/* Options for the test server (STATESTORE_TEST_PORT), with a unique key prefix per run. */
static inline statestore_options *test_options(void) {
    statestore_options *options = NULL;
    const char *port = getenv("STATESTORE_TEST_PORT");
    CHECK(port != NULL);
    OK(statestore_options_new(&options));
    OK(statestore_options_set_host(options, "127.0.0.1"));
    OK(statestore_options_set(options, "port", port));
    OK(statestore_options_set_default_timeout_ms(options, 10000));
    return options;
}

static inline statestore_client *test_connect(void) {
    statestore_options *options = test_options();
    statestore_client *client = NULL;
    OK(statestore_connect(options, &client));
    OK(statestore_options_free(options));
    CHECK(client != NULL);
    return client;
}

/* A key unique to this process: the tests share one server. */
static inline const char *test_key(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "ctest/%ld/%s", (long)getpid(), name);
    return buf;
}

/* A loopback TCP socket bound to a free port (written to `*port`); listening if `backlog` > 0.
 * For the tests that put something of their own between the library and the server. */
static inline int test_loopback_socket(int backlog, int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
    if (backlog > 0) CHECK(listen(fd, backlog) == 0);
    socklen_t len = sizeof addr;
    CHECK(getsockname(fd, (struct sockaddr *)&addr, &len) == 0);
    *port = ntohs(addr.sin_port);
    return fd;
}

/* Waiting for callbacks: a counter under a mutex. */
typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int count;
} waiter;

#define WAITER_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}

static inline void waiter_add(waiter *w) {
    pthread_mutex_lock(&w->mutex);
    w->count++;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mutex);
}

/* Waits until the count reaches `n` (the program's deadline bounds the wait). */
static inline void waiter_wait(waiter *w, int n) {
    pthread_mutex_lock(&w->mutex);
    while (w->count < n) pthread_cond_wait(&w->cond, &w->mutex);
    pthread_mutex_unlock(&w->mutex);
}

#endif
