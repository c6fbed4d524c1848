/* Built from a prebuilt package (tarball or .deb) the way a user would, without the tests'
 * helpers: connect (to "localhost", resolved by the system as users' host names are), set,
 * get, the version of header and library, free everything and statestore_shutdown(), so that
 * valgrind finds nothing lost (package-smoke.sh runs it under valgrind without the project's
 * suppressions).
 * Usage: package_smoke PORT EXPECTED_VERSION; exit status 0 only if everything checked out. */
#define _POSIX_C_SOURCE 200809L /* alarm, getpid under -std=c11 */
#include <statestore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAIL(...) do { fprintf(stderr, "package_smoke: " __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

int main(int argc, char **argv) {
    if (argc != 3) FAIL("usage: package_smoke PORT EXPECTED_VERSION");
    alarm(120); /* the deadline: SIGALRM ends a stuck run */
    if (strcmp(statestore_version(), argv[2]) != 0)
        FAIL("library version %s, expected %s", statestore_version(), argv[2]);
    if (strcmp(STATESTORE_VERSION, argv[2]) != 0)
        FAIL("header version %s, expected %s", STATESTORE_VERSION, argv[2]);
    char parts[64];
    snprintf(parts, sizeof parts, "%d.%d.%d", STATESTORE_VERSION_MAJOR, STATESTORE_VERSION_MINOR,
             STATESTORE_VERSION_PATCH);
    if (strncmp(argv[2], parts, strlen(parts)) != 0)
        FAIL("STATESTORE_VERSION_MAJOR/MINOR/PATCH give %s, expected %s", parts, argv[2]);

    statestore_options *options = NULL;
    statestore_client *client = NULL;
    statestore_value *value = NULL;
    if (statestore_options_new(&options) != STATESTORE_OK ||
        statestore_options_set_host(options, "localhost") != STATESTORE_OK ||
        statestore_options_set(options, "port", argv[1]) != STATESTORE_OK)
        FAIL("options: %s", statestore_last_error_message());
    if (statestore_connect(options, &client) != STATESTORE_OK)
        FAIL("connect: %s", statestore_last_error_message());
    statestore_options_free(options);
    char key[64];
    snprintf(key, sizeof key, "package-smoke/c/%ld", (long)getpid());
    if (statestore_set(client, (const uint8_t *)key, strlen(key), (const uint8_t *)"blue", 4, NULL,
                       NULL) != STATESTORE_OK)
        FAIL("set: %s", statestore_last_error_message());
    if (statestore_get(client, (const uint8_t *)key, strlen(key), -1, &value) != STATESTORE_OK)
        FAIL("get: %s", statestore_last_error_message());
    if (value == NULL || value->len != 4 || memcmp(value->data, "blue", 4) != 0)
        FAIL("get returned %s", value ? "another value" : "nothing");
    statestore_value_free(value);
    if (statestore_client_free(client) != STATESTORE_OK)
        FAIL("client_free: %s", statestore_last_error_message());
    if (statestore_shutdown() != STATESTORE_OK)
        FAIL("shutdown: %s", statestore_last_error_message());
    printf("package_smoke: ok (libstatestore %s)\n", statestore_version());
    return 0;
}
