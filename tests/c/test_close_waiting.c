/* Closing or freeing a client ends a blocking call that another thread is waiting in: the call
 * returns STATESTORE_ERR_CLOSED at once, not when its timeout passes.
 *
 * The client talks to the server through a relay on a loopback port that stops forwarding
 * the client's packets on request: the blocking GET's request then reaches the relay and never
 * the server, so the call is certainly waiting (its request was sent) when the client closes. */
#include <poll.h>
#include <stdbool.h>

#include "check.h"

/* The calls' timeout: far longer than a close takes, so a call that is not ended by the
 * close would fail with STATESTORE_ERR_TIMEOUT instead. */
#define CALL_TIMEOUT_MS 20000

typedef struct {
    int listener;
    int port;
    pthread_t thread;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    bool holding;      /* the client's bytes are kept from the server */
    int held_publish;  /* PUBLISH packets kept from the server */
    /* Parsing the held bytes into MQTT packets: the fixed header's first byte, then the
     * remaining length (a varint), then that many bytes to skip. */
    int header;        /* -1: the next byte starts a packet */
    size_t remaining;
    size_t multiplier;
    bool in_length;
} relay;

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons((uint16_t)port);
    CHECK(connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
    return fd;
}

/* Counts the PUBLISH packets in bytes kept from the server (called with the mutex held). */
static void parse_held(relay *r, const unsigned char *bytes, size_t len) {
    for (size_t i = 0; i < len;) {
        if (r->header < 0) {
            r->header = bytes[i++];
            r->remaining = 0;
            r->multiplier = 1;
            r->in_length = true;
            if ((r->header >> 4) == 3) {
                r->held_publish++;
                pthread_cond_broadcast(&r->cond);
            }
        } else if (r->in_length) {
            r->remaining += (bytes[i] & 0x7f) * r->multiplier;
            r->multiplier *= 128;
            r->in_length = (bytes[i++] & 0x80) != 0;
            if (!r->in_length && r->remaining == 0) r->header = -1;
        } else {
            size_t skip = len - i < r->remaining ? len - i : r->remaining;
            i += skip;
            r->remaining -= skip;
            if (r->remaining == 0) r->header = -1;
        }
    }
}

/* Relays one connection until either side closes it. */
static void *relay_run(void *arg) {
    relay *r = arg;
    int client = accept(r->listener, NULL, NULL);
    CHECK(client >= 0);
    int server = connect_to(atoi(getenv("STATESTORE_TEST_PORT")));
    struct pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    unsigned char buf[4096];
    for (;;) {
        CHECK(poll(fds, 2, -1) > 0);
        if (fds[0].revents) {
            ssize_t n = read(client, buf, sizeof buf);
            if (n <= 0) break;
            pthread_mutex_lock(&r->mutex);
            bool hold = r->holding;
            if (hold) parse_held(r, buf, (size_t)n);
            pthread_mutex_unlock(&r->mutex);
            if (!hold && write(server, buf, (size_t)n) != n) break;
        }
        if (fds[1].revents) {
            ssize_t n = read(server, buf, sizeof buf);
            if (n <= 0 || write(client, buf, (size_t)n) != n) break;
        }
    }
    close(client);
    close(server);
    return NULL;
}

static void relay_start(relay *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mutex, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->header = -1;
    r->listener = test_loopback_socket(1, &r->port);
    CHECK(pthread_create(&r->thread, NULL, relay_run, r) == 0);
}

static void relay_hold(relay *r) {
    pthread_mutex_lock(&r->mutex);
    r->holding = true;
    pthread_mutex_unlock(&r->mutex);
}

/* Waits until the client has sent a PUBLISH (a request) that the server will never see. */
static void relay_wait_for_request(relay *r) {
    pthread_mutex_lock(&r->mutex);
    while (r->held_publish == 0) pthread_cond_wait(&r->cond, &r->mutex);
    pthread_mutex_unlock(&r->mutex);
}

/* Ends once the client's connection is gone. */
static void relay_stop(relay *r) {
    CHECK(pthread_join(r->thread, NULL) == 0);
    close(r->listener);
    pthread_mutex_destroy(&r->mutex);
    pthread_cond_destroy(&r->cond);
}

static statestore_client *connect_through(relay *r) {
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    statestore_options *options = test_options();
    OK(statestore_options_set(options, "port", port));
    statestore_client *client = NULL;
    OK(statestore_connect(options, &client));
    OK(statestore_options_free(options));
    return client;
}

typedef struct {
    statestore_client *client;
    const char *key;
    statestore_status status;
    char message[256];
    statestore_value *value;
} blocked_get;

static void *get_in_thread(void *arg) {
    blocked_get *get = arg;
    get->status = statestore_get(get->client, K(get->key), CALL_TIMEOUT_MS, &get->value);
    snprintf(get->message, sizeof get->message, "%s", statestore_last_error_message());
    return NULL;
}

/* A GET waits on another thread while `end` closes or frees the client. */
static void ended_while_waiting(statestore_status (*end)(statestore_client *), const char *how) {
    char key[128];
    test_key(key, sizeof key, how);
    relay r;
    relay_start(&r);
    statestore_client *client = connect_through(&r);
    relay_hold(&r);

    blocked_get get = {client, key, STATESTORE_OK, "", NULL};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, get_in_thread, &get) == 0);
    relay_wait_for_request(&r);

    OK(end(client));
    CHECK(pthread_join(thread, NULL) == 0);
    if (get.status != STATESTORE_ERR_CLOSED || strstr(get.message, "closed") == NULL) {
        fprintf(stderr, "%s: the waiting GET returned %s (%s), expected STATESTORE_ERR_CLOSED\n",
                how, statestore_status_name(get.status), get.message);
        exit(1);
    }
    CHECK(get.value == NULL);
    if (end == statestore_close) {
        FAILS(STATESTORE_ERR_CLOSED, statestore_get(client, K(key), -1, &get.value));
        OK(statestore_client_free(client));
    }
    relay_stop(&r);
}

int main(void) {
    test_deadline(60);
    ended_while_waiting(statestore_close, "close");
    ended_while_waiting(statestore_client_free, "free");
    puts("test_close_waiting: ok");
    return 0;
}
