/* statestore_version() and the header's STATESTORE_VERSION* macros agree with each other and
 * with the workspace version in Cargo.toml, which scripts/test-c.sh passes in as
 * STATESTORE_TEST_CARGO_VERSION: a header not regenerated after a version bump fails here. */
#include "check.h"

#ifndef STATESTORE_TEST_CARGO_VERSION
#error "compile with -DSTATESTORE_TEST_CARGO_VERSION='\"MAJOR.MINOR.PATCH\"' (root Cargo.toml)"
#endif

/* The macros are integer constants a program can test in #if. */
#if !(STATESTORE_VERSION_MAJOR >= 0 && STATESTORE_VERSION_MINOR >= 0 && STATESTORE_VERSION_PATCH >= 0)
#error "STATESTORE_VERSION_MAJOR/MINOR/PATCH are not usable in #if"
#endif

int main(void) {
    test_deadline(10);
    const char *version = statestore_version();
    CHECK(version != NULL);
    CHECK(strcmp(version, STATESTORE_TEST_CARGO_VERSION) == 0);
    CHECK(strcmp(STATESTORE_VERSION, STATESTORE_TEST_CARGO_VERSION) == 0);
    /* static: the same string on every call, from any thread */
    CHECK(statestore_version() == version);

    char parts[64];
    int n = snprintf(parts, sizeof parts, "%d.%d.%d", STATESTORE_VERSION_MAJOR,
                     STATESTORE_VERSION_MINOR, STATESTORE_VERSION_PATCH);
    CHECK(n > 0 && (size_t)n < sizeof parts);
    /* a pre-release or build suffix ("0.2.0-rc.1") is in the string only */
    CHECK(strncmp(version, parts, (size_t)n) == 0);
    CHECK(version[n] == '\0' || version[n] == '-' || version[n] == '+');
    printf("test_version: ok (%s)\n", version);
    return 0;
}
