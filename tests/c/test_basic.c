/* Every key-value operation, blocking: set (conditions, expiry, fencing), get, delete, vdel,
 * keys; binary keys and values; status names; the client id. */
#include "check.h"

int main(void) {
    test_deadline(60);
    char k1[128], k2[128], k3[128], pattern[128];
    test_key(k1, sizeof k1, "color");
    test_key(k2, sizeof k2, "bin");
    test_key(k3, sizeof k3, "fenced");
    test_key(pattern, sizeof pattern, "*");

    /* options from the AIO_* environment of a pod */
    statestore_options *env = NULL;
    unsetenv("AIO_BROKER_HOSTNAME");
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_options_from_env(&env));
    CHECK(env == NULL && strstr(statestore_last_error_message(), "AIO_BROKER_HOSTNAME") != NULL);
    setenv("AIO_BROKER_HOSTNAME", "127.0.0.1", 1);
    setenv("AIO_BROKER_TCP_PORT", getenv("STATESTORE_TEST_PORT"), 1);
    setenv("AIO_MQTT_USE_TLS", "false", 1);
    OK(statestore_options_from_env(&env));
    statestore_client *from_env = NULL;
    OK(statestore_connect(env, &from_env));
    OK(statestore_options_free(env));
    OK(statestore_client_free(from_env));

    statestore_client *client = test_connect();
    const char *id = NULL;
    OK(statestore_client_id(client, &id));
    CHECK(id != NULL && strlen(id) > 0);

    /* set + get */
    statestore_set_result *set = NULL;
    OK(statestore_set(client, K(k1), K("blue"), NULL, &set));
    CHECK(set != NULL && set->applied && set->version != NULL);
    statestore_set_result_free(set);

    statestore_value *value = NULL;
    OK(statestore_get(client, K(k1), -1, &value));
    CHECK(value != NULL && value->len == 4 && memcmp(value->data, "blue", 4) == 0);
    CHECK(value->version != NULL);
    statestore_value_free(value);

    /* conditions: NX refuses an existing key, NEX accepts the same value */
    statestore_set_options opts = {0};
    opts.condition = STATESTORE_SET_IF_ABSENT;
    OK(statestore_set(client, K(k1), K("red"), &opts, &set));
    CHECK(!set->applied);
    statestore_set_result_free(set);
    opts.condition = STATESTORE_SET_IF_ABSENT_OR_EQUAL;
    OK(statestore_set(client, K(k1), K("blue"), &opts, &set));
    CHECK(set->applied);
    statestore_set_result_free(set);
    opts.condition = 42;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_set(client, K(k1), K("x"), &opts, NULL));
    CHECK(strstr(statestore_last_error_message(), "condition") != NULL);

    /* binary safe: NUL bytes in key and value, empty value */
    const uint8_t bkey[] = {'c', 't', 0, 1, 2, 0xff};
    const uint8_t bval[] = {0, 0, 'x', 0};
    OK(statestore_set(client, bkey, sizeof bkey, bval, sizeof bval, NULL, NULL));
    OK(statestore_get(client, bkey, sizeof bkey, -1, &value));
    CHECK(value != NULL && value->len == sizeof bval && memcmp(value->data, bval, sizeof bval) == 0);
    statestore_value_free(value);
    OK(statestore_set(client, K(k2), NULL, 0, NULL, NULL));
    OK(statestore_get(client, K(k2), -1, &value));
    CHECK(value != NULL && value->len == 0 && value->data != NULL);
    statestore_value_free(value);

    /* keys */
    statestore_key_list *keys = NULL;
    OK(statestore_keys(client, K(pattern), &keys));
    CHECK(keys != NULL && keys->count == 2);
    int seen = 0;
    for (size_t i = 0; i < keys->count; i++) {
        if (keys->keys[i].len == strlen(k1) && memcmp(keys->keys[i].data, k1, strlen(k1)) == 0) seen |= 1;
        if (keys->keys[i].len == strlen(k2) && memcmp(keys->keys[i].data, k2, strlen(k2)) == 0) seen |= 2;
    }
    CHECK(seen == 3);
    statestore_key_list_free(keys);

    /* vdel: mismatch keeps the key, match deletes it */
    statestore_delete_result *del = NULL;
    OK(statestore_vdel(client, K(k1), K("red"), NULL, &del));
    CHECK(del->outcome == STATESTORE_VALUE_MISMATCH);
    statestore_delete_result_free(del);
    OK(statestore_vdel(client, K(k1), K("blue"), NULL, &del));
    CHECK(del->outcome == STATESTORE_DELETED);
    statestore_delete_result_free(del);
    OK(statestore_get(client, K(k1), -1, &value));
    CHECK(value == NULL);

    /* delete */
    OK(statestore_delete(client, K(k2), NULL, &del));
    CHECK(del->outcome == STATESTORE_DELETED);
    statestore_delete_result_free(del);
    OK(statestore_delete(client, K(k2), NULL, &del));
    CHECK(del->outcome == STATESTORE_NOT_FOUND);
    statestore_delete_result_free(del);
    OK(statestore_delete(client, bkey, sizeof bkey, NULL, NULL));

    /* expiry and persist are accepted */
    opts = (statestore_set_options){0};
    opts.has_expiry = true;
    opts.expiry_ms = 60000;
    opts.persist = true;
    opts.has_timeout = true;
    opts.timeout_ms = 5000;
    OK(statestore_set(client, K(k2), K("soon"), &opts, NULL));
    /* zero expiry and zero timeouts are refused (core's rules) */
    opts.expiry_ms = 0;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_set(client, K(k2), K("x"), &opts, NULL));
    opts.expiry_ms = 1000;
    opts.timeout_ms = 0;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_set(client, K(k2), K("x"), &opts, NULL));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_get(client, K(k2), 0, &value));
    statestore_delete_options zero = {NULL, true, 0};
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_delete(client, K(k2), &zero, NULL));
    OK(statestore_delete(client, K(k2), NULL, NULL));

    /* fencing: a key written with a token refuses writes without one and with older ones */
    statestore_set_result *lock1 = NULL, *lock2 = NULL;
    char lockkey[128];
    test_key(lockkey, sizeof lockkey, "fence-lock");
    OK(statestore_set(client, K(lockkey), K("a"), NULL, &lock1));
    OK(statestore_set(client, K(lockkey), K("b"), NULL, &lock2));
    opts = (statestore_set_options){0};
    opts.fencing_token = lock2->version;
    OK(statestore_set(client, K(k3), K("v2"), &opts, NULL));
    FAILS(STATESTORE_ERR_FENCING_TOKEN_REQUIRED, statestore_set(client, K(k3), K("x"), NULL, NULL));
    opts.fencing_token = lock1->version;
    FAILS(STATESTORE_ERR_FENCING_TOKEN_LOWER_VERSION, statestore_set(client, K(k3), K("v1"), &opts, NULL));
    opts.fencing_token = "not a version";
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_set(client, K(k3), K("v1"), &opts, NULL));
    CHECK(strstr(statestore_last_error_message(), "fencing_token") != NULL);
    statestore_delete_options dopts = {lock2->version, false, 0};
    OK(statestore_delete(client, K(k3), &dopts, NULL));
    statestore_set_result_free(lock1);
    statestore_set_result_free(lock2);
    OK(statestore_delete(client, K(lockkey), NULL, NULL));

    /* status names follow the core's table */
    CHECK(strcmp(statestore_status_name(STATESTORE_OK), "OK") == 0);
    CHECK(strcmp(statestore_status_name(STATESTORE_ERR_FENCING_TOKEN_REQUIRED), "FENCING_TOKEN_REQUIRED") == 0);
    CHECK(strcmp(statestore_status_name(12345), "UNKNOWN") == 0);
    CHECK(strlen(statestore_status_description(STATESTORE_ERR_TIMEOUT)) > 0);
    CHECK(strlen(statestore_version()) > 0);

    OK(statestore_close(client));
    FAILS(STATESTORE_ERR_CLOSED, statestore_get(client, K(k1), -1, &value));
    CHECK(value == NULL);
    OK(statestore_close(client));
    OK(statestore_client_free(client));
    puts("test_basic: ok");
    return 0;
}
