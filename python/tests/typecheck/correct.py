"""Correct uses of the published types: ``mypy --strict`` must accept every line
(``tests/test_types.py``). Never run, only type-checked."""

from __future__ import annotations

import datetime
from typing import List, Literal, Optional, Union

from typing_extensions import assert_type

import statestore
from statestore import Condition, DeleteResult, Event, Version


def blocking(host: str, port: int) -> None:
    client = statestore.Client.connect(
        host, port, client_id="me", keep_alive=30, default_timeout=datetime.timedelta(seconds=5), tls=False
    )
    assert_type(client, statestore.Client[bytes])
    plain: statestore.Client = client  # a bare Client is a bytes client
    value = plain.get("k")
    assert_type(value, Optional[statestore.Value[bytes]])
    if value is not None:
        assert_type(value.value, bytes)
        assert_type(value.version, Optional[Version])
    assert_type(list(client.keys("user:*")), List[bytes])
    client.set("k", "v", condition="nx", expiry=1.5)
    client.set("k", b"v", condition=Condition.NEX, fencing_token=None, persist=True, timeout=2)
    client.set("k", "v", condition="NX")
    result: DeleteResult = client.delete("k")
    for item in client.get_many(["a", b"b"]):
        if isinstance(item, statestore.StateStoreError):
            print(item.code)
        elif item is not None:
            assert_type(item.value, bytes)
    batch = client.set_many({"a": "1", "b": "2"}, condition="nx", expiry=5)
    client.set_many({b"a": b"1"})
    client.set_many([("a", "1"), (b"b", bytearray(b"2"))], fencing_token=None, timeout=2)
    assert_type(batch, List[Union[statestore.SetResult, statestore.StateStoreError]])
    client.delete_many(("a", "b"), fencing_token=None)
    statestore.Client.connect(host, port, max_in_flight=16)
    assert_type(result.outcome, Literal["deleted", "not_found", "value_mismatch"])
    with client.observe("k") as changes:
        for event in changes:
            assert_type(event, Event[bytes])
            if event.kind == "set" and event.value is not None:
                assert_type(event.value, bytes)
    lock = client.lock("locks/a", 10.0)
    with lock as guard:
        assert_type(guard.name, bytes)
        client.set("k", "v", fencing_token=guard.fencing_token)
    assert_type(lock.holder(), Optional[bytes])
    written = lock.update("counter", lambda old: b"1" if old is None else old + b"1")
    assert_type(written, Optional[bytes])
    lease = client.lease("lease/a", "me")
    if lease.state == "lost" and lease.loss is not None:
        assert_type(lease.loss.reason, Literal["expired", "taken_over", "client_closed"])

    text = statestore.Client.connect(host, port, decode_responses=True)
    assert_type(text, statestore.Client[str])
    got = text.get("k")
    if got is not None:
        assert_type(got.value, str)
    assert_type(next(text.keys()), str)
    assert_type(text.election("e", "me").leader(), Optional[str])

    either = statestore.Client.connect(host, port, decode_responses=bool(port))
    either.close()
    env = statestore.Client.from_env(host="broker", port=8883, ca_file="/etc/ca.pem")
    assert_type(env, statestore.Client[bytes])
    by_url = statestore.Client.from_url("mqtts://broker?ca_file=/etc/ca.pem", client_id="me")
    assert_type(by_url, statestore.Client[bytes])
    assert_type(statestore.Client.from_url("mqtt://broker", decode_responses=True), statestore.Client[str])


def records(version: statestore.Version) -> None:
    assert_type(statestore.Value(b"blue", version), statestore.Value[bytes])
    assert_type(statestore.Value("blue", None), statestore.Value[str])
    assert statestore.SetResult(True, version) == statestore.SetResult(True, version)
    assert_type(statestore.DeleteResult("not_found", None).outcome, Literal["deleted", "not_found", "value_mismatch"])


async def asynchronous(host: str, port: int) -> None:
    client = await statestore.AsyncClient.connect(host, port, reconnect_max_delay=10)
    assert_type(client, statestore.AsyncClient[bytes])
    value = await client.get("k")
    if value is not None:
        assert_type(value.value, bytes)
    async for key in client.keys():
        assert_type(key, bytes)
    async with statestore.AsyncClient.from_url(f"mqtt://{host}:{port}", decode_responses=True) as scoped:
        assert_type(scoped, statestore.AsyncClient[str])
    text = await statestore.AsyncClient.connect(host, port, decode_responses=True)
    async for name in text.keys():
        assert_type(name, str)
    async with text.observe("k") as changes:
        async for event in changes:
            assert_type(event.key, str)
    guard = await text.lock("locks/a").try_acquire()
    if guard is not None:
        assert_type(guard.holder_name, str)


def connection_state(client: statestore.Client) -> None:
    assert_type(client.connection_state, Literal["connecting", "connected", "reconnecting", "gave_up", "closed"])
    for event in client.connection_events(timeout=datetime.timedelta(seconds=1)):
        assert_type(event, statestore.ConnectionEvent)
        assert_type(event.reason, Optional[str])
        assert_type(event.attempt, int)
        assert_type(event.delay, Optional[float])
    statestore.Client.connect("h", 1883, reconnect_max_attempts=3, reconnect_max_elapsed=60.0)


async def async_connection_state(client: statestore.AsyncClient) -> None:
    async for event in client.connection_events(timeout=5):
        assert_type(event.state, Literal["connecting", "connected", "reconnecting", "gave_up", "closed"])
