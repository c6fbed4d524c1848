// The C++17 layer, using only statestore.hpp: RAII, exceptions with codes, optional results,
// lambdas for async calls and events, lock update from several threads.
#include <poll.h>
#include <statestore.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <iostream>
#include <thread>
#include <unistd.h>

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                               \
        }                                                                               \
    } while (0)

using namespace std::chrono_literals;

static std::string key(const std::string &name) {
    return "cpptest/" + std::to_string(getpid()) + "/" + name;
}

int main() {
    alarm(std::getenv("STATESTORE_TEST_SLOWDOWN") ? 60u * unsigned(std::atoi(std::getenv("STATESTORE_TEST_SLOWDOWN"))) : 60u);
    try {
        statestore::Options options;
        options.host("127.0.0.1").set("port", std::getenv("STATESTORE_TEST_PORT")).default_timeout(10s);
        auto client = statestore::Client::connect(options);
        CHECK(!client.client_id().empty());

        // connection state, and its changes as events
        CHECK(client.connection_state() == statestore::ConnectionState::Connected);
        {
            auto other = statestore::Client::connect(options);
            auto changes = other.connection_events();
            other.close();
            auto closed = changes.next(10s);
            CHECK(closed && closed->kind == statestore::EventKind::Connection);
            CHECK(closed->connection_state == statestore::ConnectionState::Closed && !closed->connection_delay);
            CHECK(other.connection_state() == statestore::ConnectionState::Closed);
        }

        // blocking
        auto k = key("color");
        auto set = client.set(k, std::string("bl\0ue", 5));
        CHECK(set.applied && set.version);
        auto value = client.get(k);
        CHECK(value && value->data == std::string("bl\0ue", 5) && value->version);
        statestore::SetOptions nx;
        nx.condition = statestore::Condition::IfAbsent;
        CHECK(!client.set(k, "red", nx).applied);
        CHECK(client.keys("cpptest/" + std::to_string(getpid()) + "/*").size() == 1);
        CHECK(client.vdel(k, "red").outcome == statestore::DeleteOutcome::ValueMismatch);
        CHECK(client.del(k).outcome == statestore::DeleteOutcome::Deleted);
        CHECK(!client.get(k));

        // a connection URL; options set beside it win
        auto url = std::string("mqtt://127.0.0.1:") + std::getenv("STATESTORE_TEST_PORT") + "?client_id=cpp-url";
        CHECK(statestore::Client::connect_url(url).client_id() == "cpp-url");
        statestore::Options named;
        named.set("client_id", "cpp-url-2");
        CHECK(statestore::Client::connect_url(url, named).client_id() == "cpp-url-2");
        try {
            statestore::Client::connect_url("mqtt://ann:Do-Not-Print-Me@127.0.0.1:0");
            CHECK(false);
        } catch (const statestore::Error &e) {
            CHECK(e.code() == STATESTORE_ERR_INVALID_ARGUMENT);
            CHECK(std::string(e.what()).find("Do-Not-Print-Me") == std::string::npos);
        }

        // batches: one Result per key in order, a failed key's Error in its place
        auto ka = key("batch-a"), kb = key("batch-b"), lockk = key("batch-lock"), fenced = key("batch-fenced");
        auto written = client.set_many({{ka, "1"}, {kb, "2"}});
        CHECK(written.size() == 2 && written[0].ok() && written[1].value().applied);
        auto read = client.get_many({kb, key("batch-none"), ka});
        CHECK(read.size() == 3 && read[0].value()->data == "2" && !read[1].value() && read[2].value()->data == "1");
        auto older = client.set(lockk, "me").version, newer = client.set(lockk, "me").version;
        statestore::SetOptions with_newer, with_older;
        with_newer.fencing_token = newer;
        with_older.fencing_token = older;
        client.set(fenced, "v1", with_newer);
        auto mixed = client.set_many({{key("batch-free"), "x"}, {fenced, "x"}}, with_older);
        CHECK(mixed[0].ok() && mixed[1].error() && mixed[1].error()->code() == STATESTORE_ERR_FENCING_TOKEN_LOWER_VERSION);
        std::promise<std::vector<statestore::Result<statestore::DeleteResult>>> batch_deleted;
        client.delete_many_async({ka, kb}, {}, [&](auto r) { batch_deleted.set_value(r.take()); });
        auto outcomes = batch_deleted.get_future().get();
        CHECK(outcomes.size() == 2 && outcomes[0].value().outcome == statestore::DeleteOutcome::Deleted);
        CHECK(client.get_many({}).empty());

        // errors are exceptions with the code
        try {
            client.get("");
            CHECK(false);
        } catch (const statestore::Error &e) {
            CHECK(e.code() == STATESTORE_ERR_INVALID_ARGUMENT);
            CHECK(std::string(e.name()) == "INVALID_ARGUMENT");
            CHECK(std::string(e.what()).find("key") != std::string::npos);
        }

        // conditions by the names every language accepts
        CHECK(statestore::condition_from_name("NX") == statestore::Condition::IfAbsent);
        CHECK(statestore::condition_from_name("only_if_absent_or_equal") ==
              statestore::Condition::IfAbsentOrEqual);
        try {
            statestore::condition_from_name("sometimes");
            CHECK(false);
        } catch (const statestore::Error &e) {
            CHECK(e.code() == STATESTORE_ERR_INVALID_ARGUMENT);
            CHECK(std::string(e.what()).find("\"sometimes\"") != std::string::npos);
        }

        // async with lambdas
        std::promise<statestore::Result<statestore::SetResult>> set_done;
        client.set_async(k, "async", {}, [&](statestore::Result<statestore::SetResult> r) { set_done.set_value(std::move(r)); });
        CHECK(set_done.get_future().get().value().applied);
        std::promise<std::optional<statestore::Value>> got;
        client.get_async(k, [&](statestore::Result<std::optional<statestore::Value>> r) { got.set_value(r.take()); });
        auto async_value = got.get_future().get();
        CHECK(async_value && async_value->data == "async");
        std::promise<statestore::DeleteOutcome> deleted;
        client.del_async(k, [&](statestore::Result<statestore::DeleteResult> r) { deleted.set_value(r.value().outcome); });
        CHECK(deleted.get_future().get() == statestore::DeleteOutcome::Deleted);

        // observation: pull, then push
        auto obs = client.observe(k);
        CHECK(obs.key() == k);
        CHECK(!obs.next(0ms));
        client.set(k, "x");
        auto event = obs.next(10s);
        CHECK(event && event->kind == statestore::EventKind::Set && event->value == std::optional<std::string>("x"));
        std::promise<std::string> pushed;
        std::promise<void> ended;
        std::atomic<int> pushes{0};
        obs.on_event([&](std::optional<statestore::Event> e) {
            if (!e) {
                ended.set_value();
            } else if (pushes++ == 0) {
                pushed.set_value(e->kind == statestore::EventKind::Delete ? "delete" : "other");
            }
        });
        client.del(k);
        CHECK(pushed.get_future().get() == "delete");
        obs.close();
        ended.get_future().get();

        // lock update from several threads
        auto lock = client.lock(key("lock"), 5s);
        auto counter = key("counter");
        std::vector<std::thread> threads;
        for (int t = 0; t < 3; t++) {
            threads.emplace_back([&] {
                for (int i = 0; i < 3; i++) {
                    lock.update(counter, [](std::optional<std::string_view> old) -> std::optional<std::string> {
                        int n = old ? std::stoi(std::string(*old)) : 0;
                        return std::to_string(n + 1);
                    }, 30s);
                }
            });
        }
        for (auto &t : threads) t.join();
        CHECK(client.get(counter)->data == "9");
        // an exception in the update writes nothing and comes back
        try {
            lock.update(counter, [](std::optional<std::string_view>) -> std::optional<std::string> {
                throw std::runtime_error("changed my mind");
            });
            CHECK(false);
        } catch (const std::runtime_error &e) {
            CHECK(std::string(e.what()) == "changed my mind");
        }
        CHECK(client.get(counter)->data == "9");
        // update_async: 4 increments in flight at once, each run once on a library thread
        {
            std::atomic<int> done_count{0};
            std::promise<void> all_done;
            auto caller = std::this_thread::get_id();
            std::atomic<bool> off_caller{true};
            for (int i = 0; i < 4; i++) {
                lock.update_async(counter, [&](std::optional<std::string_view> old) -> std::optional<std::string> {
                    if (std::this_thread::get_id() == caller) off_caller = false;
                    return std::to_string(std::stoi(std::string(*old)) + 1);
                }, [&](statestore::Result<std::optional<std::string>> r) {
                    CHECK(r.ok() && r.value());
                    if (++done_count == 4) all_done.set_value();
                }, 30s);
            }
            all_done.get_future().get();
            CHECK(off_caller && done_count == 4);
            CHECK(client.get(counter)->data == "13");
        }
        // an exception in an async update writes nothing and reaches the completion
        {
            std::promise<statestore::Result<std::optional<std::string>>> outcome;
            lock.update_async(counter, [](std::optional<std::string_view>) -> std::optional<std::string> {
                throw std::runtime_error("not now");
            }, [&](statestore::Result<std::optional<std::string>> r) { outcome.set_value(std::move(r)); });
            auto r = outcome.get_future().get();
            CHECK(!r.ok() && r.error()->code() == STATESTORE_ERR_CANCELLED);
            CHECK(std::string(r.error()->what()) == "not now");
            CHECK(client.get(counter)->data == "13");
        }
        // deleting through update_async completes with std::nullopt
        {
            std::promise<statestore::Result<std::optional<std::string>>> outcome;
            lock.update_async(counter, [](std::optional<std::string_view>) -> std::optional<std::string> {
                return std::nullopt;
            }, [&](statestore::Result<std::optional<std::string>> r) { outcome.set_value(std::move(r)); });
            auto r = outcome.get_future().get();
            CHECK(r.ok() && !r.value());
            CHECK(!client.get(counter));
        }
        {
            auto guard = lock.acquire(10s);
            CHECK(guard.held());
            statestore::DeleteOptions fenced;
            fenced.fencing_token = guard.fencing_token();
            client.del(counter, fenced);
            CHECK(!lock.try_acquire());
        }  // the guard releases in the background here
        std::promise<bool> relocked;
        lock.acquire_async(30s, [&](statestore::Result<statestore::LockGuard> r) {
            auto guard = r.take();
            relocked.set_value(guard.held());
            guard.release();
        });
        CHECK(relocked.get_future().get());

        // inline callbacks: the lambda runs off the caller's thread, exactly once
        {
            statestore::Options fast;
            fast.host("127.0.0.1").set("port", std::getenv("STATESTORE_TEST_PORT")).inline_callbacks();
            auto quick = statestore::Client::connect(fast);
            std::promise<std::thread::id> where;
            quick.get_async(k, [&](statestore::Result<std::optional<statestore::Value>> r) {
                CHECK(r.ok());
                where.set_value(std::this_thread::get_id());
            });
            CHECK(where.get_future().get() != std::this_thread::get_id());
        }

        // loop callbacks: the lambda runs inside dispatch(), on this thread
        {
            statestore::Options looped;
            looped.host("127.0.0.1").set("port", std::getenv("STATESTORE_TEST_PORT")).loop_callbacks();
            auto loop = statestore::Client::connect(looped);
            std::thread::id where;
            int calls = 0;
            loop.get_async(k, [&](statestore::Result<std::optional<statestore::Value>> r) {
                CHECK(r.ok());
                where = std::this_thread::get_id();
                calls++;
            });
            struct pollfd p = {loop.completion_fd(), POLLIN, 0};
            while (calls == 0) {
                CHECK(poll(&p, 1, -1) == 1);
                loop.dispatch();
            }
            CHECK(calls == 1 && where == std::this_thread::get_id());
            bool refused = false;
            try {
                client.completion_fd();
            } catch (const statestore::Error &e) {
                refused = e.code() == STATESTORE_ERR_INVALID_ARGUMENT;
            }
            CHECK(refused);
        }

        // lease and election
        auto lease = client.lease(key("lease"), "me");
        auto token = lease.acquire(5s, 10s);
        CHECK(lease.fencing_token() == token && lease.held());
        CHECK(lease.holder() == std::optional<std::string>("me"));
        CHECK(lease.release());
        auto election = client.election(key("election"), "cpp", 5s);
        election.campaign(10s);
        CHECK(election.is_leader() && election.leader() == std::optional<std::string>("cpp"));
        election.resign();

        client.close();
        try {
            client.get(k);
            CHECK(false);
        } catch (const statestore::Error &e) {
            CHECK(e.code() == STATESTORE_ERR_CLOSED);
        }
    } catch (const std::exception &e) {
        std::cerr << "unexpected exception: " << e.what() << "\n";
        return 1;
    }
    std::puts("test_cpp: ok");
    return 0;
}
