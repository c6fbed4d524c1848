"""``statestore.Client``: the blocking client (every call releases the GIL while it waits and
can be interrupted with Ctrl-C). The operations themselves are in ``_common``; the classes here
get them as blocking methods from their base ``Blocking``."""

from __future__ import annotations

from typing import Any, Callable, Generic, Iterator, Optional, TypeVar, Union

from . import _native
from ._common import (
    _V,
    Blocking,
    BytesLike,
    ClientBase,
    ClosedOnExit,
    ElectionBase,
    LeaseBase,
    LockBase,
    LockGuardBase,
    LosableBase,
    Native,
    Shared,
    blocking,
    pop_guard,
    push_guard,
    wrapping,
)
from ._errors import ClosedError
from ._native import ConnectionEvent, Event
from ._timing import Seconds


class Observation(Shared["_native.Observation[_V]"], Generic[_V]):
    """The events of an observed key (or election): a blocking iterator. ``for event in obs``
    ends when the observation is closed (``close()``, ``unobserve``, client closed)."""

    key: Native[_V] = Native("The observed key.")
    closed: Native[bool] = Native("Whether the observation has ended.")
    _shown = ("key", "closed")

    def next(self, timeout: Optional[Seconds] = None) -> Optional[Event[_V]]:
        """The next event; ``None`` if none came within ``timeout`` seconds; raises
        ``ClosedError`` once the observation has ended."""
        return self._native.next(timeout)

    def __iter__(self) -> Iterator[Event[_V]]:
        return self

    def __next__(self) -> Event[_V]:
        try:
            event = self._native.next(None)
        except ClosedError:
            raise StopIteration from None
        assert event is not None
        return event

    def close(self) -> None:
        """Stops the observation."""
        self._native.close()

    def __enter__(self) -> "Observation[_V]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Losable(LosableBase):
    lost = blocking(LosableBase._lost)


class Lease(LeaseBase[_V], _Losable, Blocking):
    """A lease on ``key`` under the holder name ``holder`` (see :meth:`Client.lease`)."""



class LockGuard(LockGuardBase[_V], _Losable, Blocking):
    """A held lock: ``fencing_token`` protects the writes made under it."""


    def __enter__(self) -> "LockGuard[_V]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Lock(LockBase[_V], Blocking):
    """A lock. ``with client.lock(name, ttl=10.0) as guard:`` waits for it and releases it."""

    acquire = blocking(LockBase._acquire, LockGuard)

    def try_acquire(self) -> Optional[LockGuard[_V]]:
        """One attempt: the guard, or ``None`` if someone else holds the lock."""
        native = self._try_acquire().wait()
        return None if native is None else LockGuard(native)

    def update(self, key: BytesLike, fn: Callable[[Optional[_V]], Optional[BytesLike]]) -> Optional[_V]:
        """Under the lock: reads ``key``, calls ``fn(old_value)`` (``None`` if absent), writes
        its result with the fencing token (``None`` deletes the key), releases. Returns what
        was written."""
        txn = self._native.begin_update(key).wait()
        try:
            new = txn.call(fn)
        except BaseException:
            txn.abort().wait()
            raise
        return txn.commit(new).wait()

    def __enter__(self) -> LockGuard[_V]:
        guard = self.acquire()
        push_guard(self, guard)
        return guard

    def __exit__(self, *exc: object) -> None:
        pop_guard(self).release()


class Election(ElectionBase[_V], _Losable, Blocking):
    """Leader election among candidates (see :meth:`Client.election`)."""


    def observe(self) -> Observation[_V]:
        """Leadership changes: ``elected`` (``event.holder``) and ``vacant`` events."""
        return Observation(self._native.observe().wait())


class Client(ClientBase["Client[bytes]", "Client[str]", _V], ClosedOnExit, Blocking):
    """A blocking client of the state store (one MQTT connection, safe to share between
    threads). Create it with :meth:`connect` or :meth:`from_env`; close it with :meth:`close`
    or a ``with`` block."""

    @classmethod
    def _complete(cls, start: "Callable[[], _native.Operation[Any]]") -> Any:
        return cls(start().wait())

    lock = wrapping(ClientBase._lock, Lock)
    lease = wrapping(ClientBase._lease, Lease)
    election = wrapping(ClientBase._election, Election)

    def keys(self, pattern: BytesLike = "*") -> Iterator[_V]:
        """The keys matching ``pattern``, fetched page by page.

        Patterns follow the service's dialect (the Rust glob crate's ``Pattern``): ``*``,
        ``?``, ``[abc]``, ``[a-z]``, ``[!0-9]`` negates (``[^...]`` does not), ``[*]`` matches a
        literal ``*``; no backslash escape."""
        pager = self._native.keys(pattern)
        while True:
            page = pager.next_page().wait()
            if page is None:
                return
            yield from page

    def observe(self, key: BytesLike) -> "Observation[_V]":
        """Observes ``key``: an iterator of events (``set``, ``delete``, and ``resynced``
        after a reconnect). Close it (or leave the ``with`` block) to stop."""
        return Observation(self._native.observe(key).wait())

    def connection_events(self, timeout: Optional[Seconds] = None) -> Iterator[ConnectionEvent]:
        """The connection's changes from now on (``for`` in ``Client``, ``async for`` in
        ``AsyncClient``): ``event.state`` (``reconnecting``, ``connected``, ``gave_up``,
        ``closed``), ``.reason``, ``.attempt``, ``.delay``, ``.session_lost``. The iteration
        ends when none comes within ``timeout`` seconds (``None``: waits as long as it takes)
        and after ``closed``; it does not keep the client open."""
        return _changes(self._native.connection_events(), timeout)

    def _on_exit(self) -> None:
        self.close()


def _changes(events: _native.ConnectionEvents, timeout: Optional[Seconds]) -> Iterator[ConnectionEvent]:
    try:
        while True:
            try:
                event = events.next(timeout)
            except ClosedError:
                return
            if event is None:
                return
            yield event
    finally:
        events.close()
