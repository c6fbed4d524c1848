#include <statestore.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    statestore_options *options;  statestore_client *client;  statestore_value *value;
    statestore_options_new(&options);
    statestore_options_set_port(options, argc > 1 ? (uint16_t)atoi(argv[1]) : 1883);
    if (statestore_connect(options, &client) != STATESTORE_OK) {
        fprintf(stderr, "connect: %s\n", statestore_last_error_message());
        return 1;
    }
    statestore_options_free(options);
    statestore_set(client, (const uint8_t *)"color", 5, (const uint8_t *)"blue", 4, NULL, NULL);
    if (statestore_get(client, (const uint8_t *)"color", 5, -1, &value) == STATESTORE_OK && value)
        printf("color = %.*s (version %s)\n", (int)value->len, (const char *)value->data, value->version);
    statestore_value_free(value);
    statestore_client_free(client);  /* closes, then frees */
    return 0;
}
