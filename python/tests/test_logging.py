"""The library's log records in ``logging``: a real reconnect gives a WARNING on
``statestore.client.event_loop``; nothing arrives while forwarding is off; no password in any
record; TRACE shows each request and response but never a value; exit with forwarding on and
calls in flight."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
from typing import Callable, Iterator, List

import pytest

import statestore
from statestore.testing import LocalStateStore

LOST = "connection to the broker lost"
QUICK = {"reconnect_initial_delay": 0.05, "reconnect_max_delay": 0.2}


class Capture(logging.Handler):
    """Every record that reaches the ``statestore`` logger, with a wait for a given one."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: List[logging.LogRecord] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.changed:
            self.records.append(record)
            self.changed.notify_all()

    def wait_for(self, match: Callable[[logging.LogRecord], bool], timeout: float = 20.0) -> logging.LogRecord:
        with self.changed:
            found: List[logging.LogRecord] = []

            def seen() -> bool:
                found[:] = [r for r in self.records if match(r)]
                return bool(found)

            assert self.changed.wait_for(seen, timeout), [r.getMessage() for r in self.records]
            return found[0]

    def lost(self) -> List[logging.LogRecord]:
        with self.changed:
            return [r for r in self.records if LOST in r.getMessage()]


@pytest.fixture
def capture() -> Iterator[Capture]:
    handler = Capture()
    package = logging.getLogger("statestore")
    package.addHandler(handler)
    try:
        yield handler
    finally:
        statestore.disable_logging()
        package.removeHandler(handler)
        package.setLevel(logging.NOTSET)


def bounce(server: LocalStateStore, **kw: str) -> LocalStateStore:
    """Stops ``server`` and starts a new one on the same port (clients reconnect to it)."""
    server.stop()
    return LocalStateStore(server.host, server.port, **kw)


def resynced(client: statestore.Client, server: LocalStateStore, key: str, **kw: str) -> LocalStateStore:
    """Bounces ``server`` under an observation of ``key`` and waits for the ``resynced`` event:
    by then the client has logged the lost connection (the event comes after it)."""
    with client.observe(key) as obs:
        server = bounce(server, **kw)
        event = obs.next(timeout=30)
        assert event is not None and event.kind == "resynced", event
    return server


def test_package_logger_is_silent_by_default() -> None:
    handlers = logging.getLogger("statestore").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
    assert logging.getLevelName(statestore.TRACE) == "TRACE"


def test_a_reconnect_is_a_warning_with_its_fields(capture: Capture, key: str) -> None:
    statestore.enable_logging(logging.INFO)
    server = LocalStateStore()
    try:
        with server.client(**QUICK) as client:  # type: ignore[arg-type]
            server = resynced(client, server, key)
            record = capture.wait_for(lambda r: LOST in r.getMessage())
    finally:
        server.stop()
    assert record.levelno == logging.WARNING and record.levelname == "WARNING"
    assert record.name == "statestore.client.event_loop"
    assert record.target == "statestore::client::event_loop"  # type: ignore[attr-defined]
    assert "error=" in record.getMessage()  # the record's fields follow the message
    fields = record.fields  # type: ignore[attr-defined]
    assert "error" in fields and record.error == fields["error"]  # type: ignore[attr-defined]
    assert record.threadName != "statestore-logging"  # the library thread that logged it
    # INFO: the debug records of the failed reconnection attempts were not forwarded.
    assert all(r.levelno >= logging.INFO for r in capture.records)


def test_nothing_arrives_while_disabled(capture: Capture, key: str) -> None:
    logging.getLogger("statestore").setLevel(logging.DEBUG)
    statestore.enable_logging()
    statestore.disable_logging()
    server = LocalStateStore()
    try:
        with server.client(**QUICK) as client:  # type: ignore[arg-type]
            server = resynced(client, server, key)  # logged nothing: forwarding is off
            statestore.enable_logging()  # the logger's level, DEBUG, as it is now
            with client.observe(key) as obs:
                server.stop()  # the client's reconnection attempts fail, at DEBUG, until...
                capture.wait_for(lambda r: r.levelno == logging.DEBUG and "attempt failed" in r.getMessage())
                server = LocalStateStore(server.host, server.port)  # ... it is back
                event = obs.next(timeout=30)
                assert event is not None and event.kind == "resynced", event
            capture.wait_for(lambda r: LOST in r.getMessage())
    finally:
        server.stop()
    # Only the second bounce: records are forwarded in order, and the first one's never existed.
    assert len(capture.lost()) == 1


def test_the_logger_level_filters_and_refreshes(capture: Capture, key: str) -> None:
    statestore.enable_logging(logging.ERROR)
    server = LocalStateStore()
    try:
        with server.client(**QUICK) as client:  # type: ignore[arg-type]
            server = resynced(client, server, key)  # a WARNING: below ERROR, not forwarded
            logging.getLogger("statestore").setLevel(logging.WARNING)
            statestore.enable_logging()  # picks up the new level
            server = resynced(client, server, key)
            capture.wait_for(lambda r: LOST in r.getMessage())
    finally:
        server.stop()
    assert len(capture.lost()) == 1


