/* One handle slot created and freed more than 2^24 times, as a program that makes and frees
 * one handle per request does over hours: every new handle works, and a freed one stays
 * refused. (Not run under valgrind: 50 million calls would take hours there.) */
#include <stdint.h>

#include "check.h"

int main(void) {
    test_deadline(600);
    statestore_options *first = NULL;
    OK(statestore_options_new(&first));
    OK(statestore_options_free(first));
    /* Frees reuse the last freed slot, so every handle below comes from the same slot. */
    const unsigned long cycles = (1UL << 24) + 64;
    for (unsigned long i = 0; i < cycles; i++) {
        statestore_options *options = NULL;
        statestore_status created = statestore_options_new(&options);
        statestore_status used = created == STATESTORE_OK
                                     ? statestore_options_set_port(options, 1883)
                                     : created;
        if (used != STATESTORE_OK) {
            fprintf(stderr, "cycle %lu: handle %p: %s: %s\n", i, (void *)options,
                    statestore_status_name(used), statestore_last_error_message());
            return 1;
        }
        OK(statestore_options_free(options));
    }
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_options_set_port(first, 1883));
    FAILS(STATESTORE_ERR_INVALID_ARGUMENT, statestore_options_free(first));
    printf("test_handle_reuse: ok (%lu cycles)\n", cycles);
    return 0;
}
