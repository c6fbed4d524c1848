/* Bad input never crashes: NULL everywhere, zero and huge lengths, stale and foreign
 * handles, handles freed twice, bad enum values; each gives INVALID_ARGUMENT naming the
 * argument. Freeing NULL is a no-op. */
#include <stdint.h>

#include "check.h"

#define BAD(call) FAILS(STATESTORE_ERR_INVALID_ARGUMENT, call)

static void on_set(void *u, statestore_status s, const char *m, const statestore_set_result *r) {
    (void)u; (void)s; (void)m; (void)r;
    CHECK(0); /* never called for rejected arguments */
}

static int32_t noop_update(void *u, const statestore_value *old, statestore_buffer *out) {
    (void)u; (void)old; (void)out;
    return 7; /* not an action */
}

static void on_updated(void *u, statestore_status s, const char *m, const statestore_value *v) {
    (void)u; (void)s; (void)m; (void)v;
    CHECK(0); /* never called for rejected arguments */
}

static int32_t never_update(void *u, const statestore_value *old, statestore_buffer *out) {
    (void)u; (void)old; (void)out;
    CHECK(0); /* never called for rejected arguments */
    return STATESTORE_UPDATE_ABORT;
}

static void on_deleted(void *u, statestore_status s, const char *m, const statestore_delete_result *r) {
    (void)u; (void)s; (void)m; (void)r;
    CHECK(0); /* never called for rejected arguments */
}

static void on_got(void *u, statestore_status s, const char *m, const statestore_value *v) {
    (void)u; (void)s; (void)m; (void)v;
    CHECK(0); /* never called for rejected arguments */
}

/* Keeps the buffer it was given, to use it after the call. */
static int32_t keep_buffer(void *u, const statestore_value *old, statestore_buffer *out) {
    (void)old;
    *(statestore_buffer **)u = out;
    return STATESTORE_UPDATE_ABORT;
}

static void on_log(void *u, int32_t level, const char *target, const char *message) {
    (void)u; (void)level; (void)target; (void)message;
}

static void names(const char *argument) {
    if (strstr(statestore_last_error_message(), argument) == NULL) {
        fprintf(stderr, "message \"%s\" does not name %s\n", statestore_last_error_message(), argument);
        exit(1);
    }
}

