"""Hostile input through the Python binding: generated keys, values, options and
argument types of every kind, calls after close and a close racing calls from other threads.
Every call must succeed or raise a clear error (a ``statestore`` error other than
``InternalError``, or ``TypeError``/``ValueError``/``OverflowError``); the process must never
crash or hang (every test has a deadline: ``--timeout`` of pytest-timeout)."""

from __future__ import annotations

import asyncio
import math
import threading
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statestore
from statestore.testing import LocalStateStore

CLEAR = (statestore.StateStoreError, TypeError, ValueError, OverflowError)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Every kind of thing a caller may pass where bytes are expected.
anything = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=100),  # includes lone surrogates, which UTF-8 cannot encode
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(bytearray, st.binary(max_size=50)),
    st.builds(memoryview, st.binary(max_size=50)),
    st.builds(object),
)
durations = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=5),
    st.builds(object),
)


def clear(call: Callable[[], Any]) -> Any:
    """Runs ``call``: its result, or ``None`` after a clear error; anything else fails."""
    try:
        return call()
    except statestore.InternalError as error:  # a bug caught at the boundary
        pytest.fail(f"InternalError: {error}")
    except CLEAR:
        return None


def as_bytes(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


@pytest.fixture(scope="module")
def client(server: LocalStateStore) -> Any:
    with server.client(default_timeout=5.0) as client:
        yield client


@SETTINGS
@given(key=st.binary(max_size=200), value=st.binary(max_size=2000))
def test_any_bytes_round_trip_or_are_refused_clearly(client: Any, key: bytes, value: bytes) -> None:
    result = clear(lambda: client.set(key, value))
    if key == b"":
        assert result is None, "an empty key must be refused"
        return
    assert result is not None and result.applied
    read = client.get(key)
    assert read is not None and bytes(read.value) == value


@SETTINGS
@given(key=st.text(max_size=50), value=st.text(max_size=200))
def test_text_including_lone_surrogates(client: Any, key: str, value: str) -> None:
    result = clear(lambda: client.set(key, value))
    try:
        key.encode(), value.encode()
    except UnicodeEncodeError:
        assert result is None, "text that UTF-8 cannot encode must be refused"
        return
    if key == "":
        assert result is None
        return
    assert result is not None
    read = client.get(key)
    assert read is not None and bytes(read.value) == value.encode()


@SETTINGS
@given(key=anything, value=anything)
def test_wrong_types_for_keys_and_values(client: Any, key: Any, value: Any) -> None:
    clear(lambda: client.set(key, value))
    clear(lambda: client.get(key))
    clear(lambda: client.delete(key))
    clear(lambda: client.vdel(key, value))


@SETTINGS
@given(expiry=durations, timeout=durations, condition=st.one_of(st.sampled_from(["nx", "nex", "always", "NX"]),
                                                                  anything),
       token=anything, persist=anything)
def test_options_out_of_range_or_of_the_wrong_type(client: Any, expiry: Any, timeout: Any, condition: Any,
                                                    token: Any, persist: Any) -> None:
    clear(lambda: client.set("opts", "v", expiry=expiry, timeout=timeout, condition=condition,
                             fencing_token=token, persist=persist))
    clear(lambda: client.get("opts", timeout=timeout))
    clear(lambda: client.delete("opts", fencing_token=token, timeout=timeout))


@SETTINGS
@given(ttl=durations, timeout=durations, name=anything)
def test_lock_arguments(client: Any, ttl: Any, timeout: Any, name: Any) -> None:
    lock = clear(lambda: client.lock(name, ttl, timeout=timeout))
    if lock is not None:
        guard = clear(lambda: lock.try_acquire())
        if guard is not None:
            clear(guard.release)


@SETTINGS
@given(options=st.dictionaries(
    st.sampled_from(["port", "keep_alive", "session_expiry", "default_timeout", "reconnect_initial_delay",
                     "reconnect_max_delay", "reconnect_max_attempts", "reconnect_max_elapsed", "max_packet_size", "max_in_flight",
                     "client_id", "ca_file", "username",
                     "password", "password_file", "sat_token_file", "clean_start", "tls", "no_such_option"]),
    st.one_of(st.integers(min_value=-(2**40), max_value=2**40), st.floats(allow_nan=True), st.text(max_size=20),
              st.none(), st.booleans()),
    max_size=3))
def test_connect_options_out_of_range(options: dict[str, Any]) -> None:
    # Port 1 on loopback refuses at once; a short timeout bounds the attempt anyway.
    options = {"default_timeout": 1.0, **options}
    client = clear(lambda: statestore.Client.connect("127.0.0.1", 1, **options))
    if client is not None:
        client.close()


def test_huge_and_empty_values(client: Any) -> None:
    assert client.set("empty", b"").applied
    assert bytes(client.get("empty").value) == b""
    big = bytes(range(256)) * 4096 * 3  # 3 MiB, under the server's 4 MiB packet limit
    assert client.set("big", big).applied
    assert bytes(client.get("big").value) == big
    # Over the broker's maximum packet: refused before sending, or by the broker; clearly.
    assert clear(lambda: client.set("too-big", b"x" * (5 * 1024 * 1024))) is None


def test_every_call_after_close_raises_closed(server: LocalStateStore) -> None:
    client = server.client()
    client.close()
    calls: list[Callable[[], Any]] = [
        lambda: client.set("k", "v"), lambda: client.get("k"), lambda: client.delete("k"),
        lambda: client.vdel("k", "v"), lambda: list(client.keys("*")), lambda: client.observe("k"),
        lambda: client.unobserve("k"), lambda: client.lock("l", 1.0).acquire(),
        lambda: client.lease("l", "me").try_acquire(1.0), lambda: client.election("e", "me").try_campaign(),
    ]
    for call in calls:
        with pytest.raises(statestore.ClosedError):
            call()
    client.close()  # idempotent


def test_close_from_another_thread_while_calls_are_in_flight(server: LocalStateStore) -> None:
    for _ in range(20):
        client = server.client()
        errors: list[BaseException] = []
        observation = client.observe("race")

        def hammer() -> None:
            for i in range(200):
                try:
                    client.set(f"race{i}", "v")
                    client.get(f"race{i}")
                except statestore.ClosedError:
                    return
                except BaseException as error:  # noqa: BLE001 - anything else is the failure
                    errors.append(error)
                    return

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for thread in threads:
            thread.start()
        closer = threading.Thread(target=client.close)
        closer.start()
        for thread in threads + [closer]:
            thread.join(timeout=30)
            assert not thread.is_alive(), "a call hung after close"
        assert errors == []
        with pytest.raises(statestore.ClosedError):
            while True:
                observation.next(timeout=1.0)


def test_async_calls_cancelled_and_closed_midway(server: LocalStateStore) -> None:
    async def main() -> None:
        client = await server.async_client()
        tasks = [asyncio.ensure_future(client.set(f"a{i}", "v")) for i in range(200)]
        for task in tasks[::3]:
            task.cancel()
        closing = asyncio.ensure_future(client.close())
        results = await asyncio.wait_for(asyncio.gather(*tasks, closing, return_exceptions=True), 30)
        for result in results:
            if isinstance(result, BaseException):
                assert isinstance(result, (asyncio.CancelledError, statestore.ClosedError,
                                           statestore.CancelledError)), repr(result)
        with pytest.raises(statestore.ClosedError):
            await client.get("a0")

    asyncio.run(main())


@SETTINGS
@given(key=anything, value=anything, timeout=durations)
def test_async_wrong_types(server: LocalStateStore, key: Any, value: Any, timeout: Any) -> None:
    async def main() -> None:
        client = await server.async_client()
        try:
            for make in (lambda: client.set(key, value, timeout=timeout), lambda: client.get(key, timeout=timeout)):
                try:
                    await asyncio.wait_for(make(), 30)
                except statestore.InternalError as error:
                    pytest.fail(f"InternalError: {error}")
                except CLEAR:
                    pass
        finally:
            await client.close()

    asyncio.run(main())


def test_nan_and_infinite_durations_are_refused() -> None:
    for bad in (math.nan, math.inf, -1.0):
        with pytest.raises(CLEAR):
            statestore.Client.connect("127.0.0.1", 1, default_timeout=bad)


class Exploding:
    """Raises from every conversion a binding might try."""

    def __bytes__(self) -> bytes:
        raise ZeroDivisionError("boom from __bytes__")

    def __str__(self) -> str:
        raise ZeroDivisionError("boom from __str__")

    def __index__(self) -> int:
        raise ZeroDivisionError("boom from __index__")

    def __float__(self) -> float:
        raise ZeroDivisionError("boom from __float__")


def test_objects_that_raise_from_their_conversions(client: Any) -> None:
    for call in (lambda: client.set(Exploding(), "v"), lambda: client.set("k", Exploding()),
                 lambda: client.get(Exploding()), lambda: client.set("k", "v", timeout=Exploding()),
                 lambda: client.set("k", "v", expiry=Exploding()), lambda: client.lock(Exploding(), 1.0),
                 lambda: statestore.Client.connect("127.0.0.1", Exploding())):
        # The caller's own exception may come through, or a TypeError: never a crash.
        try:
            result = call()
        except (ZeroDivisionError, *CLEAR) as error:
            assert not isinstance(error, statestore.InternalError), error
        else:
            if hasattr(result, "close"):
                result.close()


def test_non_contiguous_and_mutated_buffers(client: Any) -> None:
    strided = memoryview(b"abcdefgh")[::2]
    result = clear(lambda: client.set("strided", strided))
    if result is not None:
        assert bytes(client.get("strided").value) == b"aceg"
    buffer = bytearray(b"x" * 100_000)
    stop = threading.Event()

    def mutate() -> None:
        while not stop.is_set():
            buffer[0] = (buffer[0] + 1) % 256

    mutator = threading.Thread(target=mutate)
    mutator.start()
    try:
        for _ in range(50):
            clear(lambda: client.set("mutated", buffer))
    finally:
        stop.set()
        mutator.join()
