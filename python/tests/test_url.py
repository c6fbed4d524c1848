"""Connecting with a connection URL: both clients, keywords overriding the URL, a malformed URL
refused naming the part without showing the password, wrong argument types."""

from __future__ import annotations

import pytest

import statestore
from statestore import AsyncClient, Client
from statestore.testing import LocalStateStore


def url(server: LocalStateStore, query: str = "") -> str:
    return f"mqtt://{server.host}:{server.port}{query}"


def test_a_url_connects_with_its_query_options(server: LocalStateStore, key: str) -> None:
    with Client.from_url(url(server, "?client_id=py-url-1&keep_alive=30s")) as client:
        assert client.client_id == "py-url-1"
        assert client.set(key, b"v").applied
    with Client.from_url(url(server), decode_responses=True) as text:
        value = text.get(key)
        assert value is not None and value.value == "v"


def test_keywords_override_the_url(server: LocalStateStore) -> None:
    # keep_alive=1s alone is refused (below 5 s); the keyword wins.
    with Client.from_url(url(server, "?keep_alive=1s&client_id=a"), keep_alive=30, client_id="py-url-2") as client:
        assert client.client_id == "py-url-2"
    with pytest.raises(statestore.InvalidArgumentError, match="keep_alive"):
        Client.from_url(url(server, "?keep_alive=1s"))


async def test_the_async_client_connects_with_a_url(server: LocalStateStore) -> None:
    client = await AsyncClient.from_url(url(server, "?client_id=py-url-3"), default_timeout=5)
    async with client:
        assert client.client_id == "py-url-3"
    with pytest.raises(statestore.InvalidArgumentError, match="colour"):
        await AsyncClient.from_url(url(server, "?colour=red"))


def test_a_malformed_url_names_the_part_and_hides_the_password() -> None:
    with pytest.raises(statestore.InvalidArgumentError) as info:
        Client.from_url("mqtt://ann:Do-Not-Print-Me@127.0.0.1:70000")
    message = str(info.value)
    assert "port" in message and "ann:***@" in message, message
    assert "Do-Not-Print-Me" not in message and "Do-Not-Print-Me" not in repr(info.value)
    with pytest.raises(statestore.InvalidArgumentError, match="scheme"):
        Client.from_url("http://127.0.0.1")


def test_a_url_that_is_not_a_string_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Client.from_url(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Client.from_url(b"mqtt://h")  # type: ignore[arg-type]
