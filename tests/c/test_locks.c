/* Locks under contention from several threads (never two holders, fenced writes, lock
 * update), the async acquire, leases (try, token, holder, loss) and elections. */
#include <stdatomic.h>

#include "check.h"

#define THREADS 4
#define ROUNDS 4

static statestore_client *client;
static statestore_lock *lock;
static char lock_name[128], guarded[128], counter_key[128];
static atomic_int holders, max_holders;

static int read_int(const char *key) {
    statestore_value *v = NULL;
    OK(statestore_get(client, K(key), -1, &v));
    int n = 0;
    if (v) {
        char buf[32] = {0};
        CHECK(v->len < sizeof buf);
        memcpy(buf, v->data, v->len);
        n = atoi(buf);
    }
    statestore_value_free(v);
    return n;
}

static void *contender(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        statestore_lock_guard *guard = NULL;
        OK(statestore_lock_acquire(lock, 30000, &guard));
        CHECK(guard != NULL);
        int now = atomic_fetch_add(&holders, 1) + 1;
        int seen = atomic_load(&max_holders);
        while (now > seen && !atomic_compare_exchange_weak(&max_holders, &seen, now)) {}
        const char *token = NULL;
        OK(statestore_lock_guard_fencing_token(guard, &token));
        bool held = false;
        OK(statestore_lock_guard_is_held(guard, &held));
        CHECK(held);
        /* read-modify-write of a fenced key */
        int n = read_int(guarded);
        char buf[32];
        snprintf(buf, sizeof buf, "%d", n + 1);
        statestore_set_options opts = {0};
        opts.fencing_token = token;
        OK(statestore_set(client, K(guarded), K(buf), &opts, NULL));
        atomic_fetch_sub(&holders, 1);
        OK(statestore_lock_guard_release(guard));
        FAILS(STATESTORE_ERR_NOT_HELD, statestore_lock_guard_release(guard));
        OK(statestore_lock_guard_free(guard));
    }
    return NULL;
}

