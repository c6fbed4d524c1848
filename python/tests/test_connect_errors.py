"""A failed connection says where and what to try, for each way it fails: nothing listening,
a port that accepts TCP and never answers, and a port that answers another protocol."""

from __future__ import annotations

import socket
import threading
from typing import Iterator

import pytest

import statestore
from statestore import AsyncClient, Client


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # the kernel completes the handshake; nobody ever answers
        yield int(s.getsockname()[1])


@pytest.fixture
def http_port() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def answer() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.recv(64)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    server.close()
    thread.join(timeout=10)


def expect(port: int, timeout: float, *hints: str) -> None:
    with pytest.raises(statestore.ConnectionError) as info:
        Client.connect("127.0.0.1", port, default_timeout=timeout)
    message = str(info.value)
    assert f"cannot connect to 127.0.0.1:{port}: " in message
    for hint in hints:
        assert hint in message, message


def test_nothing_listening_names_the_address_and_says_start_a_broker(closed_port: int) -> None:
    expect(closed_port, 5, "connection refused", "statestore serve")


def test_a_silent_port_names_the_address_and_the_time_waited(silent_port: int) -> None:
    expect(silent_port, 1, "no answer from an MQTT broker within 1s")


def test_another_protocol_is_named_as_not_mqtt(http_port: int) -> None:
    expect(http_port, 5, "does not speak MQTT 5")


async def test_the_async_client_says_the_same(closed_port: int) -> None:
    with pytest.raises(statestore.ConnectionError, match=rf"127\.0\.0\.1:{closed_port}: connection refused"):
        await AsyncClient.connect("127.0.0.1", closed_port)
