"""The binding's runtime behaviour: GIL, Ctrl-C, cancellation, close with calls in flight, fork,
exit with open clients, import cost, bad input."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import statestore
from statestore import AsyncClient, Client
from statestore.testing import LocalStateStore

from conftest import Served


def run_python(code: str, timeout: float = 30, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, **kw  # type: ignore[call-overload]
    )


def test_import_starts_no_thread() -> None:
    r = run_python(
        """
        import os, time
        t = time.perf_counter()
        import statestore
        ms = (time.perf_counter() - t) * 1000
        print(len(os.listdir(f"/proc/{os.getpid()}/task")), ms)
        """
    )
    assert r.returncode == 0, r.stderr
    threads, ms = r.stdout.split()
    assert threads == "1"
    print(f"import statestore: {float(ms):.1f} ms")


def test_gil_released_during_blocking_wait(client: Client, key: str) -> None:
    # A lock held elsewhere: the main thread blocks in acquire() while a second Python thread
    # counts; the count only advances if the wait released the GIL.
    holder = client.lock(key, ttl=10.0).acquire()
    progress = 0
    released = threading.Event()

    def count_then_release() -> None:
        nonlocal progress
        while progress < 1000:
            progress += 1
            if progress % 100 == 0:
                time.sleep(0)
        holder.release()
        released.set()

    t = threading.Thread(target=count_then_release)
    t.start()
    guard = client.lock(key, ttl=10.0, timeout=30).acquire()  # returns once the thread released
    # The count ended before the release that let acquire() return; `released` is set after
    # release() returns in that thread, which may run after this one goes on.
    assert progress == 1000
    assert released.wait(30)
    guard.release()
    t.join(10)


@pytest.mark.parametrize("what", ["lock", "lease", "update", "campaign", "observe"])
def test_ctrl_c_interrupts_a_blocking_wait(server: LocalStateStore, key: str, what: str) -> None:
    code = f"""
        import statestore, sys, time
        c = statestore.Client.connect({server.host!r}, {server.port})
        held = c.lock({key!r}, ttl=30.0).acquire()
        obs = c.observe({key!r} + "-obs")
        print("waiting", flush=True)
        try:
            if {what!r} == "lock":
                c.lock({key!r}, ttl=30.0).acquire()
            elif {what!r} == "lease":
                c.lease({key!r}, "other").acquire(30.0)
            elif {what!r} == "update":
                c.lock({key!r}, ttl=30.0).update({key!r} + "-value", lambda old: "v")
            elif {what!r} == "campaign":
                c.election({key!r}, "other").campaign()
            else:
                next(iter(obs))
        except KeyboardInterrupt:
            print("interrupted", time.monotonic(), flush=True)
            held.release()
            c.close()
            sys.exit(0)
        sys.exit(3)
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "waiting"
        time.sleep(0.3)  # let it enter the wait (no event tells us it did)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        line = proc.stdout.readline().split()
        assert line and line[0] == "interrupted", proc.stderr.read() if proc.stderr else ""
        print(f"KeyboardInterrupt after {(float(line[1]) - sent) * 1000:.0f} ms")
        assert proc.wait(20) == 0
    finally:
        proc.kill()
        proc.wait()


async def test_cancel_cancels_the_request(aclient: AsyncClient, key: str) -> None:
    async with aclient.lock(key, ttl=10.0):
        task = asyncio.create_task(aclient.lock(key, ttl=10.0).acquire())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    # The cancelled acquisition does not hold the lock afterwards.
    assert await aclient.lock(key).holder() is None
    async with aclient.lock(key, ttl=10.0, timeout=5):
        pass


async def test_wait_for_timeout(aclient: AsyncClient, key: str) -> None:
    async with aclient.lock(key, ttl=10.0):
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(aclient.lock(key, ttl=10.0).acquire(), 0.2)


def test_close_with_calls_in_flight(server: LocalStateStore, key: str) -> None:
    c = server.client()
    held = c.lock(key, ttl=10.0).acquire()
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            c.lock(key, ttl=10.0).acquire()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=wait) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.2)  # let them wait (no event tells us they did)
    c.close()
    for t in threads:
        t.join(10)
    assert len(errors) == 4 and all(isinstance(e, statestore.ClosedError) for e in errors), errors
    assert held.fencing_token is not None


