/* A failed connection says where and what to try, for each way it fails: nothing listening, a
 * port that accepts TCP and never answers, and a port that answers another protocol. */
#include "check.h"

static void *answer_http(void *listener) {
    int conn = accept(*(int *)listener, NULL, NULL);
    if (conn >= 0) {
        char request[64];
        (void)!read(conn, request, sizeof request);
        static const char reply[] =
            "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        (void)!write(conn, reply, sizeof reply - 1);
        close(conn);
    }
    return NULL;
}

/* Connecting to `port` fails with STATESTORE_ERR_CONNECTION naming the address and `hint`. */
static void refused(int port, uint64_t timeout_ms, const char *hint) {
    char port_text[16], address[64];
    snprintf(port_text, sizeof port_text, "%d", port);
    snprintf(address, sizeof address, "cannot connect to 127.0.0.1:%d: ", port);
    statestore_options *options = NULL;
    OK(statestore_options_new(&options));
    OK(statestore_options_set_host(options, "127.0.0.1"));
    OK(statestore_options_set(options, "port", port_text));
    OK(statestore_options_set_default_timeout_ms(options, timeout_ms));
    statestore_client *client = NULL;
    FAILS(STATESTORE_ERR_CONNECTION, statestore_connect(options, &client));
    const char *message = statestore_last_error_message();
    if (strstr(message, address) == NULL || strstr(message, hint) == NULL) {
        fprintf(stderr, "message \"%s\" lacks \"%s\" or \"%s\"\n", message, address, hint);
        exit(1);
    }
    CHECK(client == NULL);
    OK(statestore_options_free(options));
}

int main(void) {
    test_deadline(60);
    int port = 0;

    int closed = test_loopback_socket(0, &port);
    refused(port, 5000, "connection refused");
    refused(port, 5000, "statestore serve");
    close(closed);

    int silent = test_loopback_socket(8, &port);
    refused(port, 1000, "no answer from an MQTT broker within 1s");
    close(silent);

    int http = test_loopback_socket(8, &port);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, answer_http, &http) == 0);
    refused(port, 5000, "does not speak MQTT 5");
    CHECK(pthread_join(thread, NULL) == 0);
    close(http);

    printf("connect errors ok\n");
    return 0;
}
