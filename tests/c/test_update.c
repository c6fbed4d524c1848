/* statestore_lock_update_async(): every action of the update function, the thread it runs on,
 * concurrent updates serialised by the lock, a lock lost before the write (fencing), an
 * invalid action, and close while an update waits for the lock or runs its update function:
 * the callback runs exactly once every time, after the update function. */
#include <stdatomic.h>

#include "check.h"

static statestore_client *client;
static statestore_lock *lock;
static char lock_name[128], key[128];

typedef struct {
    int action;               /* what the update function returns */
    const char *write;        /* what it writes (NULL: nothing) */
    int updates, callbacks;   /* how often each ran */
    int callback_saw_updates; /* `updates` when the callback ran */
    pthread_t update_thread, callback_thread;
    bool had_old;
    char old[64];
    statestore_status status;
    bool has_written;
    char written[64];
    waiter *done;
    /* hooks run inside the update function */
    void (*inside)(void *);
    void *inside_arg;
} call;

static int32_t update(void *user, const statestore_value *old, statestore_buffer *out) {
    call *c = user;
    c->updates++;
    c->update_thread = pthread_self();
    c->had_old = old != NULL;
    if (old) snprintf(c->old, sizeof c->old, "%.*s", (int)old->len, (const char *)old->data);
    if (c->inside) c->inside(c->inside_arg);
    if (c->write) OK(statestore_buffer_set(out, (const uint8_t *)c->write, strlen(c->write)));
    return c->action;
}

static void on_updated(void *user, statestore_status st, const char *msg, const statestore_value *written) {
    call *c = user;
    c->callbacks++;
    c->callback_saw_updates = c->updates;
    c->callback_thread = pthread_self();
    c->status = st;
    CHECK((st == STATESTORE_OK) == (msg == NULL));
    c->has_written = written != NULL;
    if (written) snprintf(c->written, sizeof c->written, "%.*s", (int)written->len, (const char *)written->data);
    waiter_add(c->done);
}

static void read_key(char *buf, size_t size, bool *found) {
    statestore_value *v = NULL;
    OK(statestore_get(client, K(key), -1, &v));
    *found = v != NULL;
    buf[0] = 0;
    if (v) snprintf(buf, size, "%.*s", (int)v->len, (const char *)v->data);
    statestore_value_free(v);
}

/* Starts an update with `c` and waits for its callback. */
static void run(statestore_lock *l, call *c) {
    waiter done = WAITER_INIT;
    c->done = &done;
    OK(statestore_lock_update_async(l, K(key), 30000, update, on_updated, c));
    waiter_wait(&done, 1);
}

/* ---- the lock lost before the write: another holder takes it and writes first */
static statestore_client *other_client;

static void take_over(void *arg) {
    (void)arg;
    /* the lock's key vanishes (as if it expired), a second holder takes the lock and writes
     * the key with its newer fencing token */
    OK(statestore_delete(client, K(lock_name), NULL, NULL));
    statestore_lock *theirs = NULL;
    statestore_lock_guard *guard = NULL;
    OK(statestore_lock_new(other_client, K(lock_name), 30000, &theirs));
    OK(statestore_lock_try_acquire(theirs, &guard));
    CHECK(guard != NULL);
    const char *token = NULL;
    OK(statestore_lock_guard_fencing_token(guard, &token));
    statestore_set_options opts = {0};
    opts.fencing_token = token;
    OK(statestore_set(other_client, K(key), K("theirs"), &opts, NULL));
    OK(statestore_lock_guard_release(guard));
    OK(statestore_lock_guard_free(guard));
    OK(statestore_lock_free(theirs));
}

/* ---- close from inside the update function */
static void close_client(void *arg) { OK(statestore_close((statestore_client *)arg)); }

