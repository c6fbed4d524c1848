"""Fixtures: the local state store in-process (statestore.testing), clients of both flavours,
and Mosquitto with the statestore-server binary attached (tests marked ``mosquitto``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import AsyncIterator, Iterator, Optional

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, deadline: float = 10.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)  # polling a port that has no readiness event
    raise RuntimeError(f"nothing listens on port {port}")


class Mosquitto:
    """A real Mosquitto on a free loopback port; restartable on the same port."""

    def __init__(self, tmp: Path) -> None:
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        if not os.path.exists(exe):
            pytest.fail("mosquitto is not installed (scripts/test-python.sh installs it)")
        self.exe = exe
        self.port = free_port()
        self.conf = tmp / "mosquitto.conf"
        self.conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n")
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen([self.exe, "-c", str(self.conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


def server_binary() -> str:
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for profile in ("release", "debug"):
        exe = target / profile / "statestore-server"
        if exe.exists():
            return str(exe)
    pytest.fail("statestore-server is not built (scripts/test-python.sh builds it)")


class ServerProcess:
    """The statestore-server binary attached to a broker (--broker)."""

    def __init__(self, broker_port: int) -> None:
        self.proc = subprocess.Popen(
            [server_binary(), "--broker", f"mqtt://127.0.0.1:{broker_port}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if "ready" not in line:
            self.stop()
            pytest.fail(f"statestore-server did not start: {line!r}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[Mosquitto]:
    broker = Mosquitto(tmp_path)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def on_mosquitto(mosquitto: Mosquitto) -> Iterator[Mosquitto]:
    """Mosquitto with the statestore-server binary attached to it."""
    server = ServerProcess(mosquitto.port)
    try:
        yield mosquitto
    finally:
        server.stop()
