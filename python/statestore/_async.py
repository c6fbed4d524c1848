"""``statestore.AsyncClient``: the asyncio twin of :class:`statestore.Client` (same methods,
awaitable). The operations themselves are in ``_common``; the classes here get them as
coroutine methods from their base ``Awaiting``."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import types
from typing import Any, AsyncIterator, Awaitable, Callable, Coroutine, Generator, Generic, Optional, Type, TypeVar, Union

from . import _native
from ._aio import wait
from ._common import (
    _V,
    Awaiting,
    BytesLike,
    ClientBase,
    Described,
    ElectionBase,
    LeaseBase,
    LockBase,
    LockGuardBase,
    LosableBase,
    awaitable,
    pop_guard,
    push_guard,
    wrapping,
)
from ._errors import ClosedError
from ._native import ConnectionEvent, Event
from ._timing import Seconds


class AsyncObservation(Described, Generic[_V]):
    """The events of an observed key (or election). ``async for event in client.observe(key)``
    starts the observation on the first iteration; ``obs = await client.observe(key)`` starts it
    at once (so that no change made after the ``await`` is missed)."""

    _shown = ("key", "closed")

    def __init__(self, start: Callable[[], "_native.Operation[_native.Observation[_V]]"]) -> None:
        self._start: Optional[Callable[[], "_native.Operation[_native.Observation[_V]]"]] = start
        self._native: Optional[_native.Observation[_V]] = None

    async def _started(self) -> _native.Observation[_V]:
        if self._native is None:
            if self._start is None:
                raise ClosedError("the observation has ended")
            start, self._start = self._start, None
            self._native = await wait(start())
        return self._native

    def __await__(self) -> Generator[Any, None, "AsyncObservation[_V]"]:
        yield from self._started().__await__()
        return self

    @property
    def key(self) -> Optional[_V]:
        """The observed key (``None`` until started)."""
        return None if self._native is None else self._native.key

    @property
    def closed(self) -> bool:
        return self._native is not None and self._native.closed

    async def next(self, timeout: Optional[Seconds] = None) -> Optional[Event[_V]]:
        """The next event; ``None`` if none came within ``timeout`` seconds; raises
        ``ClosedError`` once the observation has ended."""
        native = await self._started()
        came, event = await _within(wait(native.next_call()), timeout)
        if not came:
            return None
        if event is None:
            raise ClosedError("the observation has ended")
        return event

    def __aiter__(self) -> "AsyncObservation[_V]":
        return self

    async def __anext__(self) -> Event[_V]:
        native = await self._started()
        event = await wait(native.next_call())
        if event is None:
            raise StopAsyncIteration
        return event

    def close(self) -> None:
        """Stops the observation."""
        self._start = None
        if self._native is not None:
            self._native.close()

    async def __aenter__(self) -> "AsyncObservation[_V]":
        return await self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


def _seconds(timeout: Seconds) -> float:
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


class _AsyncLosable(LosableBase):
    lost = awaitable(LosableBase._lost)


class AsyncLease(LeaseBase[_V], _AsyncLosable, Awaiting):
    """The asyncio twin of :class:`statestore.Lease`."""



class AsyncLockGuard(LockGuardBase[_V], _AsyncLosable, Awaiting):
    """The asyncio twin of :class:`statestore.LockGuard`."""


    async def __aenter__(self) -> "AsyncLockGuard[_V]":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.release()


class AsyncLock(LockBase[_V], Awaiting):
    """``async with client.lock(name, ttl=10.0) as guard:`` waits for the lock and releases it."""

    acquire = awaitable(LockBase._acquire, AsyncLockGuard)

    async def try_acquire(self) -> Optional[AsyncLockGuard[_V]]:
        """One attempt: the guard, or ``None`` if someone else holds the lock."""
        native = await wait(self._try_acquire())
        return None if native is None else AsyncLockGuard(native)

    async def update(
        self, key: BytesLike, fn: Callable[[Optional[_V]], Union[Optional[BytesLike], Awaitable[Optional[BytesLike]]]]
    ) -> Optional[_V]:
        """Under the lock: reads ``key``, calls ``fn(old_value)`` (sync or async), writes the
        result with the fencing token (``None`` deletes), releases. Returns what was written."""
        txn = await wait(self._native.begin_update(key))
        try:
            new = txn.call(fn)
            if inspect.isawaitable(new):
                new = await new
        except BaseException:
            await wait(txn.abort())
            raise
        return await wait(txn.commit(new))

    async def __aenter__(self) -> AsyncLockGuard[_V]:
        guard = await self.acquire()
        push_guard(self, guard)
        return guard

    async def __aexit__(self, *exc: object) -> None:
        await pop_guard(self).release()


class AsyncElection(ElectionBase[_V], _AsyncLosable, Awaiting):
    """The asyncio twin of :class:`statestore.Election`."""


    def observe(self) -> AsyncObservation[_V]:
        """Leadership changes (``async for``, or ``await`` to start at once)."""
        return AsyncObservation(self._native.observe)


_C = TypeVar("_C", bound="AsyncClient[Any]")


class Connecting(Coroutine[Any, Any, _C]):
    """What ``AsyncClient.connect``, ``from_env`` and ``from_url`` return: ``await`` it for the
    client, or connect for the length of a block with ``async with AsyncClient.connect(...) as
    client:`` (the client is closed when the block ends), as ``websockets.connect`` allows. It is
    the connecting coroutine itself otherwise (``asyncio.create_task``, ``wait_for``, ...)."""

    __slots__ = ("_connecting", "_client")

    def __init__(self, connecting: "Coroutine[Any, Any, _C]") -> None:
        self._connecting = connecting
        self._client: Optional[_C] = None

    def __await__(self) -> Generator[Any, None, _C]:
        return self._connecting.__await__()

    def send(self, value: Any) -> Any:
        return self._connecting.send(value)

    def throw(self, *error: Any) -> Any:
        return self._connecting.throw(*error)

    def close(self) -> None:
        self._connecting.close()

    async def __aenter__(self) -> _C:
        self._client = await self._connecting
        return self._client

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.close()


class AsyncClient(ClientBase["Connecting[AsyncClient[bytes]]", "Connecting[AsyncClient[str]]", _V], Awaiting):
    """An asyncio client of the state store. ``client = await AsyncClient.connect(...)``;
    ``async with client: ...`` closes it (or ``async with AsyncClient.connect(...) as client:``
    in one line). Usable from several event loops and threads."""

    @classmethod
    def _complete(cls, start: "Callable[[], _native.Operation[Any]]") -> Any:
        return Connecting(cls._connected(start))

    @classmethod
    async def _connected(cls, start: "Callable[[], _native.Operation[Any]]") -> Any:
        return cls(await wait(start()))

    lock = wrapping(ClientBase._lock, AsyncLock)
    lease = wrapping(ClientBase._lease, AsyncLease)
    election = wrapping(ClientBase._election, AsyncElection)

    async def keys(self, pattern: BytesLike = "*") -> AsyncIterator[_V]:
        """The keys matching ``pattern``, fetched page by page (``async for``).

        Patterns follow the service's dialect (the Rust glob crate's ``Pattern``): ``*``,
        ``?``, ``[abc]``, ``[a-z]``, ``[!0-9]`` negates (``[^...]`` does not), ``[*]`` matches a
        literal ``*``; no backslash escape."""
        pager = self._native.keys(pattern)
        while True:
            page = await wait(pager.next_page())
            if page is None:
                return
            for key in page:
                yield key

    def observe(self, key: BytesLike) -> "AsyncObservation[_V]":
        """Observes ``key``: ``async for event in client.observe(key)``, or
        ``obs = await client.observe(key)`` to be registered before going on."""
        native = self._native
        return AsyncObservation(lambda: native.observe(key))

    def connection_events(self, timeout: Optional[Seconds] = None) -> AsyncIterator[ConnectionEvent]:
        """The connection's changes from now on (``for`` in ``Client``, ``async for`` in
        ``AsyncClient``): ``event.state`` (``reconnecting``, ``connected``, ``gave_up``,
        ``closed``), ``.reason``, ``.attempt``, ``.delay``, ``.session_lost``. The iteration
        ends when none comes within ``timeout`` seconds (``None``: waits as long as it takes)
        and after ``closed``; it does not keep the client open."""
        return _changes(self._native.connection_events(), timeout)

    async def __aenter__(self) -> "AsyncClient[_V]":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[types.TracebackType],
    ) -> None:
        await self.close()


async def _changes(events: _native.ConnectionEvents, timeout: Optional[Seconds]) -> AsyncIterator[ConnectionEvent]:
    try:
        while True:
            came, event = await _within(wait(events.next_call()), timeout)
            if not came or event is None:
                return
            yield event
    finally:
        events.close()


_R = TypeVar("_R")


async def _within(call: Awaitable[_R], timeout: Optional[Seconds]) -> "tuple[bool, Optional[_R]]":
    """``(True, result)`` of ``call``, or ``(False, None)`` if it did not finish within
    ``timeout`` seconds (``None``: waits as long as it takes)."""
    if timeout is None:
        return True, await call
    try:
        return True, await asyncio.wait_for(call, _seconds(timeout))
    except asyncio.TimeoutError:
        return False, None
