/* _async completions run from a libuv loop (STATESTORE_CALLBACKS_LOOP): the client's completion
 * descriptor is watched by a uv_poll_t, whose callback runs what is ready with
 * statestore_dispatch(), on the loop's thread. A timer stands for the program's other work.
 *
 *   cc libuv_loop.c -o libuv_loop $(pkg-config --cflags --libs statestore libuv)
 *   ./libuv_loop [port]
 */
#define _POSIX_C_SOURCE 200809L /* uv.h needs POSIX types under -std=c11 */
#include <statestore.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#define GETS 3

static statestore_client *client;
static uv_poll_t completions;
static uv_timer_t give_up;
static int answered;

static void on_get(void *user, statestore_status status, const char *message,
                   const statestore_value *value) {
    (void)user;
    if (status != STATESTORE_OK) fprintf(stderr, "get: %s\n", message);
    else if (value) printf("color = %.*s\n", (int)value->len, (const char *)value->data);
    if (++answered == GETS) {  /* the loop's thread: no lock needed */
        uv_poll_stop(&completions);
        uv_timer_stop(&give_up);
    }
}

static void on_readable(uv_poll_t *handle, int status, int events) {
    (void)handle;
    (void)events;
    if (status == 0) statestore_dispatch(client, NULL);
}

static void on_timeout(uv_timer_t *timer) {
    (void)timer;
    fprintf(stderr, "no answer in time\n");
    uv_poll_stop(&completions);
}

int main(int argc, char **argv) {
    statestore_options *options;
    int fd;
    statestore_options_new(&options);
    statestore_options_set_port(options, argc > 1 ? (uint16_t)atoi(argv[1]) : 1883);
    statestore_options_set_callback_mode(options, STATESTORE_CALLBACKS_LOOP);
    if (statestore_connect(options, &client) != STATESTORE_OK) {
        fprintf(stderr, "connect: %s\n", statestore_last_error_message());
        return 1;
    }
    statestore_options_free(options);
    statestore_set(client, (const uint8_t *)"color", 5, (const uint8_t *)"blue", 4, NULL, NULL);

    uv_loop_t *loop = uv_default_loop();
    statestore_completion_fd(client, &fd);
    uv_poll_init(loop, &completions, fd);
    uv_poll_start(&completions, UV_READABLE, on_readable);
    uv_timer_init(loop, &give_up);
    uv_timer_start(&give_up, on_timeout, 10000, 0);
    for (int i = 0; i < GETS; i++)
        statestore_get_async(client, (const uint8_t *)"color", 5, -1, on_get, NULL);
    uv_run(loop, UV_RUN_DEFAULT);

    /* the poll handle is closed before the client frees its descriptor */
    uv_close((uv_handle_t *)&completions, NULL);
    uv_close((uv_handle_t *)&give_up, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    statestore_client_free(client);
    return answered == GETS ? 0 : 1;
}
