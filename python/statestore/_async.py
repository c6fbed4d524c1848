"""``statestore.AsyncClient``: the asyncio twin of :class:`statestore.Client` (same methods,
awaitable)."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import types
from typing import Any, AsyncIterator, Awaitable, Callable, Generator, List, Optional, Type, Union

from . import _native
from ._aio import wait
from ._common import BytesLike, Condition, condition_name, pop_guard, push_guard
from ._lifecycle import track
from ._errors import ClosedError, TimeoutError
from ._native import AcquireResult, DeleteResult, Event, Loss, SetResult, Value, Version
from ._timing import Seconds


class AsyncClient:
    """An asyncio client of the state store. ``client = await AsyncClient.connect(...)``;
    ``async with client: ...`` closes it. Usable from several event loops and threads."""

    def __init__(self, native: _native.Client) -> None:
        self._native = native
        track(self)

    @classmethod
    async def connect(
        cls,
        host: str = "localhost",
        port: int = 1883,
        *,
        decode_responses: bool = False,
        **options: Any,
    ) -> "AsyncClient":
        """Connects to the broker at ``host:port`` (options as :meth:`statestore.Client.connect`)."""
        return cls(await wait(_native.Client.connect(host, port, options, decode_responses)))

    @classmethod
    async def from_env(cls, *, decode_responses: bool = False, **options: Any) -> "AsyncClient":
        """Connects with the ``AIO_*`` environment variables (then ``options``)."""
        return cls(await wait(_native.Client.from_env(options, decode_responses)))

    @property
    def client_id(self) -> str:
        """The MQTT client id."""
        return self._native.client_id

    @property
    def closed(self) -> bool:
        """Whether the client was closed."""
        return self._native.closed

    async def set(
        self,
        key: BytesLike,
        value: BytesLike,
        *,
        condition: Union[Condition, str] = Condition.ALWAYS,
        expiry: Optional[Seconds] = None,
        fencing_token: Optional[Version] = None,
        persist: bool = False,
        timeout: Optional[Seconds] = None,
    ) -> SetResult:
        """Sets ``key`` to ``value`` (see :meth:`statestore.Client.set`)."""
        return await wait(
            self._native.set(key, value, condition_name(condition), expiry, fencing_token, persist, timeout)
        )

    async def get(self, key: BytesLike, *, timeout: Optional[Seconds] = None) -> Optional[Value]:
        """The key's value and version, or ``None``."""
        return await wait(self._native.get(key, timeout))

    async def delete(
        self,
        key: BytesLike,
        *,
        fencing_token: Optional[Version] = None,
        timeout: Optional[Seconds] = None,
    ) -> DeleteResult:
        """Deletes ``key``."""
        return await wait(self._native.delete(key, fencing_token, timeout))

    async def vdel(
        self,
        key: BytesLike,
        value: BytesLike,
        *,
        fencing_token: Optional[Version] = None,
        timeout: Optional[Seconds] = None,
    ) -> DeleteResult:
        """Deletes ``key`` only if it holds ``value``."""
        return await wait(self._native.vdel(key, value, fencing_token, timeout))

    async def keys(self, pattern: BytesLike = "*") -> AsyncIterator[Any]:
        """The keys matching ``pattern``, fetched page by page (``async for``)."""
        pager = self._native.keys(pattern)
        while True:
            page = await wait(pager.next_page())
            if page is None:
                return
            for key in page:
                yield key

    def observe(self, key: BytesLike) -> "AsyncObservation":
        """Observes ``key``: ``async for event in client.observe(key)``, or
        ``obs = await client.observe(key)`` to be registered before going on."""
        native = self._native
        return AsyncObservation(lambda: native.observe(key))

    async def unobserve(self, key: BytesLike) -> None:
        """Ends every observation of ``key`` on this client."""
        await wait(self._native.unobserve(key))

    def lock(
        self,
        name: BytesLike,
        ttl: Seconds = 10.0,
        *,
        timeout: Optional[Seconds] = None,
        auto_renew: bool = True,
    ) -> "AsyncLock":
        """A lock (``async with client.lock(name) as guard:``)."""
        return AsyncLock(_native.Lock(self._native, name, ttl, timeout, auto_renew))

    def lease(self, key: BytesLike, holder: BytesLike, *, auto_renew: bool = False) -> "AsyncLease":
        """A lease on ``key`` for the holder name ``holder``."""
        return AsyncLease(_native.Lease(self._native, key, holder, auto_renew))

    def election(self, name: BytesLike, candidate: BytesLike, ttl: Seconds = 10.0) -> "AsyncElection":
        """Leader election ``name`` with this client as ``candidate``."""
        return AsyncElection(_native.Election(self._native, name, candidate, ttl))

    async def close(self) -> None:
        """Closes the client: calls in flight fail with ``ClosedError``, observations end."""
        await wait(self._native.close())

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[types.TracebackType],
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<statestore.AsyncClient {self.client_id!r}{' closed' if self.closed else ''}>"


