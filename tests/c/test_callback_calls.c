/* What callbacks may call. A log callback may call no function that takes a handle: a free,
 * a close or any other call made there fails with STATESTORE_ERR_RUNTIME and changes
 * nothing, so the client stays open and its handle valid. A completion callback may free the
 * client it was called for. */
#include <stdint.h>

#include "check.h"

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static statestore_client *target = NULL; /* what the log callback tries to free */
static int tried = 0;
static statestore_status freed, closed, got, stopped;
static char freed_message[512];
static waiter logged = WAITER_INIT;

static void on_log(void *user, int32_t level, const char *where, const char *message) {
    (void)user; (void)level; (void)where; (void)message;
    pthread_mutex_lock(&mutex);
    if (target != NULL && !tried) {
        tried = 1;
        freed = statestore_client_free(target);
        snprintf(freed_message, sizeof freed_message, "%s", statestore_last_error_message());
        closed = statestore_close(target);
        statestore_value *value = NULL;
        got = statestore_get(target, K("any"), -1, &value);
        statestore_value_free(value);
        stopped = statestore_set_log_callback(STATESTORE_LOG_TRACE, NULL, NULL);
        waiter_add(&logged);
    }
    pthread_mutex_unlock(&mutex);
}

typedef struct {
    statestore_client *client;
    statestore_status freed;
    waiter done;
} freeing;

static void free_in_callback(void *user, statestore_status status, const char *message,
                             const statestore_set_result *result) {
    (void)message; (void)result;
    freeing *f = user;
    CHECK(status == STATESTORE_OK);
    f->freed = statestore_client_free(f->client);
    waiter_add(&f->done);
}

int main(void) {
    test_deadline(60);
    char k[128];
    test_key(k, sizeof k, "callback-calls");

    /* inside a log callback */
    statestore_client *client = test_connect();
    OK(statestore_set_log_callback(STATESTORE_LOG_TRACE, on_log, NULL));
    pthread_mutex_lock(&mutex);
    target = client;
    pthread_mutex_unlock(&mutex);
    /* Closing a client that holds a lease logs the loss (debug level). */
    statestore_client *other = test_connect();
    statestore_lease *lease = NULL;
    OK(statestore_lease_new(other, K(k), K("me"), &lease));
    OK(statestore_lease_acquire(lease, 5000, -1, NULL));
    OK(statestore_close(other));
    waiter_wait(&logged, 1); /* the program's deadline bounds the wait */
    OK(statestore_set_log_callback(STATESTORE_LOG_TRACE, NULL, NULL));
    OK(statestore_lease_free(lease));
    OK(statestore_client_free(other));
    /* the refused calls changed nothing: the client is open and its handle valid */
    OK(statestore_set(client, K(k), K("still open"), NULL, NULL));
    if (freed != STATESTORE_ERR_RUNTIME || strstr(freed_message, "log callback") == NULL) {
        fprintf(stderr, "client_free in a log callback: %s (%s), expected RUNTIME naming the log callback\n",
                statestore_status_name(freed), freed_message);
        return 1;
    }
    CHECK(closed == STATESTORE_ERR_RUNTIME);
    CHECK(got == STATESTORE_ERR_RUNTIME);
    CHECK(stopped == STATESTORE_ERR_RUNTIME);
    OK(statestore_client_free(client));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_client_free(client));

    /* inside a completion callback (on the dispatcher) the client can be freed */
    freeing f = {test_connect(), STATESTORE_ERR_INTERNAL, WAITER_INIT};
    OK(statestore_set_async(f.client, K(k), K("v"), NULL, free_in_callback, &f));
    waiter_wait(&f.done, 1);
    CHECK(f.freed == STATESTORE_OK);
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_client_free(f.client));

    puts("test_callback_calls: ok");
    return 0;
}