async def test_async_close_with_calls_in_flight(server: LocalStateStore, key: str) -> None:
    c = await server.async_client()
    held = await c.lock(key, ttl=10.0).acquire()
    waits = [asyncio.create_task(c.lock(key, ttl=10.0).acquire()) for _ in range(4)]
    await asyncio.sleep(0.1)
    await c.close()
    results = await asyncio.gather(*waits, return_exceptions=True)
    assert all(isinstance(r, statestore.ClosedError) for r in results), results
    assert held.fencing_token is not None


def test_async_from_several_loops_and_threads(server: LocalStateStore, key: str) -> None:
    errors: list[BaseException] = []

    def run(i: int) -> None:
        async def main() -> None:
            async with await server.async_client() as c:
                await asyncio.gather(*(c.set(f"{key}{i}-{j}", "x") for j in range(50)))
                assert len([k async for k in c.keys(f"{key}{i}-*")]) == 50

        try:
            asyncio.run(main())
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors


async def test_one_client_shared_by_two_loops(server: LocalStateStore, key: str) -> None:
    c = await server.async_client()
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(asyncio.run(c.set(key, "other loop"))))
    t.start()
    await asyncio.get_running_loop().run_in_executor(None, t.join, 10)
    assert result and result[0].applied  # type: ignore[attr-defined]
    assert (await c.get(key)).value == b"other loop"  # type: ignore[union-attr]
    await c.close()


def test_fork_child_gets_its_own_client(server: LocalStateStore, key: str) -> None:
    parent = server.client()
    parent.set(key, "parent")
    pid = os.fork()
    if pid == 0:  # child: exit code tells the parent what happened
        status = 1
        try:
            try:
                parent.get(key)
                status = 2  # the parent's client must not work here
            except statestore.RuntimeError:  # fails at once, not after a timeout
                with Client.connect(server.host, server.port) as child:
                    status = 0 if child.get(key).value == b"parent" else 3  # type: ignore[union-attr]
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert parent.get(key).value == b"parent"  # type: ignore[union-attr]
    parent.close()


