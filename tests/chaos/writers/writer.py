"""The Python writers of the chaos run (``statestore.Client`` and ``statestore.AsyncClient``):
the writer protocol of tests/chaos/README.md.

    python writer.py sync|async HOST PORT LOCK COUNTER PREFIX DURATION_MS TIMEOUT_MS LOG
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Optional

import statestore

OWN_KEYS = 8
LOCK_TTL = 3.0
LOCK_WAIT = 8.0
PAUSE = 0.02
QUIET_WAIT = 90.0


def now_ms() -> int:
    return int(time.time() * 1000)


class Log:
    """JSON lines, each flushed at once (a killed writer leaves every completed record)."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "w", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def op(self, op: str, key: str, start: int, timeout_ms: int, error: Optional[BaseException] = None,
           **extra: Any) -> None:
        record: dict[str, Any] = {
            "t": "op", "op": op, "key": key, "start": start, "end": now_ms(), "timeout_ms": timeout_ms,
            "ok": error is None, "code": "OK", "unknown": False,
        }
        if error is not None:
            record.update(code_of(error))
            record["message"] = str(error)
            extra.pop("applied", None)
        record.update(extra)
        self.write(record)


def code_of(error: BaseException) -> dict[str, Any]:
    """The error's code name and outcome-unknown flag; anything that is not a statestore error
    is logged as INTERNAL (the checker counts it as unclear)."""
    if isinstance(error, statestore.StateStoreError):
        return {"code": error.name, "unknown": bool(error.outcome_unknown)}
    return {"code": "INTERNAL", "unknown": False}


def text(value: Any) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    return bytes(value).decode("utf-8", "replace")


def event_record(event: Any) -> dict[str, Any]:
    return {"t": "event", "kind": event.kind, "value": text(event.value), "ts": now_ms()}


def parse_counter(value: Any) -> int:
    return 0 if value is None else int(bytes(value.value).decode())


class Params:
    def __init__(self, argv: list[str]) -> None:
        if len(argv) != 8:
            raise SystemExit("usage: writer.py sync|async HOST PORT LOCK COUNTER PREFIX DURATION_MS TIMEOUT_MS LOG")
        self.host, port, self.lock, self.counter, self.prefix, duration, timeout, self.log = argv
        self.port = int(port)
        self.duration = int(duration) / 1000
        self.timeout_ms = int(timeout)
        self.options = {
            "default_timeout": self.timeout_ms / 1000,
            "reconnect_initial_delay": 0.1,
            "reconnect_max_delay": 1.0,
        }


def wait_for_stdin_close() -> None:
    """The run closes stdin when every writer has seen what it needed to (at most QUIET_WAIT)."""
    done = threading.Event()

    def drain() -> None:
        while os.read(0, 256):
            pass
        done.set()

    threading.Thread(target=drain, daemon=True).start()
    done.wait(QUIET_WAIT)


def retry(log: Log, op: str, key: str, timeout_ms: int, end: float, attempt: Callable[[], Any]) -> Any:
    while True:
        start = now_ms()
        try:
            result = attempt()
            log.op(op, key, start, timeout_ms)
            return result
        except statestore.StateStoreError as error:
            log.op(op, key, start, timeout_ms, error)
            if time.monotonic() >= end:
                raise
            time.sleep(0.2)


