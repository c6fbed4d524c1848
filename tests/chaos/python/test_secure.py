"""Connection security through the Python binding: the shared cases of
tests/chaos/secure.json on the fixtures of ``statestore-chaos secure``, with the sync and
the async client. Failures are ``ConnectionError`` (code CONNECTION), never a fallback to
plaintext; no message, ``repr`` or ``str`` of an error or a client shows a password."""

from __future__ import annotations

import asyncio
import json
import pathlib
from typing import Any

import pytest

import statestore

CASES = json.loads((pathlib.Path(__file__).parent.parent / "secure.json").read_text())
TIMEOUT = CASES["timeout_ms"] / 1000


def options(secure: dict, case: dict) -> dict[str, Any]:
    resolved = {name: secure[value[1:]] if value.startswith("$") else value for name, value in case["options"].items()}
    if "tls" in resolved:
        resolved["tls"] = resolved["tls"] == "true"
    return {"default_timeout": TIMEOUT, **resolved}


def secrets(secure: dict, case: dict) -> list[str]:
    found = [secure["password"], secure["sat_token"]]
    password = case["options"].get("password", "")
    if password and not password.startswith("$"):
        found.append(password)
    return found


def shows_no_secret(text: str, secure: dict, case: dict) -> None:
    for secret in secrets(secure, case):
        assert secret not in text, f"{case['name']}: a password is shown: {text}"


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["name"] for c in CASES["cases"]])
def test_sync(secure: dict, case: dict) -> None:
    port = secure["ports"][case["port"]]
    try:
        client = statestore.Client.connect("127.0.0.1", port, **options(secure, case))
    except statestore.StateStoreError as error:
        assert error.name == case["expect"], f"{case['name']}: {error!r}"
        assert isinstance(error, statestore.ConnectionError)
        shows_no_secret(str(error) + repr(error) + str(error.args), secure, case)
        return
    assert case["expect"] == "OK", f"{case['name']}: connected, expected {case['expect']}"
    with client:
        shows_no_secret(repr(client) + str(client), secure, case)
        assert client.set("secure", case["name"]).applied
        assert bytes(client.get("secure").value) == case["name"].encode()


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["name"] for c in CASES["cases"]])
def test_async(secure: dict, case: dict) -> None:
    async def main() -> None:
        port = secure["ports"][case["port"]]
        try:
            client = await asyncio.wait_for(statestore.AsyncClient.connect("127.0.0.1", port, **options(secure, case)), 60)
        except statestore.StateStoreError as error:
            assert error.name == case["expect"], f"{case['name']}: {error!r}"
            shows_no_secret(str(error) + repr(error), secure, case)
            return
        assert case["expect"] == "OK"
        shows_no_secret(repr(client), secure, case)
        assert (await client.set("secure", case["name"])).applied
        await client.close()

    asyncio.run(main())
