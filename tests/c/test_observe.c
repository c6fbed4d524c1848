/* Notifications in both styles: pull with next(timeout) and push with a callback; the
 * callback's final NULL call; observe_async; unobserve ends observations. */
#include "check.h"

typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int kinds[16];
    char values[16][16];
    int count;
    int ended;
} events;

static void on_event(void *user, const statestore_event *event) {
    events *e = user;
    pthread_mutex_lock(&e->mutex);
    if (event == NULL) {
        e->ended++;
    } else {
        CHECK(e->ended == 0); /* nothing after the end */
        CHECK(e->count < 16);
        e->kinds[e->count] = event->kind;
        if (event->has_value) {
            CHECK(event->value_len < 16);
            memcpy(e->values[e->count], event->value, event->value_len);
        }
        e->count++;
    }
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->mutex);
}

static void wait_events(events *e, int count, int ended) {
    pthread_mutex_lock(&e->mutex);
    while (e->count < count || e->ended < ended) pthread_cond_wait(&e->cond, &e->mutex);
    pthread_mutex_unlock(&e->mutex);
}

static waiter done = WAITER_INIT;
static void on_observe(void *user, statestore_status st, const char *msg, statestore_observation *obs) {
    (void)msg;
    CHECK(st == STATESTORE_OK && obs != NULL);
    *(statestore_observation **)user = obs;
    waiter_add(&done);
}

int main(void) {
    test_deadline(60);
    char k[128], k2[128];
    test_key(k, sizeof k, "watched");
    test_key(k2, sizeof k2, "pushed");
    statestore_client *client = test_connect();

    /* pull style */
    statestore_observation *obs = NULL;
    OK(statestore_observe(client, K(k), &obs));
    const uint8_t *okey = NULL;
    size_t okey_len = 0;
    OK(statestore_observation_key(obs, &okey, &okey_len));
    CHECK(okey_len == strlen(k) && memcmp(okey, k, okey_len) == 0);

    statestore_event *event = NULL;
    FAILS(STATESTORE_ERR_TIMEOUT, statestore_observation_next(obs, 0, &event));
    CHECK(event == NULL);
    OK(statestore_set(client, K(k), K("one"), NULL, NULL));
    OK(statestore_observation_next(obs, 10000, &event));
    CHECK(event->kind == STATESTORE_EVENT_SET && event->has_value && event->value_len == 3 &&
          memcmp(event->value, "one", 3) == 0);
    CHECK(event->key_len == strlen(k) && memcmp(event->key, k, event->key_len) == 0);
    statestore_event_free(event);
    OK(statestore_delete(client, K(k), NULL, NULL));
    OK(statestore_observation_next(obs, -1, &event));
    CHECK(event->kind == STATESTORE_EVENT_DELETE && !event->has_value && event->value == NULL);
    statestore_event_free(event);

    /* closing ends it: waiters get CLOSED */
    OK(statestore_observation_close(obs));
    FAILS(STATESTORE_ERR_CLOSED, statestore_observation_next(obs, 1000, &event));
    OK(statestore_observation_free(obs));

    /* push style, observation from observe_async */
    events pushed = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, {{0}}, 0, 0};
    statestore_observation *obs2 = NULL;
    OK(statestore_observe_async(client, K(k2), on_observe, &obs2));
    waiter_wait(&done, 1);
    OK(statestore_set(client, K(k2), K("a"), NULL, NULL)); /* queued before the callback: delivered first */
    OK(statestore_observation_set_callback(obs2, on_event, &pushed));
    OK(statestore_set(client, K(k2), K("b"), NULL, NULL));
    OK(statestore_delete(client, K(k2), NULL, NULL));
    wait_events(&pushed, 3, 0);
    CHECK(pushed.kinds[0] == STATESTORE_EVENT_SET && strcmp(pushed.values[0], "a") == 0);
    CHECK(pushed.kinds[1] == STATESTORE_EVENT_SET && strcmp(pushed.values[1], "b") == 0);
    CHECK(pushed.kinds[2] == STATESTORE_EVENT_DELETE);
    /* in push style, next() gives nothing */
    FAILS(STATESTORE_ERR_TIMEOUT, statestore_observation_next(obs2, 0, &event));

    /* unobserve ends every observation of the key: the callback gets its final NULL call */
    OK(statestore_unobserve(client, K(k2)));
    wait_events(&pushed, 3, 1);
    CHECK(pushed.ended == 1 && pushed.count == 3);
    OK(statestore_observation_free(obs2));

    /* client close ends observations too */
    events last = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, {{0}}, 0, 0};
    statestore_observation *obs3 = NULL;
    OK(statestore_observe(client, K(k), &obs3));
    OK(statestore_observation_set_callback(obs3, on_event, &last));
    OK(statestore_close(client));
    wait_events(&last, 0, 1);
    CHECK(last.ended == 1);
    OK(statestore_observation_free(obs3));
    OK(statestore_client_free(client));
    puts("test_observe: ok");
    return 0;
}
