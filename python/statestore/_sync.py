"""``statestore.Client``: the blocking client (every call releases the GIL while it waits and
can be interrupted with Ctrl-C)."""

from __future__ import annotations

import types
from typing import Any, Iterator, Optional, Type, Union

from . import _native
from ._common import BytesLike, Condition, condition_name
from ._lifecycle import track
from ._native import DeleteResult, SetResult, Value, Version
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
