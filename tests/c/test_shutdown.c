/* statestore_shutdown(): refused (changing nothing) while a handle is live or inside a
 * callback; once everything is freed it ends the library's threads; the library then starts
 * them again on next use. */
#include "check.h" /* first: it sets _POSIX_C_SOURCE */

#include <dirent.h>
#include <stdint.h>
#include <time.h>

/* The threads of this process whose name starts with `prefix` (Linux: /proc/self/task). */
static int threads_named(const char *prefix) {
    DIR *dir = opendir("/proc/self/task");
    CHECK(dir != NULL);
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", entry->d_name);
        FILE *comm = fopen(path, "r");
        if (comm == NULL) continue; /* the thread just ended */
        if (fgets(name, sizeof name, comm) != NULL && strncmp(name, prefix, strlen(prefix)) == 0)
            count++;
        fclose(comm);
    }
    closedir(dir);
    return count;
}

/* Whether every thread named `prefix`... is gone within `seconds`. statestore_shutdown() returns
 * once the library's threads have ended, but the kernel lists a thread that has ended (and been
 * joined) until it has reaped it, which can take a moment under valgrind: there is no event for
 * that, so this polls. */
static int threads_gone(const char *prefix, int seconds) {
    for (int waited_ms = 0; waited_ms < seconds * 1000; waited_ms += 10) {
        if (threads_named(prefix) == 0) return 1;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return threads_named(prefix) == 0;
}

typedef struct {
    statestore_status status;
    waiter done;
} shutdown_call;

static void shutdown_in_callback(void *user, statestore_status status, const char *message,
                                 const statestore_set_result *result) {
    (void)status; (void)message; (void)result;
    shutdown_call *call = user;
    call->status = statestore_shutdown();
    waiter_add(&call->done);
}

static void use_once(const char *key) {
    statestore_client *client = test_connect();
    OK(statestore_set(client, K(key), K("v"), NULL, NULL));
    OK(statestore_client_free(client));
}

int main(void) {
    test_deadline(60);
    char k[128];
    test_key(k, sizeof k, "shutdown");
    OK(statestore_shutdown()); /* nothing started yet: nothing to do */

    statestore_client *client = test_connect();
    statestore_lock *lock = NULL;
    OK(statestore_lock_new(client, K(k), 1000, &lock));
    CHECK(threads_named("statestore-rt") > 0);

    /* refused while handles are live: the message counts them */
    FAILS(STATESTORE_ERR_RUNTIME, statestore_shutdown());
    CHECK(strstr(statestore_last_error_message(), "1 statestore_client") != NULL);
    CHECK(strstr(statestore_last_error_message(), "1 statestore_lock") != NULL);
    OK(statestore_set(client, K(k), K("still works"), NULL, NULL));

    /* refused inside a callback */
    shutdown_call call = {STATESTORE_OK, WAITER_INIT};
    OK(statestore_set_async(client, K(k), K("v"), NULL, shutdown_in_callback, &call));
    waiter_wait(&call.done, 1);
    CHECK(call.status == STATESTORE_ERR_RUNTIME);
    OK(statestore_set(client, K(k), K("still works"), NULL, NULL));

    /* everything freed: the threads end */
    OK(statestore_lock_free(lock));
    OK(statestore_client_free(client));
    OK(statestore_shutdown());
    CHECK(threads_gone("statestore-", 10));
    OK(statestore_shutdown()); /* twice is fine */

    /* the next use starts the library again; shut down once more at the end */
    use_once(k);
    CHECK(threads_named("statestore-rt") > 0);
    OK(statestore_shutdown());
    CHECK(threads_gone("statestore-", 10));
    puts("test_shutdown: ok");
    return 0;
}