class AsyncObservation:
    """The events of an observed key (or election). ``async for event in client.observe(key)``
    starts the observation on the first iteration; ``obs = await client.observe(key)`` starts it
    at once (so that no change made after the ``await`` is missed)."""

    def __init__(self, start: Callable[[], "_native.Call[_native.Observation]"]) -> None:
        self._start: Optional[Callable[[], "_native.Call[_native.Observation]"]] = start
        self._native: Optional[_native.Observation] = None

    async def _started(self) -> _native.Observation:
        if self._native is None:
            if self._start is None:
                raise ClosedError("the observation has ended")
            start, self._start = self._start, None
            self._native = await wait(start())
        return self._native

    def __await__(self) -> Generator[Any, None, "AsyncObservation"]:
        yield from self._started().__await__()
        return self

    @property
    def key(self) -> Any:
        """The observed key (``None`` until started)."""
        return None if self._native is None else self._native.key

    @property
    def closed(self) -> bool:
        return self._native is not None and self._native.closed

    async def next(self, timeout: Optional[Seconds] = None) -> Optional[Event]:
        """The next event; ``None`` if none came within ``timeout`` seconds; raises
        ``ClosedError`` once the observation has ended."""
        native = await self._started()
        call = wait(native.next_call())
        if timeout is None:
            event = await call
        else:
            try:
                event = await asyncio.wait_for(call, _seconds(timeout))
            except asyncio.TimeoutError:
                return None
        if event is None:
            raise ClosedError("the observation has ended")
        return event

    def __aiter__(self) -> "AsyncObservation":
        return self

    async def __anext__(self) -> Event:
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

    async def __aenter__(self) -> "AsyncObservation":
        return await self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


def _seconds(timeout: Seconds) -> float:
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


async def _lost(stream: _native.Observation, timeout: Optional[Seconds]) -> Optional[Loss]:
    try:
        call = wait(stream.next_call())
        try:
            event = await (call if timeout is None else asyncio.wait_for(call, _seconds(timeout)))
        except asyncio.TimeoutError:
            raise TimeoutError(f"still held after {timeout} s") from None
    finally:
        stream.close()
    return None if event is None else event.loss


class AsyncLease:
    """The asyncio twin of :class:`statestore.Lease`."""

    def __init__(self, native: _native.Lease) -> None:
        self._native = native

    @property
    def key(self) -> Any:
        return self._native.key

    @property
    def holder_name(self) -> Any:
        return self._native.holder_name

    @property
    def held(self) -> bool:
        return self._native.held

    @property
    def fencing_token(self) -> Optional[Version]:
        return self._native.fencing_token

    @property
    def state(self) -> str:
        """``"not_held"``, ``"held"`` or ``"lost"``."""
        return self._native.state

    @property
    def loss(self) -> Optional[Loss]:
        """Why the last holding was lost (state ``"lost"``)."""
        return self._native.loss

    @property
    def auto_renew(self) -> bool:
        return self._native.auto_renew

    @auto_renew.setter
    def auto_renew(self, on: bool) -> None:
        self._native.auto_renew = on

    async def try_acquire(self, ttl: Seconds) -> AcquireResult:
        return await wait(self._native.try_acquire(ttl))

    async def acquire(self, ttl: Seconds, *, timeout: Optional[Seconds] = None) -> Version:
        return await wait(self._native.acquire(ttl, timeout))

    async def renew(self) -> None:
        await wait(self._native.renew())

    async def release(self) -> bool:
        return await wait(self._native.release())

    async def holder(self) -> Any:
        return await wait(self._native.holder())

    async def lost(self, timeout: Optional[Seconds] = None) -> Optional[Loss]:
        """Waits until the holding is lost; ``None`` if released or ``timeout`` passed."""
        return await _lost(self._native.loss_events(), timeout)


