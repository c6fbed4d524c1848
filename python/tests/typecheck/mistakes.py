"""Deliberate mistakes: ``mypy --strict`` must report an error on each line marked
``# mistake: <what>`` and none anywhere else (``tests/test_types.py``), so that a mistake the types
silently accept fails the test. Never run, only type-checked."""

from __future__ import annotations

import statestore


def blocking(host: str, port: int) -> None:
    statestore.Client.connect(host, port, clinet_id="me")  # mistake: misspelt option
    statestore.Client.connect(host, port, default_timeout="5s")  # mistake: a duration as text
    statestore.Client.from_env(hots="broker")  # mistake: misspelt option
    statestore.Client.from_url("mqtt://broker", clinet_id="me")  # mistake: misspelt option
    statestore.Client.from_url(b"mqtt://broker")  # mistake: a URL as bytes
    client = statestore.Client.connect(host, port)
    text = statestore.Client.connect(host, port, decode_responses=True)
    client.set("k", "v", condition="nxx")  # mistake: no such condition
    client.set("k", "v", condition="if_absent")  # mistake: no such condition
    value = client.get("k")
    assert value is not None
    as_text: str = value.value  # mistake: bytes from a bytes client
    got = text.get("k")
    assert got is not None
    as_bytes: bytes = got.value  # mistake: str from a decoding client
    first: str = next(client.keys())  # mistake: keys are bytes
    if client.delete("k").outcome == "notfound":  # mistake: no such outcome
        pass
    client.set_many([("k", "v")], condition="nxx")  # mistake: no such condition
    for item in client.get_many(["k"]):
        item.value  # mistake: an item may be None or an error
    client.set_many([("k", "v", "w")])  # mistake: not a pair
    for event in client.observe("k"):
        if event.kind == "deleted":  # mistake: the kind is "delete"
            pass
    lease = client.lease("lease/a", "me")
    if lease.state == "released":  # mistake: no such state
        pass
    name: str = client.lock("locks/a").holder() or ""  # mistake: a bytes client's names are bytes
    bytes_client: statestore.Client[bytes] = text  # mistake: a str client is not a bytes client
    print(as_text, as_bytes, first, name, bytes_client)


async def asynchronous(host: str, port: int) -> None:
    await statestore.AsyncClient.connect(host, port, keepalive=5)  # mistake: misspelt option
    async with statestore.AsyncClient.connect(host, port) as scoped:
        scoped.get("k").value  # mistake: the call is a coroutine, not yet its result
    client = await statestore.AsyncClient.connect(host, port, decode_responses=True)
    async for key in client.keys():
        key.decode()  # mistake: keys are already str
