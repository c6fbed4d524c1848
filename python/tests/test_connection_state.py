"""Connection state and events, blocking and asyncio: the server stopped and started again on
the same port, and giving up after ``reconnect_max_attempts``."""

from __future__ import annotations

import asyncio
import threading
from typing import AsyncIterator, Iterator

import pytest

import statestore
from statestore.testing import LocalStateStore

KEEP_ALIVE = 5.0  # the shortest keep-alive allowed
QUICK: statestore.ConnectOptions = {"keep_alive": KEEP_ALIVE, "reconnect_initial_delay": 0.05, "reconnect_max_delay": 0.2}


def giving_up_after(attempts: int) -> statestore.ConnectOptions:
    options = QUICK.copy()
    options["reconnect_max_attempts"] = attempts
    return options


def state_of(client: statestore.Client | statestore.AsyncClient) -> str:
    """The state now (read through a function: it changes under the test's feet)."""
    return client.connection_state


def until(events: Iterator[statestore.ConnectionEvent], state: str) -> statestore.ConnectionEvent:
    """The next event in ``state``, skipping others (the iterator's timeout bounds each wait)."""
    for event in events:
        if event.state == state:
            return event
    pytest.fail(f"no {state} event in time")


async def auntil(events: AsyncIterator[statestore.ConnectionEvent], state: str) -> statestore.ConnectionEvent:
    async for event in events:
        if event.state == state:
            return event
    pytest.fail(f"no {state} event in time")


@pytest.mark.timeout(60)
def test_a_stopped_server_is_reconnecting_then_connected_when_back() -> None:
    server = LocalStateStore()
    addr = f"{server.host}:{server.port}"
    try:
        with server.client(**QUICK) as client:
            assert client.connection_state == "connected"
            events = client.connection_events(timeout=2 * KEEP_ALIVE)
            server.stop()
            dropped = until(events, "reconnecting")
            assert dropped.reason is not None and addr in dropped.reason, dropped
            assert dropped.attempt == 1 and dropped.delay is not None and dropped.delay >= 0, dropped
            assert state_of(client) == "reconnecting"
            server = LocalStateStore(server.host, server.port)
            back = until(events, "connected")
            assert back.reason is None and back.session_lost, back
            assert client.get("k") is None
        assert state_of(client) == "closed"
        assert [e.state for e in events] == ["closed"], "then the iteration ends"
    finally:
        server.stop()


@pytest.mark.timeout(60)
def test_after_max_attempts_it_gives_up_and_a_waiting_call_fails_at_once() -> None:
    server = LocalStateStore()
    addr = f"{server.host}:{server.port}"
    with server.client(**giving_up_after(2)) as client:
        events = client.connection_events(timeout=30)
        with client.observe("watched") as observation:
            server.stop()
            until(events, "reconnecting")
            outcome: list[BaseException] = []

            def waiting_get() -> None:
                try:
                    client.get("k", timeout=3600)
                except BaseException as error:  # noqa: BLE001 - the test inspects it
                    outcome.append(error)

            caller = threading.Thread(target=waiting_get)
            caller.start()
            gave_up = until(events, "gave_up")
            assert gave_up.attempt == 2 and gave_up.reason is not None and addr in gave_up.reason, gave_up
            caller.join(30)  # far below the call's hour: it ends when reconnecting gives up
            assert not caller.is_alive()
            error = outcome[0]
            assert isinstance(error, statestore.ConnectionError), repr(error)
            assert gave_up.reason in str(error) and "gave up" in str(error)
            with pytest.raises(statestore.ConnectionError, match="gave up"):
                client.get("k")
            assert state_of(client) == "gave_up"
            assert list(observation) == [], "the observation ended"


@pytest.mark.timeout(60)
async def test_async_client_events_until_gave_up_and_closed() -> None:
    server = LocalStateStore()
    addr = f"{server.host}:{server.port}"
    client = await server.async_client(**giving_up_after(1))
    events = client.connection_events(timeout=30)
    server.stop()
    dropped = await auntil(events, "reconnecting")
    assert dropped.reason is not None and addr in dropped.reason
    pending = asyncio.ensure_future(client.get("k", timeout=3600))
    gave_up = await auntil(events, "gave_up")
    assert gave_up.attempt == 1, gave_up
    with pytest.raises(statestore.ConnectionError, match="gave up"):
        await asyncio.wait_for(pending, 30)
    await client.close()
    assert [e.state async for e in events] == ["closed"]
    assert client.connection_state == "closed"