class AsyncLockGuard:
    """The asyncio twin of :class:`statestore.LockGuard`."""

    def __init__(self, native: _native.LockGuard) -> None:
        self._native = native

    @property
    def fencing_token(self) -> Version:
        return self._native.fencing_token

    @property
    def name(self) -> Any:
        return self._native.name

    @property
    def holder_name(self) -> Any:
        return self._native.holder_name

    @property
    def held(self) -> bool:
        return self._native.held

    async def renew(self) -> None:
        await wait(self._native.renew())

    async def release(self) -> None:
        await wait(self._native.release())

    async def lost(self, timeout: Optional[Seconds] = None) -> Optional[Loss]:
        return await _lost(self._native.loss_events(), timeout)

    async def __aenter__(self) -> "AsyncLockGuard":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.release()


class AsyncLock:
    """``async with client.lock(name, ttl=10.0) as guard:`` waits for the lock and releases it."""

    def __init__(self, native: _native.Lock) -> None:
        self._native = native

    @property
    def name(self) -> Any:
        return self._native.name

    @property
    def ttl(self) -> float:
        return self._native.ttl

    async def acquire(self) -> AsyncLockGuard:
        return AsyncLockGuard(await wait(self._native.lock()))

    async def try_acquire(self) -> Optional[AsyncLockGuard]:
        guard = await wait(self._native.try_lock())
        return None if guard is None else AsyncLockGuard(guard)

    async def holder(self) -> Any:
        return await wait(self._native.holder())

    async def update(
        self, key: BytesLike, fn: Callable[[Any], Union[Optional[BytesLike], Awaitable[Optional[BytesLike]]]]
    ) -> Any:
        """Under the lock: reads ``key``, calls ``fn(old_value)`` (sync or async), writes the
        result with the fencing token (``None`` deletes), releases. Returns what was written."""
        txn = await wait(self._native.begin_update(key))
        try:
            new = fn(txn.old_value)
            if inspect.isawaitable(new):
                new = await new
        except BaseException:
            await wait(txn.abort())
            raise
        return await wait(txn.commit(new))

    async def __aenter__(self) -> AsyncLockGuard:
        guard = await self.acquire()
        push_guard(self, guard)
        return guard

    async def __aexit__(self, *exc: object) -> None:
        await pop_guard(self).release()


class AsyncElection:
    """The asyncio twin of :class:`statestore.Election`."""

    def __init__(self, native: _native.Election) -> None:
        self._native = native

    @property
    def name(self) -> Any:
        return self._native.name

    @property
    def candidate(self) -> Any:
        return self._native.candidate

    @property
    def is_leader(self) -> bool:
        return self._native.is_leader

    @property
    def fencing_token(self) -> Optional[Version]:
        return self._native.fencing_token

    async def campaign(self, *, timeout: Optional[Seconds] = None) -> Version:
        return await wait(self._native.campaign(timeout))

    async def try_campaign(self) -> AcquireResult:
        return await wait(self._native.try_campaign())

    async def resign(self) -> None:
        await wait(self._native.resign())

    async def leader(self) -> Any:
        return await wait(self._native.leader())

    def observe(self) -> AsyncObservation:
        """Leadership changes (``async for``, or ``await`` to start at once)."""
        return AsyncObservation(self._native.observe)

    async def lost(self, timeout: Optional[Seconds] = None) -> Optional[Loss]:
        return await _lost(self._native.loss_events(), timeout)