int main(void) {
    test_deadline(60);
    char k[128];
    test_key(k, sizeof k, "bad");
    statestore_value *value = NULL;
    statestore_client *client = NULL;

    /* frees of NULL */
    OK(statestore_client_free(NULL));
    OK(statestore_options_free(NULL));
    OK(statestore_observation_free(NULL));
    OK(statestore_lock_free(NULL));
    OK(statestore_lock_guard_free(NULL));
    OK(statestore_lease_free(NULL));
    OK(statestore_election_free(NULL));
    statestore_value_free(NULL);
    statestore_set_result_free(NULL);
    statestore_delete_result_free(NULL);
    statestore_key_list_free(NULL);
    statestore_event_free(NULL);
    statestore_string_free(NULL);

    /* options */
    BAD(statestore_options_new(NULL));
    names("options");
    BAD(statestore_connect(NULL, &client));
    names("options");
    CHECK(client == NULL);
    statestore_options *options = test_options();
    BAD(statestore_connect(options, NULL));
    names("client");
    BAD(statestore_options_set_host(options, NULL));
    names("host");
    BAD(statestore_options_set(options, "no_such_option", "1"));
    names("no_such_option");
    BAD(statestore_options_set(options, "keep_alive", "soon"));
    names("keep_alive");
    BAD(statestore_options_set(options, NULL, "1"));
    names("name");
    BAD(statestore_options_set_reconnect_backoff_ms(options, 0, 10));
    BAD(statestore_options_set_reconnect_backoff_ms(options, 100, 10));
    BAD(statestore_options_set_port(NULL, 1));
    names("options");
    OK(statestore_options_set_client_id(options, "bad#id"));
    BAD(statestore_connect(options, &client)); /* validated at connect */
    names("client");
    OK(statestore_options_free(options));

    client = test_connect();

    /* NULL client, stale client, foreign pointer */
    BAD(statestore_get(NULL, K(k), -1, &value));
    names("client");
    int not_a_handle = 0;
    BAD(statestore_get((statestore_client *)&not_a_handle, K(k), -1, &value));
    names("client");
    BAD(statestore_get((statestore_client *)(uintptr_t)0x0100000000000001ULL, K(k), -1, &value));

    /* keys and values */
    BAD(statestore_get(client, NULL, 3, -1, &value));
    names("key");
    BAD(statestore_get(client, (const uint8_t *)"", 0, -1, &value));
    names("key");
    BAD(statestore_get(client, K(k), -1, NULL));
    names("value");
    BAD(statestore_get(client, (const uint8_t *)k, SIZE_MAX, -1, &value));
    names("key_len");
    BAD(statestore_set(client, K(k), NULL, 5, NULL, NULL));
    names("value");
    BAD(statestore_set(client, K(k), (const uint8_t *)"v", (size_t)1 << 40, NULL, NULL));
    names("value_len");
    BAD(statestore_set_async(client, NULL, 0, K("v"), NULL, on_set, NULL));
    BAD(statestore_vdel(client, K(k), NULL, 2, NULL, NULL));
    BAD(statestore_keys(client, NULL, 0, NULL));
    BAD(statestore_observe(client, K(k), NULL));
    names("observation");
    BAD(statestore_unobserve(client, NULL, 0));

    /* bad per-call options: refused by the _async call itself, as by its blocking twin */
    statestore_set_options zero_expiry = {0};
    zero_expiry.has_expiry = true;
    statestore_set_options huge_expiry = {0};
    huge_expiry.has_expiry = true;
    huge_expiry.expiry_ms = UINT64_MAX;
    statestore_set_options zero_set_timeout = {0};
    zero_set_timeout.has_timeout = true;
    statestore_delete_options zero_delete_timeout = {0};
    zero_delete_timeout.has_timeout = true;
    BAD(statestore_set(client, K(k), K("v"), &zero_expiry, NULL));
    names("expiry");
    BAD(statestore_set_async(client, K(k), K("v"), &zero_expiry, on_set, NULL));
    names("expiry");
    BAD(statestore_set_async(client, K(k), K("v"), &huge_expiry, on_set, NULL));
    names("expiry");
    BAD(statestore_set_async(client, K(k), K("v"), &zero_set_timeout, on_set, NULL));
    names("timeout");
    BAD(statestore_delete_async(client, K(k), &zero_delete_timeout, on_deleted, NULL));
    names("timeout");
    BAD(statestore_vdel_async(client, K(k), K("v"), &zero_delete_timeout, on_deleted, NULL));
    names("timeout");
    BAD(statestore_get(client, K(k), 0, &value));
    names("timeout_ms");
    BAD(statestore_get_async(client, K(k), 0, on_got, NULL));
    names("timeout_ms");

    /* locks, leases, elections */
    statestore_lock *lock = NULL;
    BAD(statestore_lock_new(client, K(k), 0, &lock));
    names("ttl_ms");
    BAD(statestore_lock_new(client, NULL, 0, 1000, &lock));
    OK(statestore_lock_new(client, K(k), 1000, &lock));
    BAD(statestore_lock_acquire(lock, 10, NULL));
    names("guard");
    BAD(statestore_lock_update(lock, K("other"), 1000, NULL, NULL, NULL));
    names("update");
    char upd[128];
    test_key(upd, sizeof upd, "bad-update");
    BAD(statestore_lock_update(lock, K(upd), 10000, noop_update, NULL, NULL));
    BAD(statestore_lock_update_async(lock, K(upd), 1000, never_update, NULL, NULL));
    names("callback");
    BAD(statestore_lock_update_async(lock, K(upd), 1000, NULL, on_updated, NULL));
    names("update");
    BAD(statestore_lock_update_async(lock, NULL, 0, 1000, never_update, on_updated, NULL));
    names("key");
    BAD(statestore_lock_update_async(NULL, K(upd), 1000, never_update, on_updated, NULL));
    names("lock");
    BAD(statestore_lock_update(lock, K(k), 1000, never_update, NULL, NULL)); /* its own key */
    names("own key");
    BAD(statestore_lock_update_async(lock, K(k), 1000, never_update, on_updated, NULL));
    names("own key");
    /* an update buffer is checked like every handle: a foreign pointer, or one kept from an
     * earlier update function, is refused and never written through */
    uint64_t not_a_buffer[4] = {0};
    BAD(statestore_buffer_set((statestore_buffer *)not_a_buffer, (const uint8_t *)"x", 1));
    names("buffer");
    CHECK(not_a_buffer[0] == 0 && not_a_buffer[1] == 0 && not_a_buffer[2] == 0 && not_a_buffer[3] == 0);
    statestore_buffer *kept = NULL;
    FAILS(STATESTORE_ERR_CANCELLED, statestore_lock_update(lock, K(upd), 10000, keep_buffer, &kept, NULL));
    CHECK(kept != NULL);
    BAD(statestore_buffer_set(kept, (const uint8_t *)"x", 1));
    names("buffer");
    BAD(statestore_buffer_set((statestore_buffer *)lock, (const uint8_t *)"x", 1));
    names("buffer");
    BAD(statestore_lock_guard_release(NULL));
    BAD(statestore_lock_guard_fencing_token(NULL, NULL));
    BAD(statestore_buffer_set(NULL, (const uint8_t *)"x", 1));
    BAD(statestore_lease_new(client, K(k), NULL, 0, NULL));
    BAD(statestore_lease_acquire(NULL, 1000, 0, NULL));
    BAD(statestore_election_new(client, K(k), K("c"), 0, NULL));
    BAD(statestore_observation_next(NULL, 0, NULL));
    BAD(statestore_observation_set_callback(NULL, NULL, NULL));
    BAD(statestore_set_log_callback(99, on_log, NULL));
    names("level");

    /* a handle of another type is refused, not misused */
    BAD(statestore_get((statestore_client *)lock, K(k), -1, &value));
    names("client");

    /* freed twice: the second free is detected */
    OK(statestore_lock_free(lock));
    BAD(statestore_lock_free(lock));
    names("lock");
    BAD(statestore_lock_acquire(lock, 10, NULL));
    BAD(statestore_lock_update_async(lock, K(k), 1000, never_update, on_updated, NULL));
    names("lock");

    OK(statestore_client_free(client));
    BAD(statestore_client_free(client));
    BAD(statestore_get(client, K(k), -1, &value));
    names("client");
    puts("test_badinput: ok");
    return 0;
}