def test_fork_every_inherited_object_fails_at_once(server: LocalStateStore, key: str) -> None:
    """Core refuses, in a forked child, every operation of an object made in the parent that
    needs the parent's connection (the binding does not check the process itself)."""
    parent = Client.connect(server.host, server.port, default_timeout=10)
    lease = parent.lease(key + "lease", "parent")
    lease.acquire(30.0)
    lock = parent.lock(key + "lock", 30.0)
    guard = lock.acquire()
    election = parent.election(key + "election", "parent", 30.0)
    election.campaign()
    obs = parent.observe(key)
    loop = asyncio.new_event_loop()
    aparent = loop.run_until_complete(AsyncClient.connect(server.host, server.port, default_timeout=10))
    calls = {
        "get": lambda: parent.get(key),
        "set": lambda: parent.set(key, "child"),
        "delete": lambda: parent.delete(key),
        "vdel": lambda: parent.vdel(key, "x"),
        "keys": lambda: list(parent.keys("*")),
        "observe": lambda: parent.observe(key + "2"),
        "unobserve": lambda: parent.unobserve(key),
        "observation.next": lambda: obs.next(timeout=5),
        "lease.renew": lease.renew,
        "lease.holder": lease.holder,
        "lease.release": lease.release,
        "lock.try_acquire": lock.try_acquire,
        "lock.holder": lock.holder,
        "lock.update": lambda: lock.update(key, lambda old: "child"),
        "guard.renew": guard.renew,
        "guard.release": guard.release,
        "election.leader": election.leader,
        "election.try_campaign": election.try_campaign,
        "election.resign": election.resign,
        "async get": lambda: asyncio.new_event_loop().run_until_complete(aparent.get(key)),
        "async set": lambda: asyncio.new_event_loop().run_until_complete(aparent.set(key, "child")),
        "close": parent.close,  # last: refused too, so the parent's client stays open
    }
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: reports each call that did not raise statestore.RuntimeError
        wrong = []
        try:
            for name, call in calls.items():
                try:
                    call()
                    wrong.append(f"{name}: no error")
                except statestore.RuntimeError:
                    pass
                except BaseException as e:  # noqa: BLE001 - reported to the parent
                    wrong.append(f"{name}: {type(e).__name__}: {e}")
            os.write(write, "\n".join(wrong).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        wrong = f.read()
    os.waitpid(pid, 0)
    assert wrong == "", wrong
    # The parent's objects are untouched.
    assert lease.held and guard.held and election.is_leader
    parent.set(key, "parent")
    assert obs.next(timeout=10).value == b"parent"  # type: ignore[union-attr]
    loop.run_until_complete(aparent.close())
    loop.close()
    parent.close()


def test_exit_with_open_clients_and_observations(server: LocalStateStore, key: str) -> None:
    r = run_python(
        f"""
        import asyncio, statestore
        c = statestore.Client.connect({server.host!r}, {server.port})
        obs = c.observe({key!r})
        lease = c.lease({key!r} + "l", "me", auto_renew=True)
        lease.acquire(10.0)
        async def main():
            a = await statestore.AsyncClient.connect({server.host!r}, {server.port})
            globals()["a"] = a
            globals()["aobs"] = await a.observe({key!r})
        asyncio.run(main())
        print("bye")
        """,
        timeout=30,
    )
    assert r.returncode == 0 and r.stdout.strip() == "bye", r.stderr


def test_exit_closes_open_clients_leaving_no_subscription(key: str) -> None:
    """Clients still open at interpreter exit end their sessions as close() does: the session
    the broker keeps for each holds no subscription to its topics."""
    served = Served("embedded")
    try:
        ids = [f"{key}-sync", f"{key}-async"]
        r = run_python(
            f"""
            import asyncio, statestore
            c = statestore.Client.connect("127.0.0.1", {served.port}, client_id={ids[0]!r})
            obs = c.observe("k")
            async def main():
                a = await statestore.AsyncClient.connect("127.0.0.1", {served.port}, client_id={ids[1]!r})
                globals()["a"] = a
                await a.get("k")
            asyncio.run(main())
            print("bye")
            """,
            timeout=30,
        )
        assert r.returncode == 0 and r.stdout.strip() == "bye", r.stderr
        assert [served.leftover(client_id) for client_id in ids] == [None, None]
    finally:
        served.stop()


def test_a_thread_returning_from_the_library_at_exit_stays_in_it() -> None:
    """Once the exit handler ran, a thread whose call returns parks in the library instead of
    taking the GIL back: before Python 3.14 the interpreter ends such a thread with pthread_exit
    while it finalizes, which aborted the process through the library's Rust frames ("FATAL:
    exception not rethrown"). The exiting thread itself still uses the library."""
    r = run_python(
        """
        import threading, statestore
        from statestore import _native
        from statestore.testing import LocalStateStore
        server = LocalStateStore()
        c = server.client()
        obs = c.observe("k")
        waiting, returned = threading.Event(), threading.Event()
        def wait_for_an_event():
            waiting.set()
            obs.next(timeout=10)  # returns every 50 ms to check signals: parks at the first after exiting()
            returned.set()
        worker = threading.Thread(target=wait_for_an_event, daemon=True)
        worker.start()
        waiting.wait(10)
        _native.exiting()  # what statestore's atexit handler does first
        c.set("k", "from the exiting thread")  # the exiting thread is not held back
        worker.join(3)
        print("parked" if worker.is_alive() and not returned.is_set() else "returned")
        """
    )
    assert r.returncode == 0 and r.stdout.strip() == "parked", (r.stdout, r.stderr)


def test_exit_with_a_server_running() -> None:
    r = run_python(
        """
        from statestore.testing import LocalStateStore
        s = LocalStateStore()
        c = s.client()
        c.set("k", "v")
        print("bye")
        """
    )
    assert r.returncode == 0 and r.stdout.strip() == "bye", r.stderr


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda c: c.set(1, "v"), "key"),
        (lambda c: c.set("k", None), "value"),
        (lambda c: c.set("k", "v", expiry="10s"), "expiry"),
        (lambda c: c.set("k", "v", expiry=True), "expiry"),
        (lambda c: c.set("k", "v", fencing_token=12), "fencing_token"),
        (lambda c: c.set("k", "v", timeout=[1]), "timeout"),
        (lambda c: c.set("k", "v", condition=3), "condition"),
        (lambda c: c.get(object()), "key"),
        (lambda c: c.delete(1.5), "key"),
        (lambda c: c.vdel("k", 5), "value"),
        (lambda c: c.observe(None), "key"),
        (lambda c: c.lock(7), "name"),
        (lambda c: c.lock("n", ttl="x"), "ttl"),
        (lambda c: c.lease("k", 3), "holder"),
        (lambda c: c.election("e", "c", ttl=None), "ttl"),
        (lambda c: list(c.keys(5)), "pattern"),
    ],
)
def test_wrong_types_name_the_parameter(client: Client, call: object, param: str) -> None:
    with pytest.raises(TypeError, match=param):
        call(client)  # type: ignore[operator]


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda c: c.set("", "v"), statestore.InvalidArgumentError),
        (lambda c: c.set("k", "v", expiry=0), statestore.InvalidArgumentError),
        (lambda c: c.set("k", "v", expiry=-1), ValueError),
        (lambda c: c.set("k", "v", expiry=float("nan")), ValueError),
        (lambda c: c.set("k", "v", expiry=float("inf")), ValueError),
        (lambda c: c.set("k", "v", condition="maybe"), ValueError),
        (lambda c: c.set("k", "v", fencing_token="garbage"), ValueError),
        (lambda c: c.set("k", b"x" * (5 * 1024 * 1024)), statestore.InvalidArgumentError),
        (lambda c: c.get("k", timeout=0), statestore.InvalidArgumentError),
        (lambda c: c.lock("n", ttl=0).acquire(), statestore.InvalidArgumentError),
        (lambda c: c.lease("", "me"), statestore.InvalidArgumentError),
        (lambda c: c.lease("k", "me").renew(), statestore.NotHeldError),
    ],
)
def test_bad_values(client: Client, call: object, error: type) -> None:
    with pytest.raises(error) as info:
        call(client)  # type: ignore[operator]
    if isinstance(info.value, statestore.StateStoreError):
        assert info.value.code > 0 and info.value.name and str(info.value)
    assert isinstance(info.value, ValueError) or isinstance(info.value, statestore.StateStoreError)


