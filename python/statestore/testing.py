"""A local state store for tests: the ``statestore-server`` engine with an embedded MQTT 5
broker, in this process, on a free loopback port. Its server ships apart from the client, in
the ``testing`` extra: ``pip install 'mqtt-statestore[testing]'``.

>>> from statestore.testing import LocalStateStore
>>> with LocalStateStore() as server:
...     with server.client() as client:
...         _ = client.set("k", "v")

As pytest fixtures (this module is a pytest plugin once the extra is installed):
``statestore_server`` (a store on a free port) and ``statestore_client`` (a client of it).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator, Literal, Optional, Union, overload

if TYPE_CHECKING:
    from typing_extensions import Unpack

try:
    import statestore_testing as _server
except ImportError as _missing:  # the extra is not installed
    raise ImportError(
        "statestore.testing needs the local state store, which ships apart from the client: "
        "pip install 'mqtt-statestore[testing]'",
        name=__name__,
    ) from _missing

from . import _native
from ._common import ClosedOnExit, ConnectOptions
from ._async import AsyncClient
from ._sync import Client

__all__ = ["LocalStateStore", "statestore_server", "statestore_client"]


class LocalStateStore(ClosedOnExit):
    """A running local state store. Starts on construction; ``stop()`` or the ``with`` block
    stops it."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_keys: Optional[int] = None,
        username: Optional[str] = None,
        password: Optional[str] = None,
        tls_cert: Optional[Union[str, "os.PathLike[str]"]] = None,
        tls_key: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> None:
        """Starts the store on ``host:port`` (port 0: a free port), with an optional key quota,
        an account clients must log in with, and TLS (PEM certificate chain and key)."""
        for name, value in (("host", host), ("username", username), ("password", password)):
            if isinstance(value, str):
                _native.check_text(value, name)
        self._server = _server.Server.start(host, port, max_keys, username, password, tls_cert, tls_key)

    @property
    def host(self) -> str:
        """The address clients connect to."""
        return self._server.host

    @property
    def port(self) -> int:
        """The port clients connect to (a free one when started with port 0)."""
        return self._server.port

    @property
    def url(self) -> str:
        """The connection URL for ``Client.from_url``: ``mqtt://127.0.0.1:PORT``, ``mqtts://``
        with TLS, and the account (``mqtt://user:password@...``) when started with one. It holds
        the password: keep it out of logs."""
        return self._server.url

    @overload
    def client(self, *, decode_responses: Literal[False] = False, **options: Unpack[ConnectOptions]) -> Client[bytes]: ...
    @overload
    def client(self, *, decode_responses: Literal[True], **options: Unpack[ConnectOptions]) -> Client[str]: ...
    def client(self, *, decode_responses: bool = False, **options: Unpack[ConnectOptions]) -> Client[Any]:
        """A blocking client connected to this store, logged in with its account if it has one
        (``Client.connect``'s keywords, which override the URL's: ``ca_file`` for a store serving
        TLS)."""
        return Client.from_url(self.url, decode_responses=decode_responses, **options)

    @overload
    async def async_client(
        self, *, decode_responses: Literal[False] = False, **options: Unpack[ConnectOptions]
    ) -> AsyncClient[bytes]: ...
    @overload
    async def async_client(
        self, *, decode_responses: Literal[True], **options: Unpack[ConnectOptions]
    ) -> AsyncClient[str]: ...
    async def async_client(self, *, decode_responses: bool = False, **options: Unpack[ConnectOptions]) -> AsyncClient[Any]:
        """An asyncio client connected to this store, as ``client()`` connects."""
        return await AsyncClient.from_url(self.url, decode_responses=decode_responses, **options)

    def stop(self) -> None:
        """Stops the store (idempotent)."""
        self._server.stop()

    def _on_exit(self) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<LocalStateStore {self.host}:{self.port}>"


try:
    import pytest
except ImportError:  # pytest is optional: the fixture exists only where pytest does
    pass
else:

    @pytest.fixture
    def statestore_server() -> Iterator[LocalStateStore]:
        """A local state store on a free port, stopped after the test."""
        with LocalStateStore() as server:
            yield server

    @pytest.fixture
    def statestore_client(statestore_server: LocalStateStore) -> Iterator[Client[bytes]]:
        """A blocking client of ``statestore_server``, closed after the test."""
        with statestore_server.client() as client:
            yield client
