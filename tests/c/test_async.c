/* The _async twins: every callback runs exactly once, on a library thread, with borrowed
 * results; connect_async hands over the client; blocking calls work inside a callback. */
#include "check.h"

static waiter done = WAITER_INIT;
static pthread_t main_thread;

typedef struct {
    int calls;
    statestore_status status;
    int applied;
    char value[64];
    int present;
    int outcome;
    size_t nkeys;
    statestore_client *client;
} result;

static void on_connect(void *user, statestore_status st, const char *msg, statestore_client *client) {
    result *r = user;
    CHECK(!pthread_equal(pthread_self(), main_thread));
    CHECK((st == STATESTORE_OK) == (msg == NULL));
    r->calls++;
    r->status = st;
    r->client = client;
    waiter_add(&done);
}

static void on_set(void *user, statestore_status st, const char *msg, const statestore_set_result *res) {
    result *r = user;
    (void)msg;
    CHECK(!pthread_equal(pthread_self(), main_thread));
    r->calls++;
    r->status = st;
    r->applied = res != NULL && res->applied && res->version != NULL;
    waiter_add(&done);
}

static void on_get(void *user, statestore_status st, const char *msg, const statestore_value *v) {
    result *r = user;
    (void)msg;
    r->calls++;
    r->status = st;
    r->present = v != NULL;
    if (v) {
        CHECK(v->len < sizeof r->value);
        memcpy(r->value, v->data, v->len);
        r->value[v->len] = 0;
    }
    waiter_add(&done);
}

static void on_delete(void *user, statestore_status st, const char *msg, const statestore_delete_result *d) {
    result *r = user;
    (void)msg;
    r->calls++;
    r->status = st;
    r->outcome = d ? d->outcome : -1;
    waiter_add(&done);
}

static void on_keys(void *user, statestore_status st, const char *msg, const statestore_key_list *keys) {
    result *r = user;
    (void)msg;
    r->calls++;
    r->status = st;
    r->nkeys = keys ? keys->count : 0;
    waiter_add(&done);
}

static void on_done(void *user, statestore_status st, const char *msg) {
    result *r = user;
    (void)msg;
    r->calls++;
    r->status = st;
    waiter_add(&done);
}

/* A callback that makes a blocking call on the same client. */
typedef struct {
    statestore_client *client;
    const char *key;
    int calls;
    int nested_ok;
} nested;

static void on_set_then_get(void *user, statestore_status st, const char *msg, const statestore_set_result *res) {
    nested *n = user;
    (void)msg;
    (void)res;
    n->calls++;
    statestore_value *v = NULL;
    n->nested_ok = st == STATESTORE_OK &&
                   statestore_get(n->client, K(n->key), -1, &v) == STATESTORE_OK && v != NULL &&
                   v->len == 6 && memcmp(v->data, "nested", 6) == 0;
    statestore_value_free(v);
    waiter_add(&done);
}

/* A callback that closes and frees its own client: must neither deadlock nor crash. */
typedef struct {
    statestore_client *client;
    statestore_status close_status, free_status;
    int calls;
} closer;

static void on_set_then_close(void *user, statestore_status st, const char *msg, const statestore_set_result *res) {
    closer *c = user;
    (void)st;
    (void)msg;
    (void)res;
    c->calls++;
    c->close_status = statestore_close(c->client);
    c->free_status = statestore_client_free(c->client);
    waiter_add(&done);
}

/* Holds the dispatcher (callbacks run one at a time) until the main thread opens the gate. */
static waiter holding = WAITER_INIT, gate = WAITER_INIT;
static void on_hold(void *user, statestore_status st, const char *msg, const statestore_value *v) {
    CHECK(user == NULL && st == STATESTORE_OK && msg == NULL && v == NULL);
    waiter_add(&holding);
    waiter_wait(&gate, 1);
}

static waiter later = WAITER_INIT;
static void on_late(void *user, statestore_status st, const char *msg, const statestore_set_result *res) {
    (void)msg;
    (void)res;
    *(statestore_status *)user = st;
    waiter_add(&later);
}

/* Log records arrive through the callback. */
static waiter lost_logged = WAITER_INIT;
static void on_log(void *user, int32_t level, const char *target, const char *message) {
    (void)user;
    CHECK(level >= STATESTORE_LOG_ERROR && level <= STATESTORE_LOG_TRACE);
    CHECK(target != NULL && message != NULL);
    if (strstr(message, "lease lost") != NULL) waiter_add(&lost_logged);
}

