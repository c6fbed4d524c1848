/* Every duration argument at its extremes: the largest timeouts are no limit (a wait beyond
 * the clock's range never overflows), the largest expiry and TTL are refused as too long
 * before anything is sent, and nothing crashes. */
#include <stdint.h>

#include "check.h"

static void too_long(void) {
    if (strstr(statestore_last_error_message(), "too long") == NULL) {
        fprintf(stderr, "message \"%s\" does not say too long\n", statestore_last_error_message());
        exit(1);
    }
}

int main(void) {
    test_deadline(60);
    char k[128];
    test_key(k, sizeof k, "durations");
    statestore_client *client = test_connect();
    statestore_value *value = NULL;

    /* Request timeouts: the largest values are accepted and the calls complete. */
    statestore_set_options set = {0};
    set.has_timeout = true;
    set.timeout_ms = UINT64_MAX;
    OK(statestore_set(client, K(k), K("v"), &set, NULL));
    OK(statestore_get(client, K(k), INT64_MAX, &value));
    CHECK(value != NULL);
    statestore_value_free(value);

    /* The largest expiry is refused, and nothing was written. */
    char fresh[160];
    snprintf(fresh, sizeof fresh, "%s-expiry", k);
    statestore_set_options expiring = {0};
    expiring.has_expiry = true;
    expiring.expiry_ms = UINT64_MAX;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_set(client, K(fresh), K("v"), &expiring, NULL));
    too_long();
    value = NULL;
    OK(statestore_get(client, K(fresh), -1, &value));
    CHECK(value == NULL);

    /* An observation waits without limit for INT64_MAX ms: the queued event comes back. */
    statestore_observation *observation = NULL;
    OK(statestore_observe(client, K(k), &observation));
    OK(statestore_set(client, K(k), K("w"), NULL, NULL));
    statestore_event *event = NULL;
    OK(statestore_observation_next(observation, INT64_MAX, &event));
    CHECK(event != NULL);
    statestore_event_free(event);
    OK(statestore_observation_free(observation));

    /* Locks, leases, elections: the largest TTL is refused, the largest wait is no limit. */
    char lock_key[160];
    snprintf(lock_key, sizeof lock_key, "%s-lock", k);
    statestore_lock *lock = NULL;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_lock_new(client, K(lock_key), UINT64_MAX, &lock));
    too_long();
    OK(statestore_lock_new(client, K(lock_key), 5000, &lock));
    statestore_lock_guard *guard = NULL;
    OK(statestore_lock_acquire(lock, INT64_MAX, &guard));
    OK(statestore_lock_guard_release(guard));
    OK(statestore_lock_guard_free(guard));
    OK(statestore_lock_free(lock));

    char lease_key[160];
    snprintf(lease_key, sizeof lease_key, "%s-lease", k);
    statestore_lease *lease = NULL;
    OK(statestore_lease_new(client, K(lease_key), K("me"), &lease));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_lease_acquire(lease, UINT64_MAX, 0, NULL));
    too_long();
    OK(statestore_lease_acquire(lease, 5000, INT64_MAX, NULL));
    OK(statestore_lease_free(lease));

    char election_key[160];
    snprintf(election_key, sizeof election_key, "%s-election", k);
    statestore_election *election = NULL;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT,
          statestore_election_new(client, K(election_key), K("me"), UINT64_MAX, &election));
    too_long();
    OK(statestore_election_new(client, K(election_key), K("me"), 5000, &election));
    OK(statestore_election_campaign(election, INT64_MAX, NULL));
    OK(statestore_election_free(election));

    OK(statestore_client_free(client));
    printf("durations ok\n");
    return 0;
}
