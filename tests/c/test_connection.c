/* Connection state and events: a server stopped and started again on the same port (pulled
 * events), and giving up after reconnect_max_attempts (events pushed to a callback, a
 * waiting _async call). The server is the test kit's own (STATESTORE_TESTKIT_BIN), which
 * this program stops and starts. */
#include "check.h"

#include <sys/wait.h>

typedef struct {
    pid_t pid;
    FILE *in;
    FILE *out;
    int port;
} server;

/* `statestore-testkit serve embedded` with its standard input and output on pipes. Started
 * before any client, so that nothing of the library is running at the fork. */
static void server_start(server *s) {
    const char *bin = getenv("STATESTORE_TESTKIT_BIN");
    CHECK(bin != NULL);
    int to[2], from[2];
    CHECK(pipe(to) == 0 && pipe(from) == 0);
    s->pid = fork();
    CHECK(s->pid >= 0);
    if (s->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]), close(to[1]), close(from[0]), close(from[1]);
        execl(bin, bin, "serve", "embedded", (char *)NULL);
        _exit(127);
    }
    close(to[0]), close(from[1]);
    s->in = fdopen(to[1], "w");
    s->out = fdopen(from[0], "r");
    CHECK(s->in != NULL && s->out != NULL);
    char line[128];
    CHECK(fgets(line, sizeof line, s->out) != NULL);
    CHECK(sscanf(line, "ready on 127.0.0.1:%d", &s->port) == 1);
}

/* Sends `command` and waits for its `answer`. */
static void server_do(server *s, const char *command, const char *answer) {
    char line[256];
    CHECK(fprintf(s->in, "%s\n", command) > 0 && fflush(s->in) == 0);
    CHECK(fgets(line, sizeof line, s->out) != NULL);
    if (strncmp(line, answer, strlen(answer)) != 0) {
        fprintf(stderr, "statestore-testkit %s: %s", command, line);
        exit(1);
    }
}

static void server_end(server *s) {
    fclose(s->in);
    fclose(s->out);
    int status = 0;
    CHECK(waitpid(s->pid, &status, 0) == s->pid);
}

static statestore_client *connect_to(int port, const char *max_attempts) {
    char text[16];
    snprintf(text, sizeof text, "%d", port);
    statestore_options *options = NULL;
    OK(statestore_options_new(&options));
    OK(statestore_options_set_host(options, "127.0.0.1"));
    OK(statestore_options_set(options, "port", text));
    OK(statestore_options_set_keep_alive_ms(options, 5000));
    OK(statestore_options_set(options, "reconnect_initial_delay", "50ms"));
    OK(statestore_options_set(options, "reconnect_max_delay", "200ms"));
    OK(statestore_options_set(options, "reconnect_max_attempts", max_attempts));
    statestore_client *client = NULL;
    OK(statestore_connect(options, &client));
    OK(statestore_options_free(options));
    return client;
}

/* The next connection event in `state`, skipping others; each wait at most `timeout_ms`. */
static statestore_event *until_state(statestore_observation *events, int state, int64_t timeout_ms) {
    for (;;) {
        statestore_event *event = NULL;
        OK(statestore_observation_next(events, timeout_ms, &event));
        CHECK(event->kind == STATESTORE_EVENT_CONNECTION && event->key_len == 0);
        if (event->connection_state == state) return event;
        statestore_event_free(event);
    }
}

static void stopped_then_started_again(server *s, const char *addr) {
    statestore_client *client = connect_to(s->port, "0");
    int state = 0;
    OK(statestore_connection_state(client, &state));
    CHECK(state == STATESTORE_CONNECTION_CONNECTED);
    CHECK(strcmp(statestore_connection_state_name(state), "connected") == 0);
    statestore_observation *events = NULL;
    OK(statestore_connection_events(client, &events));

    server_do(s, "stop", "stopped");
    /* Within two keep-alives. */
    statestore_event *dropped = until_state(events, STATESTORE_CONNECTION_RECONNECTING, 10000);
    CHECK(dropped->connection_reason != NULL && strstr(dropped->connection_reason, addr) != NULL);
    CHECK(dropped->connection_attempt == 1 && dropped->connection_delay_ms >= 0);
    statestore_event_free(dropped);
    OK(statestore_connection_state(client, &state));
    CHECK(state == STATESTORE_CONNECTION_RECONNECTING);

    server_do(s, "start", "started");
    statestore_event *back = until_state(events, STATESTORE_CONNECTION_CONNECTED, 30000);
    CHECK(back->connection_reason == NULL && back->connection_delay_ms == -1 && back->session_lost);
    statestore_event_free(back);
    statestore_value *value = NULL;
    OK(statestore_get(client, K("k"), -1, &value));
    statestore_value_free(value);

    OK(statestore_close(client));
    statestore_event *closed = until_state(events, STATESTORE_CONNECTION_CLOSED, 10000);
    statestore_event_free(closed);
    statestore_event *none = NULL;
    FAILS(STATESTORE_ERR_CLOSED, statestore_observation_next(events, 10000, &none));
    OK(statestore_observation_free(events));
    OK(statestore_client_free(client));
}

typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int states[64];
    int count;
    int ended;
    char reason[512];
} seen_states;

static void on_connection(void *user, const statestore_event *event) {
    seen_states *seen = user;
    pthread_mutex_lock(&seen->mutex);
    if (event == NULL) {
        seen->ended = 1;
    } else if (seen->count < 64) {
        seen->states[seen->count++] = event->connection_state;
        if (event->connection_state == STATESTORE_CONNECTION_GAVE_UP)
            snprintf(seen->reason, sizeof seen->reason, "%s", event->connection_reason);
    }
    pthread_cond_broadcast(&seen->cond);
    pthread_mutex_unlock(&seen->mutex);
}

static int has_state(const seen_states *seen, int state) {
    for (int i = 0; i < seen->count; i++)
        if (seen->states[i] == state) return 1;
    return 0;
}

static void wait_state(seen_states *seen, int state) {
    pthread_mutex_lock(&seen->mutex);
    while (!has_state(seen, state)) pthread_cond_wait(&seen->cond, &seen->mutex);
    pthread_mutex_unlock(&seen->mutex);
}

typedef struct {
    waiter done;
    statestore_status status;
    char message[1024];
} call_result;

static void on_get(void *user, statestore_status status, const char *message, const struct statestore_value *value) {
    (void)value;
    call_result *result = user;
    result->status = status;
    snprintf(result->message, sizeof result->message, "%s", message ? message : "");
    waiter_add(&result->done);
}

static void gives_up_after_max_attempts(server *s, const char *addr) {
    statestore_client *client = connect_to(s->port, "2");
    statestore_observation *events = NULL;
    OK(statestore_connection_events(client, &events));
    seen_states seen = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, {0}};
    OK(statestore_observation_set_callback(events, on_connection, &seen));

    server_do(s, "stop", "stopped");
    wait_state(&seen, STATESTORE_CONNECTION_RECONNECTING);
    /* A call with an hour's timeout waits for the connection... */
    call_result result = {WAITER_INIT, STATESTORE_OK, {0}};
    OK(statestore_get_async(client, K("k"), 3600 * 1000, on_get, &result));
    wait_state(&seen, STATESTORE_CONNECTION_GAVE_UP);
    CHECK(strstr(seen.reason, addr) != NULL);
    /* ... and fails once reconnecting gives up, naming the reason (the program's deadline,
     * far below the hour, bounds this wait). */
    waiter_wait(&result.done, 1);
    CHECK(result.status == STATESTORE_ERR_CONNECTION);
    CHECK(strstr(result.message, seen.reason) != NULL && strstr(result.message, "gave up") != NULL);
    int state = 0;
    OK(statestore_connection_state(client, &state));
    CHECK(state == STATESTORE_CONNECTION_GAVE_UP);
    statestore_value *value = NULL;
    FAILS(STATESTORE_ERR_CONNECTION, statestore_get(client, K("k"), -1, &value));

    OK(statestore_close(client));
    pthread_mutex_lock(&seen.mutex);
    while (!seen.ended) pthread_cond_wait(&seen.cond, &seen.mutex);
    CHECK(seen.states[seen.count - 1] == STATESTORE_CONNECTION_CLOSED);
    pthread_mutex_unlock(&seen.mutex);
    OK(statestore_observation_free(events));
    OK(statestore_client_free(client));
    server_do(s, "start", "started");
}

static void bad_arguments_are_errors(void) {
    int state = 0;
    statestore_observation *events = NULL;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_connection_state(NULL, &state));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_connection_events(NULL, &events));
    CHECK(statestore_connection_state_name(99) == NULL);
    CHECK(strcmp(statestore_connection_state_name(STATESTORE_CONNECTION_GAVE_UP), "gave_up") == 0);
}

int main(void) {
    test_deadline(60);
    server s;
    server_start(&s);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", s.port);
    bad_arguments_are_errors();
    stopped_then_started_again(&s, addr);
    gives_up_after_max_attempts(&s, addr);
    server_end(&s);
    puts("test_connection: ok");
    return 0;
}