int main(void) {
    test_deadline(60);
    main_thread = pthread_self();
    char k[128], pattern[128];
    test_key(k, sizeof k, "async");
    test_key(pattern, sizeof pattern, "as*");
    int expected = 0;

    statestore_options *options = test_options();
    result conn = {0};
    OK(statestore_connect_async(options, on_connect, &conn));
    OK(statestore_options_free(options)); /* the options were copied */
    waiter_wait(&done, ++expected);
    CHECK(conn.calls == 1 && conn.status == STATESTORE_OK && conn.client != NULL);
    statestore_client *client = conn.client;

    result set = {0}, get = {0}, keys = {0}, vdel = {0}, del = {0}, miss = {0};
    statestore_set_options opts = {0};
    opts.has_expiry = true;
    opts.expiry_ms = 60000;
    OK(statestore_set_async(client, K(k), K("green"), &opts, on_set, &set));
    waiter_wait(&done, ++expected);
    CHECK(set.calls == 1 && set.status == STATESTORE_OK && set.applied);

    OK(statestore_get_async(client, K(k), -1, on_get, &get));
    OK(statestore_keys_async(client, K(pattern), on_keys, &keys));
    OK(statestore_vdel_async(client, K(k), K("other"), NULL, on_delete, &vdel));
    expected += 3;
    waiter_wait(&done, expected);
    CHECK(get.calls == 1 && get.status == STATESTORE_OK && get.present && strcmp(get.value, "green") == 0);
    CHECK(keys.calls == 1 && keys.status == STATESTORE_OK && keys.nkeys == 1);
    CHECK(vdel.calls == 1 && vdel.status == STATESTORE_OK && vdel.outcome == STATESTORE_VALUE_MISMATCH);

    OK(statestore_delete_async(client, K(k), NULL, on_delete, &del));
    waiter_wait(&done, ++expected);
    CHECK(del.calls == 1 && del.outcome == STATESTORE_DELETED);
    OK(statestore_get_async(client, K(k), -1, on_get, &miss));
    waiter_wait(&done, ++expected);
    CHECK(miss.calls == 1 && miss.status == STATESTORE_OK && !miss.present);

    /* an error reaches the callback with its code and message */
    result refused = {0};
    statestore_set_options fenced = {0};
    char lockkey[128];
    test_key(lockkey, sizeof lockkey, "async-lock");
    statestore_set_result *lock = NULL;
    OK(statestore_set(client, K(lockkey), K("me"), NULL, &lock));
    fenced.fencing_token = lock->version;
    OK(statestore_set(client, K(k), K("fenced"), &fenced, NULL));
    OK(statestore_set_async(client, K(k), K("unfenced"), NULL, on_set, &refused));
    waiter_wait(&done, ++expected);
    CHECK(refused.calls == 1 && refused.status == STATESTORE_ERR_FENCING_TOKEN_REQUIRED && !refused.applied);
    statestore_delete_options dopts = {lock->version, false, 0};
    OK(statestore_delete(client, K(k), &dopts, NULL));
    OK(statestore_delete(client, K(lockkey), NULL, NULL));
    statestore_set_result_free(lock);

    /* blocking call from inside a callback works */
    nested n = {client, k, 0, 0};
    OK(statestore_set_async(client, K(k), K("nested"), NULL, on_set_then_get, &n));
    waiter_wait(&done, ++expected);
    CHECK(n.calls == 1 && n.nested_ok);

    /* unobserve_async */
    result unobs = {0};
    OK(statestore_unobserve_async(client, K(k), on_done, &unobs));
    waiter_wait(&done, ++expected);
    CHECK(unobs.calls == 1 && unobs.status == STATESTORE_OK);
    OK(statestore_delete(client, K(k), NULL, NULL));

    /* argument errors are returned, and the callback never runs */
    result never = {0};
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_get_async(client, NULL, 3, -1, on_get, &never));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_get_async(client, K(k), -1, NULL, &never));

    /* a connection refused reaches the callback */
    statestore_options *bad = NULL;
    OK(statestore_options_new(&bad));
    OK(statestore_options_set_port(bad, 1));
    OK(statestore_options_set_default_timeout_ms(bad, 2000));
    result refused_conn = {0};
    OK(statestore_connect_async(bad, on_connect, &refused_conn));
    waiter_wait(&done, ++expected);
    CHECK(refused_conn.calls == 1 && refused_conn.status != STATESTORE_OK && refused_conn.client == NULL);
    OK(statestore_options_free(bad));

    OK(statestore_client_free(client));
    CHECK(never.calls == 0);

    /* close and free from inside a callback, with another call still pending behind it */
    closer c = {test_connect(), STATESTORE_OK, STATESTORE_OK, 0};
    statestore_status late_status = STATESTORE_OK;
    /* the first callback may not run (and free the client) before the second call is made */
    statestore_client *holder = test_connect();
    OK(statestore_get_async(holder, K(k), -1, on_hold, NULL));
    waiter_wait(&holding, 1);
    OK(statestore_set_async(c.client, K(k), K("x"), NULL, on_set_then_close, &c));
    OK(statestore_set_async(c.client, K(k), K("y"), NULL, on_late, &late_status));
    waiter_add(&gate);
    waiter_wait(&done, ++expected);
    waiter_wait(&later, 1);
    CHECK(c.calls == 1 && c.close_status == STATESTORE_OK && c.free_status == STATESTORE_OK);
    CHECK(late_status == STATESTORE_OK || late_status == STATESTORE_ERR_CLOSED);
    OK(statestore_client_free(holder));

    /* the log callback gets the library's records */
    statestore_client *c2 = test_connect();
    statestore_status logs = statestore_set_log_callback(STATESTORE_LOG_TRACE, on_log, NULL);
    CHECK(logs == STATESTORE_OK || logs == STATESTORE_ERR_RUNTIME);
    if (logs == STATESTORE_OK) {
        /* closing a client that holds a lease logs the loss at debug level */
        statestore_client *logged = test_connect();
        statestore_lease *lease = NULL;
        char lease_key[128];
        test_key(lease_key, sizeof lease_key, "logged-lease");
        OK(statestore_lease_new(logged, K(lease_key), K("me"), &lease));
        OK(statestore_lease_acquire(lease, 10000, 10000, NULL));
        OK(statestore_close(logged));
        waiter_wait(&lost_logged, 1); /* the program's deadline bounds the wait */
        OK(statestore_set_log_callback(STATESTORE_LOG_TRACE, NULL, NULL));
        OK(statestore_lease_free(lease));
        OK(statestore_client_free(logged));
        OK(statestore_delete(c2, K(lease_key), NULL, NULL));
    }
    OK(statestore_client_free(c2));
    puts("test_async: ok");
    return 0;
}
