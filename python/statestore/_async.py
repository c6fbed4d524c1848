"""``statestore.AsyncClient``: the asyncio twin of :class:`statestore.Client` (same methods,
awaitable)."""

from __future__ import annotations

import types
from typing import Any, AsyncIterator, Optional, Type, Union

from . import _native
from ._aio import wait
from ._common import BytesLike, Condition, condition_name
from ._lifecycle import track
from ._native import DeleteResult, SetResult, Value, Version
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
