"""The state store attached to a real Mosquitto (the test kit's): the operations of both clients,
and a broker restart (the observation reports `resynced`)."""

from __future__ import annotations

import pytest

import statestore
from statestore import AsyncClient, Client, Condition

from conftest import Served


def test_operations(on_mosquitto: Served, key: str) -> None:
    with Client.connect("127.0.0.1", on_mosquitto.port) as c:
        assert c.set(key, "v", expiry=30).applied
        assert not c.set(key, "w", condition=Condition.NX).applied
        assert c.get(key).value == b"v"  # type: ignore[union-attr]
        assert c.vdel(key, "w").outcome == "value_mismatch"
        with c.observe(key) as obs:
            c.set(key, "x")
            assert obs.next(timeout=10).value == b"x"  # type: ignore[union-attr]
        with c.lock(key + "/lock", ttl=10.0) as guard:
            c.set(key, "fenced", fencing_token=guard.fencing_token)
        assert list(c.keys(key + "*")) == [key.encode()]  # the released lock key is gone
        assert c.delete(key, fencing_token=guard.fencing_token).deleted


async def test_async_operations(on_mosquitto: Served, key: str) -> None:
    async with await AsyncClient.connect("127.0.0.1", on_mosquitto.port) as c:
        assert (await c.set(key, "v")).applied
        assert (await c.get(key)).value == b"v"  # type: ignore[union-attr]
        obs = await c.observe(key)
        await c.delete(key)
        event = await obs.next(timeout=10)
        assert event is not None and event.kind == "delete"
        async with c.lock(key + "/lock", ttl=10.0) as guard:
            await c.set(key, "fenced", fencing_token=guard.fencing_token)
        e = c.election(key + "/leader", "me", 10.0)
        await e.campaign(timeout=10)
        await e.resign()


def test_broker_restart_resyncs(on_mosquitto: Served, key: str) -> None:
    with Client.connect("127.0.0.1", on_mosquitto.port, reconnect_max_delay=0.5, default_timeout=20) as c:
        c.set(key, "before")
        with c.observe(key) as obs:
            on_mosquitto.restart()
            event = obs.next(timeout=30)
            assert event is not None and event.kind == "resynced", event
            assert event.value == b"before" or event.value is None  # a non-persistent broker may lose it
        # The client works again.
        assert c.set(key, "after", timeout=20).applied


def test_connection_lost_is_reported(mosquitto: Served) -> None:
    # No state store on this broker: a request gets no answer and times out.
    with Client.connect("127.0.0.1", mosquitto.port) as c:
        with pytest.raises(statestore.TimeoutError) as info:
            c.get("k", timeout=0.5)
        assert info.value.outcome_unknown
