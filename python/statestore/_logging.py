"""The library's log records (reconnects, failed renewals, dropped notifications) in the standard
``logging`` module, under the logger ``statestore``.

Nothing is forwarded until :func:`enable_logging` is called: until then, and after
:func:`disable_logging`, the library does not even build its records. Once enabled, the thread
that logs (one of the library's) only queues the record, without the GIL; the thread
``statestore-logging`` hands queued records to ``logging``. A record keeps the time it was made
and the name of the thread that made it."""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Dict, List, Optional, Tuple

from . import _native

#: Core's levels (1 = error ... 5 = trace) as ``logging`` levels.
TRACE = 5
_LEVELS = {1: logging.ERROR, 2: logging.WARNING, 3: logging.INFO, 4: logging.DEBUG, 5: TRACE}

logger = logging.getLogger("statestore")
# Library etiquette: no output unless the application configures logging.
logger.addHandler(logging.NullHandler())
if logging.getLevelName(TRACE) == f"Level {TRACE}":
    logging.addLevelName(TRACE, "TRACE")

_lock = threading.Lock()
_queue: Optional[_native.LogQueue] = None
_thread: Optional[threading.Thread] = None
_level = 0  # core level forwarded now; 0: off
_loggers: Dict[str, logging.Logger] = {}
#: Attributes a field must not overwrite: LogRecord's own, and those ``makeRecord`` refuses.
_RESERVED = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "target", "fields"}


def _core_level(level: int) -> int:
    """The most verbose core level that ``level`` lets through (0: none)."""
    for core in (5, 4, 3, 2, 1):
        if _LEVELS[core] >= level:
            return core
    return 0


def _logger_for(target: str) -> logging.Logger:
    """``statestore::client::event_loop`` -> ``statestore.client.event_loop``; another crate's
    target goes under ``statestore`` too (``statestore.statestore_server.broker``)."""
    found = _loggers.get(target)
    if found is None:
        name = target.replace("::", ".")
        if name != "statestore" and not name.startswith("statestore."):
            name = "statestore." + name
        found = _loggers[target] = logging.getLogger(name)
    return found


def _emit(batch: Tuple[List[Tuple[int, str, str, float, Optional[str], List[Tuple[str, str]]]], int]) -> None:
    records, dropped = batch
    for core, target, message, created, thread, fields in records:
        level = _LEVELS.get(core, logging.ERROR)
        log = _logger_for(target)
        if not log.isEnabledFor(level):
            continue
        # Each field also as an attribute (for formatters and filters), unless it would shadow
        # one of LogRecord's own; all of them in ``record.fields``.
        extra: Dict[str, object] = {k: v for k, v in fields if k not in _RESERVED}
        extra["target"] = target
        extra["fields"] = dict(fields)
        record = log.makeRecord(log.name, level, target, 0, message, (), None, extra=extra)
        record.created = created
        record.msecs = (created - int(created)) * 1000
        start = getattr(logging, "_startTime", None)
        if isinstance(start, float):
            record.relativeCreated = (created - start) * 1000
        if thread is not None:
            record.threadName = thread
        log.handle(record)
    if dropped:
        logger.warning("%d log records of the library were dropped: the logging thread fell behind", dropped)


def _drain(queue: _native.LogQueue) -> None:
    while True:
        batch = queue.next_batch()
        if batch is None:
            return
        try:
            _emit(batch)
        except Exception:  # noqa: BLE001 - a failing handler must not end the forwarding
            pass


def _stop() -> None:
    """Stops forwarding and lets the thread log what is queued; under ``_lock``."""
    global _queue, _thread, _level
    _native.stop_logs()
    queue, thread = _queue, _thread
    _queue, _thread, _level = None, None, 0
    if queue is not None:
        queue.close()
    if thread is not None and thread is not threading.current_thread():
        # Bounded: a handler stuck in I/O must not hang the caller (or the exit); once closed the
        # thread never waits in the library again.
        thread.join(5.0)


def _start(core: int) -> None:
    """Forwards records at ``core`` and more severe; under ``_lock``."""
    global _queue, _thread, _level
    if _queue is not None:
        _queue.forward(core)
    else:
        queue = _native.LogQueue()
        queue.forward(core)  # first: if core refuses, no thread is left waiting for nothing
        _queue = queue
        _thread = threading.Thread(target=_drain, args=(queue,), name="statestore-logging", daemon=True)
        _thread.start()
    _level = core


def enable_logging(level: Optional[int] = None) -> None:
    """Forwards the library's log records to the ``logging`` logger ``statestore`` (and its
    children, one per library module, e.g. ``statestore.client.event_loop``). Levels: ERROR,
    WARNING, INFO, DEBUG and ``statestore.TRACE`` (5). Records carry the library module in
    ``record.target``; the message ends with the record's fields as ``name=value``.

    ``level``: sets the ``statestore`` logger's level first. The library then builds only the
    records that the logger's effective level lets through, as it is now: call this again after
    changing logging levels. Handlers, filters and propagation work as for any logger."""
    if level is not None:
        if isinstance(level, bool) or not isinstance(level, int):
            raise TypeError(f"argument 'level': expected a logging level (int), got {type(level).__name__}")
        logger.setLevel(level)
    core = _core_level(logger.getEffectiveLevel())
    with _lock:
        if core == 0:
            _stop()
        else:
            _start(core)


def disable_logging() -> None:
    """Stops forwarding: the library no longer builds log records (records already made are
    still handed to ``logging``)."""
    with _lock:
        _stop()


def _after_fork_in_child() -> None:
    # The thread stayed in the parent, and the queue may have been locked there at the fork:
    # start afresh at the same level.
    global _queue, _thread, _lock
    _lock = threading.Lock()
    core = _level
    _queue, _thread = None, None
    if core:
        _start(core)


os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _at_exit() -> None:
    # Before finalization: the thread must leave the library before the interpreter ends.
    with _lock:
        _stop()