def test_argument_mistakes_name_the_public_method(client: Client) -> None:
    with pytest.raises(TypeError, match=r"^Client\.set\(\) got an unexpected keyword argument 'expirey'$"):
        client.set("k", "v", expirey=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^Client\.get\(\) missing 1 required positional argument: 'key'$"):
        client.get()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^Client\.lock\(\) got an unexpected keyword"):
        client.lock("l", tll=1.0)  # type: ignore[call-arg]


async def test_argument_mistakes_name_the_public_async_method(aclient: AsyncClient) -> None:
    with pytest.raises(TypeError, match=r"^AsyncClient\.set\(\) got an unexpected keyword argument 'expirey'$"):
        await aclient.set("k", "v", expirey=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^AsyncClient\.delete\(\) got an unexpected keyword"):
        await aclient.delete("k", fencing=None)  # type: ignore[call-arg]


def test_error_classes() -> None:
    assert issubclass(statestore.TimeoutError, TimeoutError)
    assert issubclass(statestore.InvalidArgumentError, ValueError)
    assert issubclass(statestore.ConnectionLostError, ConnectionError)
    assert issubclass(statestore.QuotaExceededError, statestore.ServiceError)
    assert statestore.QuotaExceededError.code == 104 and statestore.QuotaExceededError.name == "QUOTA_EXCEEDED"
    codes = {cls.code for cls in vars(statestore).values() if isinstance(cls, type) and issubclass(cls, statestore.StateStoreError) and cls.code > 0}
    assert len(codes) == len(statestore._native.error_codes())


def test_call_waited_twice_is_an_error(client: Client) -> None:
    call = client._native.get("k", None)
    call.wait()
    with pytest.raises(RuntimeError):
        call.wait()


def test_readme_example_runs_as_written() -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
    example = re.findall(r"```python\n(.*?)```", readme, re.S)[0]
    r = run_python(example)
    assert r.returncode == 0, r.stderr
    assert "b'blue'" in r.stdout and "b'report'" in r.stdout
