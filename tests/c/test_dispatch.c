/* STATESTORE_CALLBACKS_LOOP: a client's _async completions wait until the program runs them
 * with statestore_dispatch(), on its own thread, when statestore_completion_fd() is readable;
 * lock updates run there too; close runs the ones still to come; the calls refuse clients of
 * other modes and a dispatch inside a callback. */
#include <poll.h>

#include "check.h"

#define CALLS 100

static pthread_t main_thread;
static statestore_client *client;
static int ran;        /* callbacks run (only ever on the main thread: no lock needed) */
static int failed;     /* callbacks whose status was not OK */
static int off_thread; /* callbacks that ran on another thread */
static statestore_status nested = STATESTORE_OK;
static bool probe_nested;

static void seen(statestore_status st) {
    if (!pthread_equal(pthread_self(), main_thread)) off_thread++;
    if (st != STATESTORE_OK) failed++;
    ran++;
}

static void on_set(void *user, statestore_status st, const char *msg, const statestore_set_result *r) {
    (void)user;
    (void)msg;
    (void)r;
    seen(st);
}

static void on_get(void *user, statestore_status st, const char *msg, const statestore_value *v) {
    (void)msg;
    seen(st);
    if (st == STATESTORE_OK && user != NULL) {
        CHECK(v != NULL && v->len == 1 && v->data[0] == *(const char *)user);
    }
    if (probe_nested) {
        size_t count = 0;
        nested = statestore_dispatch(client, &count);
        probe_nested = false;
    }
}

static bool update_on_main;

static int32_t update(void *user, const statestore_value *old, statestore_buffer *out) {
    (void)user;
    (void)old;
    update_on_main = pthread_equal(pthread_self(), main_thread);
    OK(statestore_buffer_set(out, (const uint8_t *)"u", 1));
    return STATESTORE_UPDATE_WRITE;
}

static void on_updated(void *user, statestore_status st, const char *msg, const statestore_value *v) {
    (void)user;
    (void)msg;
    (void)v;
    seen(st);
}

/* Waits (poll, with the test's deadline as the only limit) until the descriptor is readable. */
static void wait_readable(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n;
    do {
        n = poll(&p, 1, -1);
    } while (n < 0);
    CHECK(n == 1 && (p.revents & POLLIN));
}

/* The loop: poll the descriptor, dispatch, until `total` callbacks have run. */
static void run_until(int fd, int total) {
    while (ran < total) {
        wait_readable(fd);
        size_t count = 0;
        OK(statestore_dispatch(client, &count));
    }
    CHECK(ran == total);
}

int main(void) {
    test_deadline(120);
    main_thread = pthread_self();
    char key[128];
    test_key(key, sizeof key, "dispatch");

    /* a client of another mode has no descriptor and nothing to dispatch */
    statestore_client *plain = test_connect();
    int fd = -1;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_completion_fd(plain, &fd));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_dispatch(plain, NULL));
    CHECK(statestore_completion_fd(NULL, &fd) != STATESTORE_OK);
    OK(statestore_client_free(plain));

    statestore_options *options = test_options();
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_options_set_callback_mode(options, 3));
    OK(statestore_options_set_callback_mode(options, STATESTORE_CALLBACKS_LOOP));
    OK(statestore_connect(options, &client));
    OK(statestore_options_free(options));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_completion_fd(client, NULL));
    OK(statestore_completion_fd(client, &fd));
    CHECK(fd >= 0);
    int again = -1;
    OK(statestore_completion_fd(client, &again));
    CHECK(again == fd);

    /* nothing ready: returns at once with 0 */
    size_t count = 99;
    OK(statestore_dispatch(client, &count));
    CHECK(count == 0);

    /* completions wait for the loop: the descriptor turns readable, nothing has run */
    OK(statestore_set_async(client, K(key), K("a"), NULL, on_set, NULL));
    wait_readable(fd);
    CHECK(ran == 0);
    run_until(fd, 1);

    /* many calls in flight, all completed on this thread by dispatch */
    static const char value = 'a';
    for (int i = 0; i < CALLS; i++) {
        OK(statestore_get_async(client, K(key), -1, on_get, (void *)&value));
    }
    run_until(fd, 1 + CALLS);
    CHECK(failed == 0 && off_thread == 0);

    /* a lock update: the update function and its completion run in the loop too */
    statestore_lock *lock = NULL;
    char lock_name[128];
    OK(statestore_lock_new(client, K(test_key(lock_name, sizeof lock_name, "dispatch-lock")), 10000, &lock));
    OK(statestore_lock_update_async(lock, K(key), -1, update, on_updated, NULL));
    run_until(fd, 2 + CALLS);
    CHECK(update_on_main && failed == 0 && off_thread == 0);
    OK(statestore_lock_free(lock));

    /* a dispatch inside a callback is refused */
    probe_nested = true;
    OK(statestore_get_async(client, K(key), -1, on_get, NULL));
    run_until(fd, 3 + CALLS);
    CHECK(nested == STATESTORE_ERR_RUNTIME);

    /* close runs every callback still to come on this thread, before it returns */
    for (int i = 0; i < CALLS; i++) {
        OK(statestore_get_async(client, K(key), -1, on_get, NULL));
    }
    OK(statestore_close(client));
    CHECK(ran == 3 + 2 * CALLS);
    CHECK(off_thread == 0);
    OK(statestore_dispatch(client, &count));
    CHECK(count == 0);
    OK(statestore_client_free(client));
    printf("test_dispatch: ok (%d callbacks, all on the loop's thread)\n", ran);
    return 0;
}