int main(void) {
    test_deadline(120);
    test_key(lock_name, sizeof lock_name, "update-lock");
    test_key(key, sizeof key, "update-key");
    client = test_connect();
    OK(statestore_lock_new(client, K(lock_name), 30000, &lock));
    char now[64];
    bool found = false;

    /* WRITE on an absent key: the update function sees NULL, then the callback the value */
    call w = {.action = STATESTORE_UPDATE_WRITE, .write = "1"};
    run(lock, &w);
    CHECK(w.updates == 1 && w.callbacks == 1 && w.callback_saw_updates == 1);
    CHECK(w.status == STATESTORE_OK && w.has_written && strcmp(w.written, "1") == 0);
    CHECK(!w.had_old);
    /* both on the library's dispatcher thread, not the caller's */
    CHECK(!pthread_equal(w.update_thread, pthread_self()));
    CHECK(pthread_equal(w.update_thread, w.callback_thread));
    read_key(now, sizeof now, &found);
    CHECK(found && strcmp(now, "1") == 0);

    /* WRITE again: the old value is passed in */
    call w2 = {.action = STATESTORE_UPDATE_WRITE, .write = "2"};
    run(lock, &w2);
    CHECK(w2.status == STATESTORE_OK && w2.had_old && strcmp(w2.old, "1") == 0 && strcmp(w2.written, "2") == 0);

    /* ABORT: CANCELLED, nothing written, the lock released (the next update gets it) */
    call a = {.action = STATESTORE_UPDATE_ABORT, .write = "never"};
    run(lock, &a);
    CHECK(a.updates == 1 && a.callbacks == 1 && a.status == STATESTORE_ERR_CANCELLED && !a.has_written);
    read_key(now, sizeof now, &found);
    CHECK(found && strcmp(now, "2") == 0);

    /* not an action: INVALID_ARGUMENT through the callback, nothing written */
    call bad = {.action = 7, .write = "never"};
    run(lock, &bad);
    CHECK(bad.updates == 1 && bad.callbacks == 1 && bad.status == STATESTORE_ERR_INVALID_ARGUMENT);
    read_key(now, sizeof now, &found);
    CHECK(found && strcmp(now, "2") == 0);

    /* DELETE: written NULL, the key is gone */
    call d = {.action = STATESTORE_UPDATE_DELETE};
    run(lock, &d);
    CHECK(d.updates == 1 && d.callbacks == 1 && d.status == STATESTORE_OK && !d.has_written);
    CHECK(d.had_old && strcmp(d.old, "2") == 0);
    read_key(now, sizeof now, &found);
    CHECK(!found);

    /* the lock's own key is refused before the call starts: no update function, no callback */
    {
        call own = {.action = STATESTORE_UPDATE_WRITE, .write = "x"};
        FAILS(STATESTORE_ERR_INVALID_ARGUMENT,
              statestore_lock_update_async(lock, K(lock_name), 30000, update, on_updated, &own));
        CHECK(strstr(statestore_last_error_message(), "own key") != NULL);
        CHECK(own.updates == 0 && own.callbacks == 0);
    }

    /* 8 updates in flight at once, each an increment: the lock serialises them */
    {
        enum { N = 8 };
        static char texts[N][8];
        call calls[N];
        waiter done = WAITER_INIT;
        for (int i = 0; i < N; i++) {
            memset(&calls[i], 0, sizeof calls[i]);
            calls[i].action = STATESTORE_UPDATE_WRITE;
            calls[i].done = &done;
            snprintf(texts[i], sizeof texts[i], "x%d", i);
            calls[i].write = texts[i];
            OK(statestore_lock_update_async(lock, K(key), 30000, update, on_updated, &calls[i]));
        }
        waiter_wait(&done, N);
        /* every update saw the value of the one before it: a chain of N writes */
        int absent = 0;
        for (int i = 0; i < N; i++) {
            CHECK(calls[i].updates == 1 && calls[i].callbacks == 1 && calls[i].status == STATESTORE_OK);
            if (!calls[i].had_old) absent++;
        }
        CHECK(absent == 1);
        for (int i = 0; i < N; i++) {
            if (!calls[i].had_old) continue;
            int seen = 0;
            for (int j = 0; j < N; j++) seen += strcmp(calls[i].old, texts[j]) == 0 && j != i;
            CHECK(seen == 1);
        }
    }

    /* the lock lost before the write: the newer holder's fencing token wins; nothing written */
    {
        other_client = test_connect();
        statestore_lock *no_renew = NULL;
        OK(statestore_lock_new(client, K(lock_name), 30000, &no_renew));
        OK(statestore_lock_set_auto_renew(no_renew, false));
        call lost = {.action = STATESTORE_UPDATE_WRITE, .write = "mine", .inside = take_over};
        run(no_renew, &lost);
        fprintf(stderr, "lost lock: %s\n", statestore_status_name(lost.status));
        CHECK(lost.updates == 1 && lost.callbacks == 1 && !lost.has_written);
        CHECK(lost.status == STATESTORE_ERR_FENCING_TOKEN_LOWER_VERSION || lost.status == STATESTORE_ERR_NOT_HELD);
        read_key(now, sizeof now, &found);
        CHECK(found && strcmp(now, "theirs") == 0);
        OK(statestore_lock_free(no_renew));
        OK(statestore_client_free(other_client));
    }

    /* close while the update waits for the lock: CLOSED, once, before close returns; the
     * update function never runs */
    {
        statestore_client *closing = test_connect();
        statestore_lock *mine = NULL, *blocker = NULL;
        statestore_lock_guard *held = NULL;
        OK(statestore_lock_new(client, K(lock_name), 30000, &blocker));
        OK(statestore_lock_try_acquire(blocker, &held));
        CHECK(held != NULL);
        OK(statestore_lock_new(closing, K(lock_name), 30000, &mine));
        waiter done = WAITER_INIT;
        call waiting = {.action = STATESTORE_UPDATE_WRITE, .write = "never", .done = &done};
        OK(statestore_lock_update_async(mine, K(key), -1, update, on_updated, &waiting));
        OK(statestore_close(closing));
        CHECK(waiting.callbacks == 1 && waiting.updates == 0 && waiting.status == STATESTORE_ERR_CLOSED);
        FAILS(STATESTORE_ERR_CLOSED, statestore_lock_update(mine, K(key), 1000, update, &waiting, NULL));
        OK(statestore_lock_guard_release(held));
        OK(statestore_lock_guard_free(held));
        OK(statestore_lock_free(blocker));
        OK(statestore_lock_free(mine));
        OK(statestore_client_free(closing));
        CHECK(waiting.callbacks == 1);
    }

    /* close from inside the update function: the write is not made, CLOSED once */
    {
        /* a lock of its own: the closed client cannot release it, so it stays taken */
        char inside_lock[128];
        test_key(inside_lock, sizeof inside_lock, "update-lock-closed-inside");
        statestore_client *closing = test_connect();
        statestore_lock *mine = NULL;
        OK(statestore_lock_new(closing, K(inside_lock), 30000, &mine));
        waiter done = WAITER_INIT;
        call inflight = {.action = STATESTORE_UPDATE_WRITE, .write = "never", .done = &done,
                         .inside = close_client, .inside_arg = closing};
        OK(statestore_lock_update_async(mine, K(key), 30000, update, on_updated, &inflight));
        waiter_wait(&done, 1);
        CHECK(inflight.updates == 1 && inflight.callbacks == 1 && inflight.status == STATESTORE_ERR_CLOSED);
        OK(statestore_lock_free(mine));
        OK(statestore_client_free(closing));
        CHECK(inflight.callbacks == 1);
        read_key(now, sizeof now, &found);
        CHECK(found && strcmp(now, "theirs") == 0);
    }

    /* the blocking twin is unchanged: it runs the update function on the calling thread */
    call b = {.action = STATESTORE_UPDATE_ABORT};
    FAILS(STATESTORE_ERR_CANCELLED, statestore_lock_update(lock, K(key), 30000, update, &b, NULL));
    CHECK(b.updates == 1 && pthread_equal(b.update_thread, pthread_self()));

    OK(statestore_lock_free(lock));
    OK(statestore_client_free(client));
    puts("test_update: ok");
    return 0;
}