def run_sync(p: Params) -> None:
    log = Log(p.log)
    log.write({"t": "start", "flavour": "python-sync", "pid": os.getpid(), "ts": now_ms()})
    end = time.monotonic() + p.duration
    client = retry(log, "connect", "", p.timeout_ms, end,
                   lambda: statestore.Client.connect(p.host, p.port, **p.options))
    observation = retry(log, "observe", p.counter, p.timeout_ms, end, lambda: client.observe(p.counter))
    stop = threading.Event()

    def pull() -> None:
        while not stop.is_set():
            try:
                event = observation.next(timeout=0.2)
            except statestore.ClosedError:
                return
            if event is not None:
                log.write(event_record(event))

    events = threading.Thread(target=pull)
    events.start()
    lock = client.lock(p.lock, LOCK_TTL, timeout=LOCK_WAIT)
    seq = 0
    while time.monotonic() < end:
        seq += 1
        key = f"{p.prefix}k{seq % OWN_KEYS}"
        value = f"{key}#{seq}"
        start = now_ms()
        try:
            result = client.set(key, value, persist=True)
            log.op("set", key, start, p.timeout_ms, value=value, applied=result.applied)
        except statestore.StateStoreError as error:
            log.op("set", key, start, p.timeout_ms, error, value=value)
        start = now_ms()
        try:
            read = client.get(key)
            log.op("get", key, start, p.timeout_ms, value=text(read.value) if read else None)
        except statestore.StateStoreError as error:
            log.op("get", key, start, p.timeout_ms, error)
        if seq % 3 == 0:
            increment_sync(log, client, lock, p)
        time.sleep(PAUSE)
    log.write({"t": "quiet", "ts": now_ms()})
    wait_for_stdin_close()
    stop.set()
    events.join()
    observation.close()
    start = now_ms()
    try:
        client.close()
        log.op("close", "", start, p.timeout_ms)
    except statestore.StateStoreError as error:
        log.op("close", "", start, p.timeout_ms, error)
    log.write({"t": "end", "ts": now_ms()})


def increment_sync(log: Log, client: statestore.Client, lock: statestore.Lock, p: Params) -> None:
    bound = int(LOCK_WAIT * 1000) + p.timeout_ms
    start = now_ms()
    try:
        guard = lock.acquire()
        log.op("lock", p.lock, start, bound)
    except statestore.StateStoreError as error:
        log.op("lock", p.lock, start, bound, error)
        return
    acquired = now_ms()
    token = str(guard.fencing_token)
    end_how = "not_written"
    start = now_ms()
    try:
        read = client.get(p.counter)
        log.op("incr_get", p.counter, start, p.timeout_ms, value=text(read.value) if read else None)
        old = parse_counter(read)
    except statestore.StateStoreError as error:
        log.op("incr_get", p.counter, start, p.timeout_ms, error)
        old = None
    if old is not None:
        if not guard.held:
            log.write(incr_record(token, old, "failed", "NOT_HELD"))
            end_how = "lost"
        else:
            new = str(old + 1)
            start = now_ms()
            try:
                result = client.set(p.counter, new, fencing_token=guard.fencing_token, persist=True)
                log.op("incr_set", p.counter, start, p.timeout_ms, value=new, applied=result.applied)
                log.write(incr_record(token, old, "ok", "OK"))
            except statestore.StateStoreError as error:
                log.op("incr_set", p.counter, start, p.timeout_ms, error, value=new)
                c = code_of(error)
                log.write(incr_record(token, old, "unknown" if c["unknown"] else "failed", c["code"]))
            end_how = "released"
    released = now_ms()
    start = now_ms()
    try:
        guard.release()
        log.op("release", p.lock, start, p.timeout_ms)
    except statestore.StateStoreError as error:
        log.op("release", p.lock, start, p.timeout_ms, error)
    log.write(hold_record(token, text(guard.holder_name), acquired, released, end_how))


def incr_record(token: str, old: int, outcome: str, code: str) -> dict[str, Any]:
    return {"t": "incr", "token": token, "old": old, "new": old + 1, "outcome": outcome, "code": code,
            "ts": now_ms()}


def hold_record(token: str, holder: Optional[str], acq: int, end: int, how: str) -> dict[str, Any]:
    return {"t": "hold", "token": token, "holder": holder, "acq": acq, "end": end, "end_how": how}


