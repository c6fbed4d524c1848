"""The Python clients (sync and async) against the malicious state store of
``statestore-chaos hostile``: every call of the shared catalogue (tests/chaos/hostile.json)
ends within its bound with the expected error or value, the client stays usable, and an
observation flooded with broken and valid notifications delivers exactly the valid ones."""

from __future__ import annotations

import asyncio
import json
import pathlib
import time
from typing import Any, Optional

import statestore

CATALOGUE = json.loads((pathlib.Path(__file__).parent.parent / "hostile.json").read_text())
TIMEOUT = CATALOGUE["timeout_ms"] / 1000


def code_of(error: Optional[BaseException]) -> str:
    if error is None:
        return "OK"
    assert isinstance(error, statestore.StateStoreError), repr(error)
    return error.name


def judge(call: dict[str, Any], error: Optional[BaseException], value: Any, took: float) -> None:
    what = f"{call['op']} {call['key']}"
    assert took < TIMEOUT + 5, f"{what} took {took:.1f} s"
    assert code_of(error) in call["expect"], f"{what}: {error!r}, expected {call['expect']}"
    if error is None and value is not None:
        if "value_len" in call:
            assert len(value) == call["value_len"], what
        if "value_hex" in call:
            assert bytes(value).hex() == call["value_hex"], what


def run_sync(client: statestore.Client, call: dict[str, Any]) -> None:
    start = time.monotonic()
    error: Optional[BaseException] = None
    value = None
    try:
        if call["op"] == "get":
            read = client.get(call["key"])
            value = read.value if read is not None else None
        elif call["op"] == "set":
            client.set(call["key"], "v")
        else:
            client.delete(call["key"])
    except statestore.StateStoreError as caught:
        error = caught
    judge(call, error, value, time.monotonic() - start)


def test_sync_client_survives_the_malicious_service(hostile_port: int) -> None:
    with statestore.Client.connect("127.0.0.1", hostile_port, default_timeout=TIMEOUT) as client:
        for call in CATALOGUE["calls"] + [CATALOGUE["after"]]:
            run_sync(client, call)
        notify = CATALOGUE["notify"]
        sets = []
        deadline = time.monotonic() + 60
        with client.observe(notify["key"]) as observation:
            while time.monotonic() < deadline:
                event = observation.next(timeout=1.0)
                if event is None:
                    continue
                assert event.kind == "set", event
                sets.append(bytes(event.value))
                if sets[-1] == notify["final"].encode():
                    break
        assert sets and sets[-1] == notify["final"].encode(), "no final notification"
        assert len(sets) == notify["storm"] + 2
        assert len(sets[0]) == notify["huge_len"]
        assert sets[1:-1] == [str(n).encode() for n in range(notify["storm"])]


def test_async_client_survives_the_malicious_service(hostile_port: int) -> None:
    async def main() -> None:
        client = await statestore.AsyncClient.connect("127.0.0.1", hostile_port, default_timeout=TIMEOUT)
        for call in CATALOGUE["calls"] + [CATALOGUE["after"]]:
            start = time.monotonic()
            error: Optional[BaseException] = None
            value = None
            try:
                if call["op"] == "get":
                    read = await asyncio.wait_for(client.get(call["key"]), 60)
                    value = read.value if read is not None else None
                elif call["op"] == "set":
                    await asyncio.wait_for(client.set(call["key"], "v"), 60)
                else:
                    await asyncio.wait_for(client.delete(call["key"]), 60)
            except statestore.StateStoreError as caught:
                error = caught
            judge(call, error, value, time.monotonic() - start)
        notify = CATALOGUE["notify"]
        count = 0
        observation = await client.observe(notify["key"])

        async def until_final() -> None:
            nonlocal count
            async for event in observation:
                assert event.kind == "set", event
                count += 1
                if bytes(event.value) == notify["final"].encode():
                    return

        await asyncio.wait_for(until_final(), 60)
        assert count == notify["storm"] + 2
        observation.close()
        await client.close()

    asyncio.run(main())
