"""Observations: set, delete, expiry, unobserve, close, garbage collection."""

from __future__ import annotations

import gc
import threading

import pytest

import statestore
from statestore import AsyncClient, Client
from statestore.testing import LocalStateStore


def test_events_in_order(client: Client, key: str) -> None:
    with client.observe(key) as obs:
        assert obs.key == key.encode()
        client.set(key, "1")
        client.set(key, "2")
        client.delete(key)
        events = [obs.next(timeout=10) for _ in range(3)]
    assert [(e.kind, e.value) for e in events if e] == [("set", b"1"), ("set", b"2"), ("delete", None)]
    assert all(e is not None and e.version is not None and e.key == key.encode() for e in events)
    assert events[0].version < events[1].version  # type: ignore[union-attr,operator]


def test_no_event_times_out(client: Client, key: str) -> None:
    with client.observe(key) as obs:
        assert obs.next(timeout=0.2) is None


def test_unobserve_ends_iteration(client: Client, key: str) -> None:
    obs = client.observe(key)
    client.set(key, "x")
    client.unobserve(key)
    assert [e.kind for e in obs] in (["set"], [])  # the queued event may or may not be kept
    assert obs.closed
    with pytest.raises(statestore.ClosedError):
        obs.next(timeout=1)


def test_client_close_ends_observation_from_another_thread(server: LocalStateStore, key: str) -> None:
    c = server.client()
    obs = c.observe(key)
    done = threading.Event()
    result: list[object] = []

    def consume() -> None:
        result.extend(obs)
        done.set()

    t = threading.Thread(target=consume)
    t.start()
    c.close()
    assert done.wait(10)
    t.join(10)
    assert result == []


async def test_async_observe(aclient: AsyncClient, key: str) -> None:
    obs = await aclient.observe(key)
    await aclient.set(key, "a", expiry=0.2)
    kinds = []
    async for event in obs:
        kinds.append(event.kind)
        if event.kind == "delete":
            break
    assert kinds == ["set", "delete"]
    assert await obs.next(timeout=0.1) is None
    obs.close()
    with pytest.raises(statestore.ClosedError):
        await obs.next()


async def test_async_observe_lazily_with_async_for(aclient: AsyncClient, key: str) -> None:
    import asyncio

    started = asyncio.Event()

    async def writer() -> None:
        await started.wait()
        await aclient.set(key, "v")

    task = asyncio.create_task(writer())
    obs = aclient.observe(key)
    async with obs:
        started.set()
        async for event in obs:
            assert event.kind == "set" and event.value == b"v"
            break
    await task


async def test_async_close_ends_stream(server: LocalStateStore, key: str) -> None:
    c = await server.async_client()
    obs = await c.observe(key)
    await c.close()
    assert [e async for e in obs] == []


def test_garbage_collected_observations(server: LocalStateStore, key: str) -> None:
    c = server.client()
    for i in range(20):
        c.observe(f"{key}{i}")  # dropped at once
    obs = c.observe(key)
    del obs
    gc.collect()
    # The client still works, and a dropped observation of a live client goes away quietly.
    c.set(key, "x")
    with c.observe(key) as again:
        c.set(key, "y")
        assert again.next(timeout=10).value == b"y"  # type: ignore[union-attr]
    live = c.observe(key + "live")
    del c  # a client with a live observation, garbage collected
    gc.collect()
    del live
    gc.collect()


def test_two_observers_share(client: Client, key: str) -> None:
    with client.observe(key) as a, client.observe(key) as b:
        client.set(key, "x")
        assert a.next(timeout=10).value == b"x"  # type: ignore[union-attr]
        assert b.next(timeout=10).value == b"x"  # type: ignore[union-attr]
