/* statestore_condition_from_name(): the SET conditions by the names every language accepts
 * (core's one table), in any ASCII case; an unknown word, an empty one and NULL are
 * STATESTORE_ERR_INVALID_ARGUMENT with a message naming the word and the accepted names, and
 * leave the out-parameter as it was. A condition read by name works in a real SET. */
#include "check.h"

static void names(const char *name, statestore_condition expected) {
    statestore_condition got = (statestore_condition)99;
    OK(statestore_condition_from_name(name, &got));
    CHECK(got == expected);
}

static void refused(const char *name, const char *in_message) {
    statestore_condition got = (statestore_condition)99;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_condition_from_name(name, &got));
    CHECK(got == (statestore_condition)99);
    const char *message = statestore_last_error_message();
    CHECK(strstr(message, in_message) != NULL);
    CHECK(strstr(message, "'only_if_absent_or_equal'") != NULL);
}

int main(void) {
    test_deadline(60);
    names("always", STATESTORE_SET_ALWAYS);
    names("nx", STATESTORE_SET_IF_ABSENT);
    names("NX", STATESTORE_SET_IF_ABSENT);
    names("only_if_absent", STATESTORE_SET_IF_ABSENT);
    names("nex", STATESTORE_SET_IF_ABSENT_OR_EQUAL);
    names("Only_If_Absent_Or_Equal", STATESTORE_SET_IF_ABSENT_OR_EQUAL);

    refused("sometimes", "\"sometimes\"");
    refused("", "\"\"");
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_condition_from_name(NULL, NULL));
    CHECK(strstr(statestore_last_error_message(), "NULL") != NULL);
    statestore_condition untouched = STATESTORE_SET_ALWAYS;
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_condition_from_name(NULL, &untouched));
    CHECK(strstr(statestore_last_error_message(), "name is NULL") != NULL);
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_condition_from_name("nx", NULL));
    CHECK(strstr(statestore_last_error_message(), "condition is NULL") != NULL);

    /* The condition read by name is the one a SET applies. */
    statestore_client *client = test_connect();
    char key[64];
    test_key(key, sizeof key, "condition-by-name");
    statestore_set_options options = {0};
    statestore_condition nx;
    OK(statestore_condition_from_name("nx", &nx));
    options.condition = nx;
    statestore_set_result *first = NULL, *second = NULL;
    OK(statestore_set(client, K(key), K("one"), &options, &first));
    OK(statestore_set(client, K(key), K("two"), &options, &second));
    CHECK(first->applied && !second->applied);
    statestore_set_result_free(first);
    statestore_set_result_free(second);
    statestore_client_free(client);
    printf("test_condition_names: ok\n");
    return 0;
}
