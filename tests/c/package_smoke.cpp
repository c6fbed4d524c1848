// The C++ layer built from a prebuilt package the way a user would: connect, set, get, and
// the version. Usage: package_smoke_cpp PORT EXPECTED_VERSION; exit status 0 only if all
// checks pass.
#include <statestore.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        std::cerr << "usage: package_smoke_cpp PORT EXPECTED_VERSION\n";
        return 1;
    }
    alarm(30);  // the deadline: SIGALRM ends a stuck run
    const std::string expected = argv[2];
    if (statestore_version() != expected || STATESTORE_VERSION != expected) {
        std::cerr << "version: library " << statestore_version() << ", header " << STATESTORE_VERSION
                  << ", expected " << expected << "\n";
        return 1;
    }
    try {
        {
            auto client = statestore::Client::connect(
                statestore::Options().host("127.0.0.1").port(uint16_t(std::atoi(argv[1]))));
            const std::string key = "package-smoke/cpp/" + std::to_string(getpid());
            client.set(key, "green");
            auto value = client.get(key);
            if (!value || value->data != "green") {
                std::cerr << "get returned " << (value ? value->data : "nothing") << "\n";
                return 1;
            }
            bool refused = false;
            try {
                statestore::shutdown();  // the client is still open
            } catch (const statestore::Error &e) {
                refused = e.code() == STATESTORE_ERR_RUNTIME;
            }
            if (!refused) {
                std::cerr << "shutdown with an open client was not refused\n";
                return 1;
            }
        }
        statestore::shutdown();  // the client is gone
    } catch (const statestore::Error &e) {
        std::cerr << "package_smoke_cpp: " << e.what() << "\n";
        return 1;
    }
    std::cout << "package_smoke_cpp: ok (libstatestore " << statestore_version() << ")\n";
    return 0;
}
