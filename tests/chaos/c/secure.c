/* Connection security through the C ABI: the shared cases of
 * tests/chaos/secure.json on the fixtures of `statestore-chaos secure` (its JSON line is the
 * first argument). Options are set by name with statestore_options_set(); failures must be
 * STATESTORE_ERR_CONNECTION (never a plaintext fallback), and no error message or log record
 * (the log callback at TRACE) may contain a password.
 *
 *   secure-c FIXTURE_JSON CASES_JSON_PATH
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "statestore.h"

static int failures;
static pthread_mutex_t logs_mutex = PTHREAD_MUTEX_INITIALIZER;
static char *logs;
static size_t logs_len;

static void on_log(void *user_data, int32_t level, const char *target, const char *message) {
    (void)user_data;
    (void)level;
    pthread_mutex_lock(&logs_mutex);
    size_t add = strlen(target) + strlen(message) + 3;
    char *grown = realloc(logs, logs_len + add + 1);
    if (grown) {
        logs = grown;
        logs_len += (size_t)snprintf(logs + logs_len, add + 1, "%s %s\n", target, message);
    }
    pthread_mutex_unlock(&logs_mutex);
}

static void no_secret(const char *what, const char *text, const char *secret) {
    if (secret && *secret && text && strstr(text, secret)) {
        failures++;
        fprintf(stderr, "FAIL %s shows a password: %s\n", what, text);
    }
}

static char *read_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[n] = '\0';
    return text;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s FIXTURE_JSON CASES_JSON_PATH\n", argv[0]);
        return 2;
    }
    cJSON *fixture = cJSON_Parse(argv[1]);
    const char *cases_text = read_file(argv[2]);
    cJSON *cases = cases_text ? cJSON_Parse(cases_text) : NULL;
    if (!fixture || !cases) {
        fprintf(stderr, "cannot read the fixture or %s\n", argv[2]);
        return 2;
    }
    if (statestore_set_log_callback(STATESTORE_LOG_TRACE, on_log, NULL) != STATESTORE_OK) {
        fprintf(stderr, "log callback: %s\n", statestore_last_error_message());
        return 1;
    }
    const char *password = cJSON_GetObjectItem(fixture, "password")->valuestring;
    const char *token = cJSON_GetObjectItem(fixture, "sat_token")->valuestring;
    char timeout[32];
    snprintf(timeout, sizeof timeout, "%dms", cJSON_GetObjectItem(cases, "timeout_ms")->valueint);
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(cases, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *expect = cJSON_GetObjectItem(c, "expect")->valuestring;
        const char *port_name = cJSON_GetObjectItem(c, "port")->valuestring;
        char port[16];
        snprintf(port, sizeof port, "%d", cJSON_GetObjectItem(cJSON_GetObjectItem(fixture, "ports"), port_name)->valueint);
        statestore_options *options = NULL;
        statestore_options_new(&options);
        statestore_options_set(options, "host", "127.0.0.1");
        statestore_options_set(options, "port", port);
        statestore_options_set(options, "default_timeout", timeout);
        const char *case_password = NULL;
        cJSON *option;
        cJSON_ArrayForEach(option, cJSON_GetObjectItem(c, "options")) {
            const char *value = option->valuestring;
            if (value[0] == '$') value = cJSON_GetObjectItem(fixture, value + 1)->valuestring;
            else if (strcmp(option->string, "password") == 0) case_password = value;
            if (statestore_options_set(options, option->string, value) != STATESTORE_OK) {
                failures++;
                fprintf(stderr, "FAIL %s: option %s: %s\n", name, option->string, statestore_last_error_message());
            }
        }
        statestore_client *client = NULL;
        statestore_status status = statestore_connect(options, &client);
        statestore_options_free(options);
        if (strcmp(statestore_status_name(status), expect) != 0) {
            failures++;
            fprintf(stderr, "FAIL %s: %s (%s), expected %s\n", name, statestore_status_name(status),
                    statestore_last_error_message(), expect);
        }
        if (status != STATESTORE_OK) {
            no_secret(name, statestore_last_error_message(), password);
            no_secret(name, statestore_last_error_message(), case_password);
            no_secret(name, statestore_last_error_message(), token);
        } else {
            if (statestore_set(client, (const uint8_t *)"secure", 6, (const uint8_t *)name, strlen(name), NULL, NULL) !=
                STATESTORE_OK) {
                failures++;
                fprintf(stderr, "FAIL %s: set after connect: %s\n", name, statestore_last_error_message());
            }
            statestore_client_free(client);
        }
        pthread_mutex_lock(&logs_mutex);
        no_secret("a log record", logs, password);
        no_secret("a log record", logs, case_password);
        no_secret("a log record", logs, token);
        pthread_mutex_unlock(&logs_mutex);
        printf("%s %s\n", status == STATESTORE_OK ? "connected" : statestore_status_name(status), name);
    }
    statestore_set_log_callback(STATESTORE_LOG_TRACE, NULL, NULL);
    free(logs);
    cJSON_Delete(fixture);
    cJSON_Delete(cases);
    printf("secure-c: %d failures\n", failures);
    return failures ? 1 : 0;
}
