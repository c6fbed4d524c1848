"""``statestore``: client for the MQTT broker state store (Azure IoT Operations).

``statestore.Client`` (blocking) and ``statestore.AsyncClient`` (asyncio) have the same
methods; ``statestore.testing`` runs a local state store in-process for tests.
"""

from __future__ import annotations

from . import _errors
from ._async import AsyncClient
from ._common import BytesLike, Condition
from ._errors import *  # noqa: F401,F403 - one class per core error code
from ._errors import ServiceError, StateStoreError
from ._native import DeleteResult, SetResult, Value, Version
from ._native import __version__ as __version__
from ._sync import Client
from ._timing import Seconds

__all__ = [
    "AsyncClient",
    "BytesLike",
    "Client",
    "Condition",
    "DeleteResult",
    "Seconds",
    "ServiceError",
    "SetResult",
    "StateStoreError",
    "Value",
    "Version",
    *_errors.__all__,
]