static int32_t increment(void *user, const statestore_value *old, statestore_buffer *out) {
    int *calls = user;
    (*calls)++;
    int n = 0;
    if (old) {
        char buf[32] = {0};
        memcpy(buf, old->data, old->len < 31 ? old->len : 31);
        n = atoi(buf);
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%d", n + 1);
    OK(statestore_buffer_set(out, (const uint8_t *)buf, strlen(buf)));
    return STATESTORE_UPDATE_WRITE;
}

static int32_t abort_update(void *user, const statestore_value *old, statestore_buffer *out) {
    (void)user;
    (void)old;
    (void)out;
    return STATESTORE_UPDATE_ABORT;
}

static void *updater(void *arg) {
    int calls = 0;
    for (int i = 0; i < ROUNDS; i++) {
        OK(statestore_lock_update(lock, K(counter_key), 30000, increment, &calls, NULL));
    }
    CHECK(calls == ROUNDS);
    (void)arg;
    return NULL;
}

static waiter done = WAITER_INIT;
typedef struct {
    statestore_status status;
    statestore_lock_guard *guard;
    char token[256];
    int calls;
} acquired;

static void on_guard(void *user, statestore_status st, const char *msg, statestore_lock_guard *guard) {
    acquired *a = user;
    (void)msg;
    a->calls++;
    a->status = st;
    a->guard = guard;
    waiter_add(&done);
}

static void on_token(void *user, statestore_status st, const char *msg, const char *token) {
    acquired *a = user;
    (void)msg;
    a->calls++;
    a->status = st;
    if (token) snprintf(a->token, sizeof a->token, "%s", token);
    waiter_add(&done);
}

int main(void) {
    test_deadline(120);
    test_key(lock_name, sizeof lock_name, "lock");
    test_key(guarded, sizeof guarded, "guarded");
    test_key(counter_key, sizeof counter_key, "counter");
    client = test_connect();
    OK(statestore_lock_new(client, K(lock_name), 5000, &lock));

    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&threads[i], NULL, contender, NULL) == 0);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    CHECK(atomic_load(&max_holders) == 1);
    CHECK(read_int(guarded) == THREADS * ROUNDS);

    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&threads[i], NULL, updater, NULL) == 0);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    CHECK(read_int(counter_key) == THREADS * ROUNDS);
    statestore_value *written = NULL;
    int calls = 0;
    OK(statestore_lock_update(lock, K(counter_key), 30000, increment, &calls, &written));
    CHECK(calls == 1 && written != NULL && written->len == 2 && memcmp(written->data, "17", 2) == 0);
    statestore_value_free(written);
    statestore_value *lock_holder = NULL;
    OK(statestore_lock_holder(lock, &lock_holder));
    CHECK(lock_holder == NULL);
    /* the counter is fenced now: a write without the lock is refused */
    FAILS(STATESTORE_ERR_FENCING_TOKEN_REQUIRED, statestore_set(client, K(counter_key), K("0"), NULL, NULL));
    FAILS(STATESTORE_ERR_CANCELLED, statestore_lock_update(lock, K(counter_key), 30000, abort_update, NULL, NULL));
    CHECK(read_int(counter_key) == THREADS * ROUNDS + 1);
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_lock_update(lock, K(lock_name), 30000, increment, NULL, NULL));

    /* try_acquire while held elsewhere, and the async acquire that waits for the release */
    statestore_lock_guard *g1 = NULL, *g2 = NULL;
    OK(statestore_lock_try_acquire(lock, &g1));
    CHECK(g1 != NULL);
    OK(statestore_lock_try_acquire(lock, &g2));
    CHECK(g2 == NULL);
    OK(statestore_lock_holder(lock, &lock_holder));
    CHECK(lock_holder != NULL && lock_holder->len > 0);
    statestore_value_free(lock_holder);
    FAILS(STATESTORE_ERR_TIMEOUT, statestore_lock_acquire(lock, 0, &g2));
    acquired later = {0};
    OK(statestore_lock_acquire_async(lock, 30000, on_guard, &later));
    OK(statestore_lock_guard_release(g1));
    waiter_wait(&done, 1);
    CHECK(later.calls == 1 && later.status == STATESTORE_OK && later.guard != NULL);
    OK(statestore_lock_guard_release(later.guard));
    OK(statestore_lock_guard_free(later.guard));
    OK(statestore_lock_guard_free(g1));

    /* leases */
    char lease_key[128];
    test_key(lease_key, sizeof lease_key, "lease");
    statestore_lease *alice = NULL, *bob = NULL;
    OK(statestore_lease_new(client, K(lease_key), K("alice"), &alice));
    OK(statestore_lease_new(client, K(lease_key), K("bob"), &bob));
    char *token = NULL;
    OK(statestore_lease_acquire(alice, 5000, 10000, &token));
    CHECK(token != NULL);
    char *again = NULL;
    OK(statestore_lease_fencing_token(alice, &again));
    CHECK(again != NULL && strcmp(token, again) == 0);
    statestore_string_free(again);
    bool held = false, acquired_now = true;
    OK(statestore_lease_is_held(alice, &held));
    CHECK(held);
    statestore_value *holder = NULL;
    OK(statestore_lease_try_acquire(bob, 5000, &acquired_now, &again, &holder));
    CHECK(!acquired_now && again == NULL);
    CHECK(holder != NULL && holder->len == 5 && memcmp(holder->data, "alice", 5) == 0);
    statestore_value_free(holder);
    int32_t state = -1, reason = -1;
    OK(statestore_lease_get_state(alice, &state, &again, &reason));
    CHECK(state == STATESTORE_LEASE_HELD && again != NULL && strcmp(again, token) == 0 && reason == STATESTORE_LOSS_NONE);
    statestore_string_free(again);
    OK(statestore_lease_get_state(bob, &state, NULL, NULL));
    CHECK(state == STATESTORE_LEASE_NOT_HELD);
    OK(statestore_lease_holder(bob, &holder));
    CHECK(holder != NULL && holder->len == 5 && memcmp(holder->data, "alice", 5) == 0);
    statestore_value_free(holder);
    acquired bobs = {0};
    OK(statestore_lease_acquire_async(bob, 5000, 30000, on_token, &bobs));
    bool released = false;
    OK(statestore_lease_release(alice, &released));
    CHECK(released);
    waiter_wait(&done, 2);
    CHECK(bobs.calls == 1 && bobs.status == STATESTORE_OK && strlen(bobs.token) > 0);
    CHECK(strcmp(bobs.token, token) != 0);
    statestore_string_free(token);
    OK(statestore_lease_release(bob, NULL));
    OK(statestore_lease_is_held(bob, &held));
    CHECK(!held);

    /* freeing a held lease, or a guard, releases in the background: the key is deleted */
    statestore_observation *watch = NULL;
    OK(statestore_observe(client, K(lease_key), &watch));
    OK(statestore_lease_acquire(alice, 30000, 10000, NULL));
    OK(statestore_lease_free(alice));
    alice = NULL;
    statestore_event *gone = NULL;
    do {
        statestore_event_free(gone);
        gone = NULL;
        OK(statestore_observation_next(watch, 10000, &gone));
    } while (gone->kind != STATESTORE_EVENT_DELETE);
    statestore_event_free(gone);
    gone = NULL;
    OK(statestore_observation_free(watch));
    statestore_lock_guard *dropped = NULL;
    OK(statestore_lock_try_acquire(lock, &dropped));
    CHECK(dropped != NULL);
    OK(statestore_observe(client, K(lock_name), &watch));
    OK(statestore_lock_guard_free(dropped));
    do {
        statestore_event_free(gone);
        gone = NULL;
        OK(statestore_observation_next(watch, 10000, &gone));
    } while (gone->kind != STATESTORE_EVENT_DELETE);
    statestore_event_free(gone);
    OK(statestore_observation_free(watch));

    /* elections */
    char election_key[128];
    test_key(election_key, sizeof election_key, "election");
    statestore_election *a = NULL, *b = NULL;
    OK(statestore_election_new(client, K(election_key), K("node-a"), 5000, &a));
    OK(statestore_election_new(client, K(election_key), K("node-b"), 5000, &b));
    statestore_observation *leaders = NULL;
    OK(statestore_election_observe(b, &leaders));
    OK(statestore_election_campaign(a, 10000, &token));
    CHECK(token != NULL);
    statestore_string_free(token);
    bool leader = false;
    OK(statestore_election_is_leader(a, &leader));
    CHECK(leader);
    FAILS(STATESTORE_ERR_TIMEOUT, statestore_election_campaign(b, 0, NULL));
    bool elected = true;
    statestore_value *current = NULL;
    OK(statestore_election_try_campaign(b, &elected, NULL, &current));
    CHECK(!elected && current != NULL && current->len == 6 && memcmp(current->data, "node-a", 6) == 0);
    statestore_value_free(current);
    statestore_value *name = NULL;
    OK(statestore_election_leader(b, &name));
    CHECK(name != NULL && name->len == 6 && memcmp(name->data, "node-a", 6) == 0);
    statestore_value_free(name);
    /* the observer sees "a" elected (possibly after an initial vacant/elected report) */
    int elected_a = 0;
    for (int i = 0; i < 8 && !elected_a; i++) {
        statestore_event *event = NULL;
        OK(statestore_observation_next(leaders, 10000, &event));
        if (event->kind == STATESTORE_EVENT_ELECTED && event->has_holder && event->holder_len == 6 &&
            memcmp(event->holder, "node-a", 6) == 0)
            elected_a = 1;
        statestore_event_free(event);
    }
    CHECK(elected_a);
    acquired bcampaign = {0};
    OK(statestore_election_campaign_async(b, 30000, on_token, &bcampaign));
    OK(statestore_election_resign(a));
    waiter_wait(&done, 3);
    CHECK(bcampaign.calls == 1 && bcampaign.status == STATESTORE_OK);
    char *btoken = NULL;
    OK(statestore_election_fencing_token(b, &btoken));
    CHECK(btoken != NULL && strcmp(btoken, bcampaign.token) == 0);
    statestore_string_free(btoken);
    OK(statestore_observation_free(leaders));

    /* loss: closing the client ends b's leadership with a LOST event (pull style) */
    statestore_observation *loss = NULL;
    OK(statestore_election_watch_loss(b, &loss));
    OK(statestore_close(client));
    statestore_event *event = NULL;
    OK(statestore_observation_next(loss, 10000, &event));
    CHECK(event->kind == STATESTORE_EVENT_LOST && event->loss_reason == STATESTORE_LOSS_CLIENT_CLOSED);
    CHECK(event->loss_message != NULL);
    statestore_event_free(event);
    FAILS(STATESTORE_ERR_CLOSED, statestore_observation_next(loss, 1000, &event));
    OK(statestore_observation_free(loss));

    OK(statestore_election_free(a));
    OK(statestore_election_free(b));
    OK(statestore_lease_free(alice));
    OK(statestore_lease_free(bob));
    OK(statestore_lock_free(lock));
    OK(statestore_client_free(client));
    puts("test_locks: ok");
    return 0;
}
