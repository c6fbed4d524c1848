"""Fixtures: the local state store in-process (statestore.testing), clients of both flavours,
and Mosquitto, alone or with the state store attached, started by the test kit's launcher
(``statestore-testkit serve``, shared with the Node and C suites and the Rust tests)."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest

import statestore
from statestore.testing import LocalStateStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def server() -> Iterator[LocalStateStore]:
    """One in-process state store for the session (tests use unique keys)."""
    with LocalStateStore() as s:
        yield s


@pytest.fixture
def key() -> str:
    """A key no other test uses."""
    return f"py-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def client(server: LocalStateStore) -> Iterator[statestore.Client]:
    with server.client() as c:
        yield c


@pytest.fixture
async def aclient(server: LocalStateStore) -> AsyncIterator[statestore.AsyncClient]:
    async with await server.async_client() as c:
        yield c


def testkit_binary() -> str:
    """The test kit's launcher (`cargo build -p statestore-testkit`): the servers every suite
    starts, the Rust tests' own."""
    if os.environ.get("STATESTORE_TESTKIT_BIN"):
        return os.environ["STATESTORE_TESTKIT_BIN"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for profile in ("debug", "release"):
        exe = target / profile / "statestore-testkit"
        if exe.exists():
            return str(exe)
    pytest.fail("statestore-testkit is not built: cargo build -p statestore-testkit (scripts/test-python.sh builds it)")


class Served:
    """`statestore-testkit serve KIND` (tests/testkit): a server on a free loopback port that
    ends when its standard input, held by this process, closes. `port`: where clients connect."""

    def __init__(self, kind: str) -> None:
        self.proc = subprocess.Popen(
            [testkit_binary(), "serve", kind], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.port = int(self._answer("ready on ").rsplit(":", 1)[1])

    def _answer(self, expected: str) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the launcher's own deadlines bound this wait
        if not line.startswith(expected):
            self.stop()
            pytest.fail(f"statestore-testkit serve: expected {expected!r}, got {line!r}")
        return line.strip()

    def restart(self) -> None:
        """Restarts Mosquitto on the same port (its sessions lost, as after a crash)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("restart\n")
        self.proc.stdin.flush()
        self._answer("restarted")

    def leftover(self, client_id: str) -> str | None:
        """Takes over the session kept for the gone client `client_id`: the topic of its that
        still reached the session (a subscription it left), or None."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"leftover {client_id}\n")
        self.proc.stdin.flush()
        topic = self._answer("leftover ")[len("leftover ") :]
        return None if topic == "none" else topic

    def stop(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def mosquitto() -> Iterator[Served]:
    """Mosquitto alone: requests get no answer."""
    served = Served("mosquitto-alone")
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
def on_mosquitto() -> Iterator[Served]:
    """Mosquitto with the state store attached to it."""
    served = Served("mosquitto")
    try:
        yield served
    finally:
        served.stop()
