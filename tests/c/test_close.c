/* Close with calls in flight: every callback runs exactly once, before close returns, with
 * OK or CLOSED; a blocked thread gets CLOSED; later calls get CLOSED; free closes too. */
#include <stdatomic.h>

#include "check.h"

#define SETS 200
#define WAITERS 8

static atomic_int calls[SETS + WAITERS];
static atomic_int bad_status;

static void on_set(void *user, statestore_status st, const char *msg, const statestore_set_result *r) {
    (void)r;
    (void)msg;
    intptr_t i = (intptr_t)user;
    atomic_fetch_add(&calls[i], 1);
    if (st != STATESTORE_OK && st != STATESTORE_ERR_CLOSED) atomic_fetch_add(&bad_status, 1);
}

static void on_guard(void *user, statestore_status st, const char *msg, statestore_lock_guard *guard) {
    (void)msg;
    intptr_t i = (intptr_t)user;
    atomic_fetch_add(&calls[i], 1);
    /* the lock is held by another client for the whole test: only CLOSED can come */
    if (st != STATESTORE_ERR_CLOSED || guard != NULL) atomic_fetch_add(&bad_status, 1);
}

static statestore_lock *blocked_lock;
static void *blocked(void *arg) {
    statestore_lock_guard *guard = NULL;
    *(statestore_status *)arg = statestore_lock_acquire(blocked_lock, -1, &guard);
    CHECK(guard == NULL);
    return NULL;
}

static waiter started = WAITER_INIT;
static void on_started(void *user, statestore_status st, const char *msg, const statestore_set_result *r) {
    (void)user;
    (void)st;
    (void)msg;
    (void)r;
    waiter_add(&started);
}

int main(void) {
    test_deadline(90);
    char k[128], lock_name[128];
    test_key(k, sizeof k, "inflight");
    test_key(lock_name, sizeof lock_name, "held");

    /* another client holds the lock throughout */
    statestore_client *owner = test_connect();
    statestore_lock *owner_lock = NULL;
    statestore_lock_guard *owner_guard = NULL;
    OK(statestore_lock_new(owner, K(lock_name), 30000, &owner_lock));
    OK(statestore_lock_acquire(owner_lock, 10000, &owner_guard));

    statestore_client *client = test_connect();
    statestore_lock *lock = NULL;
    OK(statestore_lock_new(client, K(lock_name), 30000, &lock));
    blocked_lock = lock;
    statestore_status blocked_status = STATESTORE_OK;
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, blocked, &blocked_status) == 0);

    for (intptr_t i = 0; i < WAITERS; i++)
        OK(statestore_lock_acquire_async(lock, -1, on_guard, (void *)(SETS + i)));
    for (intptr_t i = 0; i < SETS; i++)
        OK(statestore_set_async(client, K(k), K("v"), NULL, on_set, (void *)i));
    /* one round trip after the burst, so that the waiters are waiting */
    OK(statestore_set_async(client, K(k), K("w"), NULL, on_started, NULL));
    waiter_wait(&started, 1);

    OK(statestore_close(client));
    /* every callback already ran, exactly once */
    for (int i = 0; i < SETS + WAITERS; i++) {
        if (atomic_load(&calls[i]) != 1) {
            fprintf(stderr, "call %d completed %d times\n", i, atomic_load(&calls[i]));
            exit(1);
        }
    }
    CHECK(atomic_load(&bad_status) == 0);
    pthread_join(thread, NULL);
    CHECK(blocked_status == STATESTORE_ERR_CLOSED);

    /* after close */
    FAILS(STATESTORE_ERR_CLOSED, statestore_set(client, K(k), K("late"), NULL, NULL));
    atomic_store(&calls[0], 0);
    OK(statestore_set_async(client, K(k), K("late"), NULL, on_set, (void *)0));
    /* the callback still comes, with CLOSED; close waits for it */
    OK(statestore_close(client));
    CHECK(atomic_load(&calls[0]) == 1);

    /* free with calls in flight behaves like close */
    statestore_client *second = test_connect();
    for (intptr_t i = 0; i < SETS; i++) {
        atomic_store(&calls[i], 0);
        OK(statestore_set_async(second, K(k), K("v"), NULL, on_set, (void *)i));
    }
    OK(statestore_client_free(second));
    for (int i = 0; i < SETS; i++) CHECK(atomic_load(&calls[i]) == 1);
    CHECK(atomic_load(&bad_status) == 0);

    OK(statestore_lock_free(lock));
    OK(statestore_client_free(client));
    OK(statestore_lock_guard_release(owner_guard));
    OK(statestore_lock_guard_free(owner_guard));
    OK(statestore_lock_free(owner_lock));
    OK(statestore_delete(owner, K(k), NULL, NULL));
    OK(statestore_client_free(owner));
    puts("test_close: ok");
    return 0;
}
