/* An update function that waits for its own lock (a nested update or acquire of the same lock,
 * through the same or another handle of the same name) fails at once with INVALID_ARGUMENT
 * instead of waiting for itself forever; the outer update then completes. */
#include "check.h"

struct nested {
    statestore_lock *lock;
    statestore_lock *same;
    char key[160];
    statestore_status update_status;
    statestore_status acquire_status;
};

static int32_t inner_update(void *u, const statestore_value *old, statestore_buffer *out) {
    (void)u; (void)old; (void)out;
    CHECK(0); /* never called: the nested update is refused before it starts */
    return STATESTORE_UPDATE_ABORT;
}

static int32_t outer_update(void *u, const statestore_value *old, statestore_buffer *out) {
    (void)old;
    struct nested *n = u;
    n->update_status = statestore_lock_update(n->lock, K(n->key), -1, inner_update, NULL, NULL);
    statestore_lock_guard *guard = NULL;
    n->acquire_status = statestore_lock_acquire(n->same, -1, &guard);
    CHECK(guard == NULL);
    OK(statestore_buffer_set(out, K("outer")));
    return STATESTORE_UPDATE_WRITE;
}

int main(void) {
    test_deadline(60);
    char k[128];
    test_key(k, sizeof k, "reentry");
    statestore_client *client = test_connect();
    struct nested n = {0};
    snprintf(n.key, sizeof n.key, "%s-other", k);
    OK(statestore_lock_new(client, K(k), 5000, &n.lock));
    OK(statestore_lock_new(client, K(k), 5000, &n.same));
    char target[160];
    snprintf(target, sizeof target, "%s-target", k);
    statestore_value *written = NULL;
    OK(statestore_lock_update(n.lock, K(target), -1, outer_update, &n, &written));
    CHECK(n.update_status == STATESTORE_ERR_INVALID_ARGUMENT);
    CHECK(n.acquire_status == STATESTORE_ERR_INVALID_ARGUMENT);
    CHECK(written != NULL);
    statestore_value_free(written);
    /* Outside the function the lock is an ordinary lock again. */
    statestore_lock_guard *guard = NULL;
    OK(statestore_lock_acquire(n.same, 5000, &guard));
    OK(statestore_lock_guard_free(guard));
    OK(statestore_lock_free(n.same));
    OK(statestore_lock_free(n.lock));
    OK(statestore_client_free(client));
    printf("reentry ok\n");
    return 0;
}
