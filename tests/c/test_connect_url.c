/* Connecting with a URL: blocking and async, options set beside the URL winning over it, a
 * malformed URL refused naming the part without showing the password, NULL arguments. */
#include "check.h"

typedef struct {
    waiter w;
    statestore_status status;
    statestore_client *client;
} connected;

static void on_connect(void *user, statestore_status status, const char *message, statestore_client *client) {
    (void)message;
    connected *c = user;
    c->status = status;
    c->client = client;
    waiter_add(&c->w);
}

int main(void) {
    test_deadline(60);
    char url[256], key[128];
    test_key(key, sizeof key, "url");
    snprintf(url, sizeof url, "mqtt://127.0.0.1:%s?client_id=c-url-1&keep_alive=30s", getenv("STATESTORE_TEST_PORT"));

    statestore_client *client = NULL;
    OK(statestore_connect_url(url, NULL, &client));
    const char *id = NULL;
    OK(statestore_client_id(client, &id));
    CHECK(strcmp(id, "c-url-1") == 0);
    statestore_set_result *set = NULL;
    OK(statestore_set(client, K(key), K("v"), NULL, &set));
    CHECK(set != NULL && set->applied);
    statestore_set_result_free(set);
    OK(statestore_client_free(client));

    /* An option set on the options object wins over the URL's. */
    statestore_options *options = NULL;
    OK(statestore_options_new(&options));
    OK(statestore_options_set_client_id(options, "c-url-2"));
    client = NULL;
    OK(statestore_connect_url(url, options, &client));
    OK(statestore_client_id(client, &id));
    CHECK(strcmp(id, "c-url-2") == 0);
    OK(statestore_client_free(client));

    connected c = {WAITER_INIT, STATESTORE_ERR_INTERNAL, NULL};
    OK(statestore_connect_url_async(url, options, on_connect, &c));
    waiter_wait(&c.w, 1);
    CHECK(c.status == STATESTORE_OK && c.client != NULL);
    OK(statestore_client_free(c.client));
    OK(statestore_options_free(options));

    /* Malformed: the part is named, the password is not shown; nothing is created. */
    client = NULL;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_connect_url("mqtt://ann:Do-Not-Print-Me@127.0.0.1:70000", NULL, &client));
    const char *message = statestore_last_error_message();
    CHECK(strstr(message, "port") != NULL && strstr(message, "ann:***@") != NULL);
    CHECK(strstr(message, "Do-Not-Print-Me") == NULL);
    CHECK(client == NULL);
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_connect_url("mqtt://h?colour=red", NULL, &client));
    CHECK(strstr(statestore_last_error_message(), "colour") != NULL);

    /* NULL is an error, not a crash. */
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_connect_url(NULL, NULL, &client));
    CHECK(strstr(statestore_last_error_message(), "url") != NULL);
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_connect_url(url, NULL, NULL));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_connect_url_async(NULL, NULL, on_connect, &c));

    printf("connect url ok\n");
    return 0;
}
