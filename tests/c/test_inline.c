/* STATESTORE_CALLBACKS_INLINE: completions run on the library thread that completed the call
 * (not the dispatcher), still exactly once and never inside the _async function; blocking
 * functions (also of a closed client), close and free are refused there; the update function
 * of a lock update still runs on the dispatcher; close completes every pending call once. */
#include <stdatomic.h>

#include "check.h"

#define CALLS 200

static pthread_t dispatcher; /* the thread of a default client's callbacks */
static statestore_client *inline_client;
static statestore_client *closed_client;
static char key[128];

typedef struct {
    waiter *done;
    atomic_int calls;
    statestore_status status;
    pthread_t thread;
    /* what a blocking call (of the callback's client, of a closed client), a close and a free
     * returned inside the callback */
    statestore_status blocking, blocking_closed, closed, freed;
    bool probe;
} call;

static void on_get(void *user, statestore_status st, const char *msg, const statestore_value *v) {
    call *c = user;
    c->thread = pthread_self();
    c->status = st;
    CHECK((st == STATESTORE_OK) == (msg == NULL) && (v == NULL || st == STATESTORE_OK));
    if (c->probe) {
        statestore_value *value = NULL;
        c->blocking = statestore_get(inline_client, K(key), -1, &value);
        statestore_value_free(value);
        value = NULL;
        c->blocking_closed = statestore_get(closed_client, K(key), -1, &value);
        statestore_value_free(value);
        c->closed = statestore_close(inline_client);
        c->freed = statestore_client_free(inline_client);
    }
    atomic_fetch_add(&c->calls, 1);
    waiter_add(c->done);
}

static pthread_t update_thread;

static int32_t update(void *user, const statestore_value *old, statestore_buffer *out) {
    (void)user;
    (void)old;
    update_thread = pthread_self();
    OK(statestore_buffer_set(out, (const uint8_t *)"u", 1));
    return STATESTORE_UPDATE_WRITE;
}

static void on_updated(void *user, statestore_status st, const char *msg, const statestore_value *v) {
    (void)msg;
    (void)v;
    call *c = user;
    c->status = st;
    c->thread = pthread_self();
    atomic_fetch_add(&c->calls, 1);
    waiter_add(c->done);
}

int main(void) {
    test_deadline(120);
    test_key(key, sizeof key, "inline");

    /* the dispatcher's thread, from a default client */
    statestore_client *plain = test_connect();
    OK(statestore_set(plain, K(key), K("v"), NULL, NULL));
    {
        waiter done = WAITER_INIT;
        call c = {.done = &done};
        OK(statestore_get_async(plain, K(key), -1, on_get, &c));
        waiter_wait(&done, 1);
        CHECK(c.status == STATESTORE_OK);
        dispatcher = c.thread;
    }

    statestore_options *options = test_options();
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_options_set_callback_mode(options, 3));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_options_set_callback_mode(NULL, STATESTORE_CALLBACKS_INLINE));
    OK(statestore_options_set_callback_mode(options, STATESTORE_CALLBACKS_INLINE));
    OK(statestore_connect(options, &inline_client));

    /* many calls: each completes once, none on the dispatcher, none inside the _async call */
    {
        static call calls[CALLS];
        waiter done = WAITER_INIT;
        for (int i = 0; i < CALLS; i++) {
            calls[i].done = &done;
            OK(statestore_get_async(inline_client, K(key), -1, on_get, &calls[i]));
        }
        waiter_wait(&done, CALLS);
        for (int i = 0; i < CALLS; i++) {
            CHECK(atomic_load(&calls[i].calls) == 1 && calls[i].status == STATESTORE_OK);
            CHECK(!pthread_equal(calls[i].thread, dispatcher));
            CHECK(!pthread_equal(calls[i].thread, pthread_self()));
        }
    }

    /* a lock update: the update function on the dispatcher, the completion inline */
    {
        char lock_name[128];
        test_key(lock_name, sizeof lock_name, "inline-lock");
        statestore_lock *lock = NULL;
        OK(statestore_lock_new(inline_client, K(lock_name), 10000, &lock));
        waiter done = WAITER_INIT;
        call c = {.done = &done};
        char protected_key[128];
        test_key(protected_key, sizeof protected_key, "inline-protected");
        OK(statestore_lock_update_async(lock, K(protected_key), 10000, update, on_updated, &c));
        waiter_wait(&done, 1);
        CHECK(c.status == STATESTORE_OK);
        CHECK(pthread_equal(update_thread, dispatcher));
        CHECK(!pthread_equal(c.thread, dispatcher));
        OK(statestore_lock_free(lock));
    }

    /* close with calls in flight: each completes once (OK or CLOSED) before close returns */
    {
        static call calls[CALLS];
        waiter done = WAITER_INIT;
        statestore_client *closing = NULL;
        OK(statestore_connect(options, &closing));
        OK(statestore_options_free(options));
        for (int i = 0; i < CALLS; i++) {
            calls[i].done = &done;
            OK(statestore_get_async(closing, K(key), -1, on_get, &calls[i]));
        }
        OK(statestore_close(closing));
        for (int i = 0; i < CALLS; i++) {
            CHECK(atomic_load(&calls[i].calls) == 1);
            CHECK(calls[i].status == STATESTORE_OK || calls[i].status == STATESTORE_ERR_CLOSED);
        }
        /* after close: refused before anything runs, the callback still exactly once, and
         * not inside the _async function (the dispatcher takes it) */
        call late = {.done = &done};
        OK(statestore_get_async(closing, K(key), -1, on_get, &late));
        waiter_wait(&done, CALLS + 1);
        CHECK(atomic_load(&late.calls) == 1 && late.status == STATESTORE_ERR_CLOSED);
        CHECK(!pthread_equal(late.thread, pthread_self()));
        OK(statestore_client_free(closing));
    }

    /* inside an inline callback: blocking calls, close and free are refused */
    closed_client = test_connect();
    OK(statestore_close(closed_client));
    {
        waiter done = WAITER_INIT;
        call c = {.done = &done, .probe = true};
        OK(statestore_get_async(inline_client, K(key), -1, on_get, &c));
        waiter_wait(&done, 1);
        CHECK(c.status == STATESTORE_OK);
        CHECK(c.blocking == STATESTORE_ERR_RUNTIME);
        CHECK(c.blocking_closed == STATESTORE_ERR_RUNTIME);
        CHECK(c.closed == STATESTORE_ERR_RUNTIME);
        CHECK(c.freed == STATESTORE_ERR_RUNTIME);
    }
    /* the client is intact: still usable, then closed and freed from here */
    statestore_value *v = NULL;
    OK(statestore_get(inline_client, K(key), -1, &v));
    CHECK(v != NULL && v->len == 1);
    statestore_value_free(v);
    OK(statestore_delete(inline_client, K(key), NULL, NULL));
    OK(statestore_client_free(inline_client));
    OK(statestore_client_free(plain));
    OK(statestore_client_free(closed_client));
    puts("test_inline: ok");
    return 0;
}
