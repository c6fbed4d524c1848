/* Batches, blocking and _async: one item per key in order, a refused key as its own item,
 * empty batches, NULL arguments refused before anything is sent, and each result freed by its
 * own free function. */
#include "check.h"

typedef struct {
    waiter *done;
    int calls;
    statestore_status status;
    size_t count;
    int found;
    char first[16];
} batch_seen;

static void on_get_many(void *user_data, statestore_status status, const char *message,
                        const statestore_get_many_result *result) {
    (void)message;
    batch_seen *seen = user_data;
    seen->calls++;
    seen->status = status;
    if (result != NULL) {
        seen->count = result->count;
        for (size_t i = 0; i < result->count; i++) seen->found += result->items[i].found;
        if (result->count > 0 && result->items[0].found && result->items[0].value.len < sizeof seen->first)
            memcpy(seen->first, result->items[0].value.data, result->items[0].value.len);
    }
    waiter_add(seen->done);
}

static void on_set_many(void *user_data, statestore_status status, const char *message,
                        const statestore_set_many_result *result) {
    (void)message;
    batch_seen *seen = user_data;
    seen->calls++;
    seen->status = status;
    if (result != NULL) seen->count = result->count;
    waiter_add(seen->done);
}

static void on_delete_many(void *user_data, statestore_status status, const char *message,
                           const statestore_delete_many_result *result) {
    (void)message;
    batch_seen *seen = user_data;
    seen->calls++;
    seen->status = status;
    if (result != NULL) {
        seen->count = result->count;
        for (size_t i = 0; i < result->count; i++)
            seen->found += result->items[i].status == STATESTORE_OK && result->items[i].result.outcome == STATESTORE_DELETED;
    }
    waiter_add(seen->done);
}

static statestore_bytes bytes_of(const char *s) {
    statestore_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

int main(void) {
    test_deadline(60);
    statestore_client *client = test_connect();
    char a[128], b[128], missing[128], lock[128], fenced[128], free_key[128];
    test_key(a, sizeof a, "batch-a");
    test_key(b, sizeof b, "batch-b");
    test_key(missing, sizeof missing, "batch-missing");
    test_key(lock, sizeof lock, "batch-lock");
    test_key(fenced, sizeof fenced, "batch-fenced");
    test_key(free_key, sizeof free_key, "batch-free");

    /* set_many then get_many: order, a missing key, a duplicate */
    statestore_bytes keys[] = {bytes_of(a), bytes_of(b)};
    statestore_bytes values[] = {bytes_of("1"), bytes_of("2")};
    statestore_set_many_result *written = NULL;
    OK(statestore_set_many(client, keys, values, 2, NULL, &written));
    CHECK(written != NULL && written->count == 2);
    CHECK(written->items[0].status == STATESTORE_OK && written->items[0].result.applied);
    CHECK(written->items[1].result.version != NULL && written->items[1].message == NULL);
    statestore_set_many_result_free(written);

    statestore_bytes reads[] = {bytes_of(b), bytes_of(missing), bytes_of(a), bytes_of(b)};
    statestore_get_many_result *read = NULL;
    OK(statestore_get_many(client, reads, 4, -1, &read));
    CHECK(read != NULL && read->count == 4);
    CHECK(read->items[0].found && read->items[0].value.len == 1 && read->items[0].value.data[0] == '2');
    CHECK(read->items[1].status == STATESTORE_OK && !read->items[1].found && read->items[1].value.data == NULL);
    CHECK(read->items[2].found && read->items[2].value.data[0] == '1' && read->items[2].value.version != NULL);
    CHECK(read->items[3].found && read->items[3].value.data[0] == '2');
    statestore_get_many_result_free(read);

    /* a key refused by the service is its own item; the other is written */
    statestore_set_result *held = NULL, *newer = NULL;
    OK(statestore_set(client, K(lock), K("me"), NULL, &held));
    OK(statestore_set(client, K(lock), K("me"), NULL, &newer));
    statestore_set_options with_newer = {0};
    with_newer.fencing_token = newer->version;
    OK(statestore_set(client, K(fenced), K("v1"), &with_newer, NULL));
    statestore_set_options with_older = {0};
    with_older.fencing_token = held->version;
    statestore_bytes mixed[] = {bytes_of(free_key), bytes_of(fenced)};
    statestore_bytes xs[] = {bytes_of("x"), bytes_of("x")};
    OK(statestore_set_many(client, mixed, xs, 2, &with_older, &written));
    CHECK(written->items[0].status == STATESTORE_OK && written->items[0].result.applied);
    CHECK(written->items[1].status == STATESTORE_ERR_FENCING_TOKEN_LOWER_VERSION);
    CHECK(written->items[1].message != NULL && !written->items[1].result.applied);
    statestore_set_many_result_free(written);
    statestore_set_result_free(held);
    statestore_set_result_free(newer);

    /* empty batches: NULL lists with count 0 */
    OK(statestore_get_many(client, NULL, 0, -1, &read));
    CHECK(read != NULL && read->count == 0 && read->items == NULL);
    statestore_get_many_result_free(read);

    /* bad input is refused, naming the item, and nothing is sent */
    statestore_bytes bad[] = {bytes_of(missing), {(const uint8_t *)"", 0}};
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_set_many(client, bad, xs, 2, NULL, &written));
    CHECK(written == NULL && strstr(statestore_last_error_message(), "keys[1]") != NULL);
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_get_many(client, NULL, 2, -1, &read));
    CHECK(strstr(statestore_last_error_message(), "keys") != NULL);
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_set_many(client, keys, NULL, 2, NULL, &written));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_get_many(client, reads, 4, -1, NULL));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_delete_many(NULL, keys, 2, NULL, NULL));
    statestore_value *value = NULL;
    OK(statestore_get(client, K(missing), -1, &value));
    CHECK(value == NULL);

    /* _async: one callback with every item */
    waiter done = WAITER_INIT;
    batch_seen got = {&done, 0, 0, 0, 0, {0}}, set = got, del = got;
    OK(statestore_set_many_async(client, keys, values, 2, NULL, on_set_many, &set));
    waiter_wait(&done, 1);
    CHECK(set.calls == 1 && set.status == STATESTORE_OK && set.count == 2);
    OK(statestore_get_many_async(client, reads, 4, -1, on_get_many, &got));
    waiter_wait(&done, 2);
    CHECK(got.calls == 1 && got.count == 4 && got.found == 3 && strcmp(got.first, "2") == 0);
    OK(statestore_delete_many_async(client, keys, 2, NULL, on_delete_many, &del));
    waiter_wait(&done, 3);
    CHECK(del.calls == 1 && del.count == 2 && del.found == 2);
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_get_many_async(client, NULL, 1, -1, on_get_many, &got));
    CHECK(got.calls == 1);

    OK(statestore_close(client));
    OK(statestore_client_free(client));
    printf("test_batch: ok\n");
    return 0;
}
