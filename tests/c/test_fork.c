/* fork(): what the header promises a child may do. The child cannot use the parent's client
 * (STATESTORE_ERR_RUNTIME), may free it, and may connect and use a client of its own; the
 * parent keeps working. */
#include <sys/wait.h>

#include "check.h"

typedef struct {
    waiter w;
    int calls;
    statestore_status status;
} outcome;

static void on_get(void *user, statestore_status st, const char *msg, const statestore_value *v) {
    outcome *o = user;
    CHECK(v == NULL && msg != NULL);
    o->calls++;
    o->status = st;
    waiter_add(&o->w);
}

static void on_updated(void *user, statestore_status st, const char *msg, const statestore_value *v) {
    on_get(user, st, msg, v);
}

static int32_t never_update(void *user, const statestore_value *old, statestore_buffer *out) {
    (void)user; (void)old; (void)out;
    CHECK(0); /* the lock of the parent's client is never taken in the child */
    return STATESTORE_UPDATE_ABORT;
}

int main(void) {
    test_deadline(60);
    char k[128];
    test_key(k, sizeof k, "fork");
    statestore_client *parent = test_connect();
    OK(statestore_set(parent, K(k), K("before"), NULL, NULL));
    statestore_observation *obs = NULL;
    OK(statestore_observe(parent, K(k), &obs));
    statestore_lease *lease = NULL;
    OK(statestore_lease_new(parent, K(k), K("me"), &lease));
    char lock_name[128];
    test_key(lock_name, sizeof lock_name, "fork-lock");
    statestore_lock *lock = NULL;
    OK(statestore_lock_new(parent, K(lock_name), 5000, &lock));

    /* The child reports through a pipe rather than its exit status: under valgrind the child
     * exits with valgrind's error code, because core deliberately leaks the runtime inherited
     * from the parent (its threads do not exist in the child, so it cannot be shut down). */
    int report[2];
    CHECK(pipe(report) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        statestore_value *v = NULL;
        FAILS(STATESTORE_ERR_RUNTIME, statestore_get(parent, K(k), -1, &v));
        CHECK(v == NULL);
        bool held = true;
        FAILS(STATESTORE_ERR_RUNTIME, statestore_lease_try_acquire(lease, 1000, &held, NULL, NULL));
        FAILS(STATESTORE_ERR_RUNTIME, statestore_lock_update(lock, K(k), 1000, never_update, NULL, NULL));
        /* async calls are accepted and complete once with RUNTIME */
        outcome got = {WAITER_INIT, 0, STATESTORE_OK};
        OK(statestore_get_async(parent, K(k), -1, on_get, &got));
        waiter_wait(&got.w, 1);
        CHECK(got.calls == 1 && got.status == STATESTORE_ERR_RUNTIME);
        outcome updated = {WAITER_INIT, 0, STATESTORE_OK};
        OK(statestore_lock_update_async(lock, K(k), 1000, never_update, on_updated, &updated));
        waiter_wait(&updated.w, 1);
        CHECK(updated.calls == 1 && updated.status == STATESTORE_ERR_RUNTIME);
        /* closing the parent's client is refused at once: its connection is the parent's */
        FAILS(STATESTORE_ERR_RUNTIME, statestore_close(parent));
        statestore_event *event = NULL;
        statestore_status st = statestore_observation_next(obs, 100, &event);
        fprintf(stderr, "child: parent's observation next -> %s\n", statestore_status_name(st));
        CHECK(st != STATESTORE_OK && event == NULL);
        statestore_client *own = test_connect();
        OK(statestore_get(own, K(k), -1, &v));
        CHECK(v != NULL && v->len == 6 && memcmp(v->data, "before", 6) == 0);
        statestore_value_free(v);
        OK(statestore_set(own, K(k), K("child"), NULL, NULL));
        OK(statestore_client_free(own));
        OK(statestore_observation_free(obs));
        OK(statestore_lease_free(lease));
        OK(statestore_lock_free(lock));
        OK(statestore_client_free(parent));
        CHECK(got.calls == 1 && updated.calls == 1);
        CHECK(write(report[1], "ok", 2) == 2);
        _exit(0);
    }
    close(report[1]);
    char said[3] = {0};
    CHECK(read(report[0], said, 2) == 2 && strcmp(said, "ok") == 0);
    close(report[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status)); /* not killed by a signal */
    statestore_value *v = NULL;
    statestore_event *event = NULL;
    OK(statestore_observation_next(obs, 10000, &event)); /* the child's write, seen by the parent */
    CHECK(event->kind == STATESTORE_EVENT_SET && event->value_len == 5 && memcmp(event->value, "child", 5) == 0);
    statestore_event_free(event);
    OK(statestore_observation_free(obs));
    OK(statestore_lease_free(lease));
    OK(statestore_lock_free(lock));
    OK(statestore_get(parent, K(k), -1, &v));
    CHECK(v != NULL && v->len == 5 && memcmp(v->data, "child", 5) == 0);
    statestore_value_free(v);
    OK(statestore_delete(parent, K(k), NULL, NULL));
    OK(statestore_client_free(parent));
    puts("test_fork: ok");
    return 0;
}
