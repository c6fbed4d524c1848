"""``statestore.Client``: the blocking client (every call releases the GIL while it waits and
can be interrupted with Ctrl-C)."""

from __future__ import annotations

import types
from typing import Any, Callable, Iterator, List, Optional, Type, Union

from . import _native
from ._common import BytesLike, Condition, condition_name, pop_guard, push_guard
from ._lifecycle import track
from ._errors import ClosedError, TimeoutError
from ._native import AcquireResult, DeleteResult, Event, Loss, SetResult, Value, Version
from ._timing import Seconds


class Client:
    """A blocking client of the state store (one MQTT connection, safe to share between
    threads). Create it with :meth:`connect` or :meth:`from_env`; close it with :meth:`close`
    or a ``with`` block."""

    def __init__(self, native: _native.Client) -> None:
        self._native = native
        track(self)

    @classmethod
    def connect(
        cls,
        host: str = "localhost",
        port: int = 1883,
        *,
        decode_responses: bool = False,
        **options: Any,
    ) -> "Client":
        """Connects to the broker at ``host:port``. ``options`` are the connection settings
        (``client_id``, ``tls``, ``ca_file``, ``username``, ``password``, ``default_timeout``,
        ...: see ``statestore.CONNECT_OPTIONS``); durations are seconds or ``timedelta``.
        ``decode_responses=True`` returns values and keys as ``str``."""
        return cls(_native.Client.connect(host, port, options, decode_responses).wait())

    @classmethod
    def from_env(cls, *, decode_responses: bool = False, **options: Any) -> "Client":
        """Connects with the ``AIO_*`` environment variables of an Azure IoT Operations pod
        (then ``options`` override them)."""
        return cls(_native.Client.from_env(options, decode_responses).wait())

    @property
    def client_id(self) -> str:
        """The MQTT client id."""
        return self._native.client_id

    @property
    def closed(self) -> bool:
        """Whether the client was closed."""
        return self._native.closed

    def set(
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
        """Sets ``key`` to ``value``; ``condition`` NX/NEX, ``expiry`` (time to live),
        ``fencing_token`` for a fenced key, ``persist`` to survive a service restart."""
        return self._native.set(
            key, value, condition_name(condition), expiry, fencing_token, persist, timeout
        ).wait()

    def get(self, key: BytesLike, *, timeout: Optional[Seconds] = None) -> Optional[Value]:
        """The key's value and version, or ``None`` if it does not exist."""
        return self._native.get(key, timeout).wait()

    def delete(
        self,
        key: BytesLike,
        *,
        fencing_token: Optional[Version] = None,
        timeout: Optional[Seconds] = None,
    ) -> DeleteResult:
        """Deletes ``key``."""
        return self._native.delete(key, fencing_token, timeout).wait()

    def vdel(
        self,
        key: BytesLike,
        value: BytesLike,
        *,
        fencing_token: Optional[Version] = None,
        timeout: Optional[Seconds] = None,
    ) -> DeleteResult:
        """Deletes ``key`` only if it holds ``value``."""
        return self._native.vdel(key, value, fencing_token, timeout).wait()

    def keys(self, pattern: BytesLike = "*") -> Iterator[Any]:
        """The keys matching ``pattern`` (``*`` and ``?`` wildcards), fetched page by page."""
        pager = self._native.keys(pattern)
        while True:
            page = pager.next_page().wait()
            if page is None:
                return
            yield from page

    def observe(self, key: BytesLike) -> "Observation":
        """Observes ``key``: an iterator of events (``set``, ``delete``, and ``resynced``
        after a reconnect). Close it (or leave the ``with`` block) to stop."""
        return Observation(self._native.observe(key).wait())

    def unobserve(self, key: BytesLike) -> None:
        """Ends every observation of ``key`` on this client."""
        self._native.unobserve(key).wait()

    def lock(
        self,
        name: BytesLike,
        ttl: Seconds = 10.0,
        *,
        timeout: Optional[Seconds] = None,
        auto_renew: bool = True,
    ) -> "Lock":
        """A lock named ``name`` held for ``ttl`` (renewed automatically while held).
        ``with client.lock(name) as guard:`` waits (up to ``timeout``) and releases."""
        return Lock(_native.Lock(self._native, name, ttl, timeout, auto_renew))

    def lease(self, key: BytesLike, holder: BytesLike, *, auto_renew: bool = False) -> "Lease":
        """A lease on ``key`` for the holder name ``holder`` (unique per holder)."""
        return Lease(_native.Lease(self._native, key, holder, auto_renew))

    def election(self, name: BytesLike, candidate: BytesLike, ttl: Seconds = 10.0) -> "Election":
        """Leader election ``name`` with this client as ``candidate`` (a unique name)."""
        return Election(_native.Election(self._native, name, candidate, ttl))

    def close(self) -> None:
        """Closes the client: calls in flight fail with ``ClosedError``, observations end."""
        self._native.close().wait()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[types.TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<statestore.Client {self.client_id!r}{' closed' if self.closed else ''}>"


class Observation:
    """The events of an observed key (or election): a blocking iterator. ``for event in obs``
    ends when the observation is closed (``close()``, ``unobserve``, client closed)."""

    def __init__(self, native: _native.Observation) -> None:
        self._native = native

    @property
    def key(self) -> Any:
        """The observed key."""
        return self._native.key

    @property
    def closed(self) -> bool:
        """Whether the observation has ended."""
        return self._native.closed

    def next(self, timeout: Optional[Seconds] = None) -> Optional[Event]:
        """The next event; ``None`` if none came within ``timeout`` seconds; raises
        ``ClosedError`` once the observation has ended."""
        return self._native.next(timeout)

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        try:
            event = self._native.next(None)
        except ClosedError:
            raise StopIteration from None
        assert event is not None
        return event

    def close(self) -> None:
        """Stops the observation."""
        self._native.close()

    def __enter__(self) -> "Observation":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lost(stream: _native.Observation, timeout: Optional[Seconds]) -> Optional[Loss]:
    try:
        event = stream.next(timeout)
    except ClosedError:  # released (or never held), not lost
        return None
    finally:
        stream.close()
    if event is None:
        raise TimeoutError(f"still held after {timeout} s")
    return event.loss


class Lease:
    """A lease on ``key`` under the holder name ``holder`` (see :meth:`Client.lease`)."""

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
        """Whether the lease is held now."""
        return self._native.held

    @property
    def fencing_token(self) -> Optional[Version]:
        """The current holding's fencing token."""
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

    def try_acquire(self, ttl: Seconds) -> AcquireResult:
        """One attempt: ``AcquireResult(acquired, fencing_token, holder)``."""
        return self._native.try_acquire(ttl).wait()

    def acquire(self, ttl: Seconds, *, timeout: Optional[Seconds] = None) -> Version:
        """Waits until acquired (or ``timeout``: ``TimeoutError``); returns the fencing token."""
        return self._native.acquire(ttl, timeout).wait()

    def renew(self) -> None:
        self._native.renew().wait()

    def release(self) -> bool:
        """Releases the lease; ``True`` if the key was deleted."""
        return self._native.release().wait()

    def holder(self) -> Any:
        """The current holder name on the service (``None``: free)."""
        return self._native.holder().wait()

    def lost(self, timeout: Optional[Seconds] = None) -> Optional[Loss]:
        """Waits until the current holding is lost and says why; ``None`` if it was released
        instead (or never held); ``statestore.TimeoutError`` if still held after ``timeout``."""
        return _lost(self._native.loss_events(), timeout)


class LockGuard:
    """A held lock: ``fencing_token`` protects the writes made under it."""

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

    def renew(self) -> None:
        self._native.renew().wait()

    def release(self) -> None:
        """Releases the lock (idempotent)."""
        self._native.release().wait()

    def lost(self, timeout: Optional[Seconds] = None) -> Optional[Loss]:
        """Waits until the lock is lost; ``None`` if released or ``timeout`` passed."""
        return _lost(self._native.loss_events(), timeout)

    def __enter__(self) -> "LockGuard":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Lock:
    """A lock. ``with client.lock(name, ttl=10.0) as guard:`` waits for it and releases it."""

    def __init__(self, native: _native.Lock) -> None:
        self._native = native

    @property
    def name(self) -> Any:
        return self._native.name

    @property
    def ttl(self) -> float:
        return self._native.ttl

    def acquire(self) -> LockGuard:
        """Waits for the lock (up to the lock's ``timeout``, if any)."""
        return LockGuard(self._native.lock().wait())

    def try_acquire(self) -> Optional[LockGuard]:
        """One attempt: the guard, or ``None`` if someone else holds the lock."""
        guard = self._native.try_lock().wait()
        return None if guard is None else LockGuard(guard)

    def holder(self) -> Any:
        """The current holder name on the service (``None``: free)."""
        return self._native.holder().wait()

    def update(self, key: BytesLike, fn: Callable[[Any], Optional[BytesLike]]) -> Any:
        """Under the lock: reads ``key``, calls ``fn(old_value)`` (``None`` if absent), writes
        its result with the fencing token (``None`` deletes the key), releases. Returns what
        was written."""
        txn = self._native.begin_update(key).wait()
        try:
            new = fn(txn.old_value)
        except BaseException:
            txn.abort().wait()
            raise
        return txn.commit(new).wait()

    def __enter__(self) -> LockGuard:
        guard = self.acquire()
        push_guard(self, guard)
        return guard

    def __exit__(self, *exc: object) -> None:
        pop_guard(self).release()


class Election:
    """Leader election among candidates (see :meth:`Client.election`)."""

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

    def campaign(self, *, timeout: Optional[Seconds] = None) -> Version:
        """Waits until elected (renewed automatically while leader); the fencing token."""
        return self._native.campaign(timeout).wait()

    def try_campaign(self) -> AcquireResult:
        return self._native.try_campaign().wait()

    def resign(self) -> None:
        self._native.resign().wait()

    def leader(self) -> Any:
        """The current leader's name (``None``: vacant)."""
        return self._native.leader().wait()

    def observe(self) -> Observation:
        """Leadership changes: ``elected`` (``event.holder``) and ``vacant`` events."""
        return Observation(self._native.observe().wait())

    def lost(self, timeout: Optional[Seconds] = None) -> Optional[Loss]:
        """Waits until leadership is lost; ``None`` if resigned or ``timeout`` passed."""
        return _lost(self._native.loss_events(), timeout)