async def run_async(p: Params) -> None:
    log = Log(p.log)
    log.write({"t": "start", "flavour": "python-async", "pid": os.getpid(), "ts": now_ms()})
    end = time.monotonic() + p.duration

    async def retrying(op: str, key: str, attempt: Callable[[], Any]) -> Any:
        while True:
            start = now_ms()
            try:
                result = await attempt()
                log.op(op, key, start, p.timeout_ms)
                return result
            except statestore.StateStoreError as error:
                log.op(op, key, start, p.timeout_ms, error)
                if time.monotonic() >= end:
                    raise
                await asyncio.sleep(0.2)

    client = await retrying("connect", "", lambda: statestore.AsyncClient.connect(p.host, p.port, **p.options))

    async def observe() -> Any:
        return await client.observe(p.counter)

    observation = await retrying("observe", p.counter, observe)

    async def pull() -> None:
        try:
            async for event in observation:
                log.write(event_record(event))
        except statestore.ClosedError:
            pass

    events = asyncio.create_task(pull())
    lock = client.lock(p.lock, LOCK_TTL, timeout=LOCK_WAIT)
    seq = 0
    while time.monotonic() < end:
        seq += 1
        key = f"{p.prefix}k{seq % OWN_KEYS}"
        value = f"{key}#{seq}"
        start = now_ms()
        try:
            result = await client.set(key, value, persist=True)
            log.op("set", key, start, p.timeout_ms, value=value, applied=result.applied)
        except statestore.StateStoreError as error:
            log.op("set", key, start, p.timeout_ms, error, value=value)
        start = now_ms()
        try:
            read = await client.get(key)
            log.op("get", key, start, p.timeout_ms, value=text(read.value) if read else None)
        except statestore.StateStoreError as error:
            log.op("get", key, start, p.timeout_ms, error)
        if seq % 3 == 0:
            await increment_async(log, client, lock, p)
        await asyncio.sleep(PAUSE)
    log.write({"t": "quiet", "ts": now_ms()})
    await asyncio.get_running_loop().run_in_executor(None, wait_for_stdin_close)
    observation.close()
    try:
        await asyncio.wait_for(events, p.timeout_ms / 1000)
    except asyncio.TimeoutError:
        events.cancel()
    start = now_ms()
    try:
        await client.close()
        log.op("close", "", start, p.timeout_ms)
    except statestore.StateStoreError as error:
        log.op("close", "", start, p.timeout_ms, error)
    log.write({"t": "end", "ts": now_ms()})


async def increment_async(log: Log, client: statestore.AsyncClient, lock: statestore.AsyncLock, p: Params) -> None:
    bound = int(LOCK_WAIT * 1000) + p.timeout_ms
    start = now_ms()
    try:
        guard = await lock.acquire()
        log.op("lock", p.lock, start, bound)
    except statestore.StateStoreError as error:
        log.op("lock", p.lock, start, bound, error)
        return
    acquired = now_ms()
    token = str(guard.fencing_token)
    end_how = "not_written"
    start = now_ms()
    try:
        read = await client.get(p.counter)
        log.op("incr_get", p.counter, start, p.timeout_ms, value=text(read.value) if read else None)
        old: Optional[int] = parse_counter(read)
    except statestore.StateStoreError as error:
        log.op("incr_get", p.counter, start, p.timeout_ms, error)
        old = None
    if old is not None:
        if not guard.held:
            log.write(incr_record(token, old, "failed", "NOT_HELD"))
            end_how = "lost"
        else:
            new = str(old + 1)
            start = now_ms()
            try:
                result = await client.set(p.counter, new, fencing_token=guard.fencing_token, persist=True)
                log.op("incr_set", p.counter, start, p.timeout_ms, value=new, applied=result.applied)
                log.write(incr_record(token, old, "ok", "OK"))
            except statestore.StateStoreError as error:
                log.op("incr_set", p.counter, start, p.timeout_ms, error, value=new)
                c = code_of(error)
                log.write(incr_record(token, old, "unknown" if c["unknown"] else "failed", c["code"]))
            end_how = "released"
    released = now_ms()
    start = now_ms()
    try:
        await guard.release()
        log.op("release", p.lock, start, p.timeout_ms)
    except statestore.StateStoreError as error:
        log.op("release", p.lock, start, p.timeout_ms, error)
    log.write(hold_record(token, text(guard.holder_name), acquired, released, end_how))


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("sync", "async"):
        raise SystemExit("usage: writer.py sync|async ...")
    params = Params(sys.argv[2:])
    if sys.argv[1] == "sync":
        run_sync(params)
    else:
        asyncio.run(run_async(params))


if __name__ == "__main__":
    main()
