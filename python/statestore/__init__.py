"""``statestore``: client for the MQTT broker state store (Azure IoT Operations).

``statestore.Client`` (blocking) and ``statestore.AsyncClient`` (asyncio) have the same
methods; ``statestore.testing`` runs a local state store in-process for tests (the
``testing`` extra: ``pip install 'mqtt-statestore[testing]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _errors, _native
from ._logging import TRACE, disable_logging, enable_logging  # first: its exit hook runs last
from ._common import BytesLike, Condition, ConnectOptions, EnvOptions
from ._errors import *  # noqa: F401,F403 - one class per core error code
from ._errors import ServiceError, StateStoreError
from ._native import *  # noqa: F401,F403 - the result types (`_native.__all__`: the classes the native module exports)
from ._native import __version__ as __version__
from ._sync import Client, Election, Lease, Lock, LockGuard, Observation
from ._timing import Seconds

if TYPE_CHECKING:
    from ._async import AsyncClient, AsyncElection, AsyncLease, AsyncLock, AsyncLockGuard, AsyncObservation

# The asyncio flavour loads asyncio, which would double the time `import statestore` takes for a
# program that never uses it: its classes are imported on first use.
_ASYNC_NAMES = frozenset(
    {"AsyncClient", "AsyncElection", "AsyncLease", "AsyncLock", "AsyncLockGuard", "AsyncObservation"}
)


def __getattr__(name: str) -> Any:
    if name in _ASYNC_NAMES:
        from . import _async

        value = getattr(_async, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'statestore' has no attribute {name!r}")


#: ``(name, kind, default, doc)`` of every keyword ``connect()`` accepts (kind ``seconds``:
#: a number of seconds or a ``timedelta``).
CONNECT_OPTIONS = tuple(_native.connect_options())

__all__ = [
    "CONNECT_OPTIONS",
    "AsyncClient",
    "AsyncElection",
    "AsyncLease",
    "AsyncLock",
    "AsyncLockGuard",
    "AsyncObservation",
    "Election",
    "EnvOptions",
    "Lease",
    "Lock",
    "LockGuard",
    "Observation",
    "BytesLike",
    "Client",
    "Condition",
    "ConnectOptions",
    "Seconds",
    "ServiceError",
    "StateStoreError",
    "TRACE",
    "disable_logging",
    "enable_logging",
]
__all__.extend(_native.__all__)
__all__.extend(_errors.__all__)