def test_no_password_in_any_record(capture: Capture, key: str) -> None:
    secret = "s3cret-PaSsWoRd-42"
    statestore.enable_logging(statestore.TRACE)
    server = LocalStateStore(username="alice", password=secret)
    try:
        with server.client(username="alice", password=secret, **QUICK) as client:  # type: ignore[arg-type]
            server = resynced(client, server, key, username="alice", password=secret)
            capture.wait_for(lambda r: LOST in r.getMessage())
        with pytest.raises(statestore.StateStoreError):
            statestore.Client.connect(server.host, server.port, username="alice", password=secret + "x")
    finally:
        server.stop()
    assert capture.records
    for record in capture.records:
        assert secret not in repr(vars(record)), record.getMessage()


def test_trace_shows_each_request_and_never_a_value(capture: Capture, key: str) -> None:
    statestore.enable_logging(statestore.TRACE)
    value = "a-value-that-no-record-shows"
    server = LocalStateStore()
    try:
        with server.client() as client:
            with client.observe(key) as changes:
                client.set(key, value)
                event = changes.next(timeout=20)
                assert event is not None and event.kind == "set", event
            client.get(key)
    finally:
        server.stop()
    connected = capture.wait_for(lambda r: "connected to the broker" in r.getMessage())
    assert connected.levelno == logging.INFO, connected.getMessage()
    assert connected.broker == f"{server.host}:{server.port}"  # type: ignore[attr-defined]
    sent = capture.wait_for(lambda r: "request sent" in r.getMessage() and r.fields.get("verb") == "SET")
    assert sent.levelno == statestore.TRACE and sent.key == key, sent.getMessage()  # type: ignore[attr-defined]
    got = capture.wait_for(lambda r: "response received" in r.getMessage() and r.fields.get("verb") == "GET")
    assert got.response == f"a value of {len(value)} bytes", got.getMessage()  # type: ignore[attr-defined]
    notified = capture.wait_for(lambda r: "notification: set" in r.getMessage())
    assert notified.key == key and notified.bytes == str(len(value)), notified.getMessage()  # type: ignore[attr-defined]
    closed = capture.wait_for(lambda r: "client closed" in r.getMessage())
    assert closed.levelno == logging.DEBUG, closed.getMessage()
    for record in capture.records:
        assert value not in repr(vars(record)), record.getMessage()


def test_a_failed_request_is_a_debug_record_naming_its_key(capture: Capture, key: str) -> None:
    statestore.enable_logging(logging.DEBUG)
    server = LocalStateStore()
    try:
        with server.client(**QUICK) as client:  # type: ignore[arg-type]
            server.stop()  # the GET waits for a reconnection that does not come
            with pytest.raises(statestore.TimeoutError):
                client.get(key, timeout=0.5)
    finally:
        server.stop()
    failed = capture.wait_for(lambda r: "request failed" in r.getMessage())
    assert failed.levelno == logging.DEBUG and failed.verb == "GET" and failed.key == key  # type: ignore[attr-defined]


def test_a_forked_child_forwards_its_own_records(capture: Capture, key: str) -> None:
    statestore.enable_logging(logging.WARNING)
    pid = os.fork()
    if pid == 0:  # child: exit code tells the parent what happened
        status = 1
        try:
            server = LocalStateStore()
            with server.client(**QUICK) as client:  # type: ignore[arg-type]
                server = resynced(client, server, key)
                record = capture.wait_for(lambda r: LOST in r.getMessage())
                status = 0 if record.name == "statestore.client.event_loop" else 2
            server.stop()
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_bad_level_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="level"):
        statestore.enable_logging("DEBUG")  # type: ignore[arg-type]


def test_exit_with_logging_on_and_calls_in_flight() -> None:
    code = """
        import asyncio, logging, sys, threading, statestore
        from statestore.testing import LocalStateStore
        logging.basicConfig(stream=sys.stderr, level=logging.DEBUG)
        forwarded = threading.Event()
        class Seen(logging.Handler):
            def emit(self, record):
                if record.name.startswith("statestore."):
                    forwarded.set()
        logging.getLogger().addHandler(Seen())
        statestore.enable_logging(statestore.TRACE)
        server = LocalStateStore()
        c = statestore.Client.connect(server.host, server.port, reconnect_initial_delay=0.01, reconnect_max_delay=0.02)
        obs = c.observe("k")
        started = threading.Event()
        def writer():
            while True:
                started.set()
                try:
                    c.set("k", "v", timeout=30)
                except statestore.StateStoreError:
                    pass
        threading.Thread(target=writer, daemon=True).start()
        started.wait(10)
        async def main():
            a = await statestore.AsyncClient.connect(server.host, server.port)
            globals()["tasks"] = [asyncio.ensure_future(a.get("k", timeout=30)) for _ in range(50)]
            await asyncio.sleep(0)
        loop = asyncio.new_event_loop()
        loop.run_until_complete(main())
        server.stop()  # reconnection attempts log (DEBUG) while the process exits
        # the records are forwarded (by a thread of their own) when the exit begins
        if not forwarded.wait(30):
            sys.exit("no record of statestore reached logging")
        print("bye")
        """
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=45
    )
    assert r.returncode == 0 and r.stdout.strip() == "bye", r.stderr[-3000:]
    assert "statestore." in r.stderr, r.stderr[-3000:]  # records were being forwarded
