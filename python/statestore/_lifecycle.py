"""Clients still open at interpreter exit are closed then, so that no background thread is
left talking to a finished interpreter."""

from __future__ import annotations

import atexit
import weakref
from typing import Any

from . import _native

# Registered first, so it runs last (atexit is last-in first-out): after the clients closed, no
# result is handed to Python any more once finalization can begin.
atexit.register(_native._shutdown)

_open: "weakref.WeakSet[Any]" = weakref.WeakSet()


def track(client: Any) -> None:
    _open.add(client)


@atexit.register
def _close_all() -> None:
    for client in list(_open):
        try:
            client._native.close().wait()
        except BaseException:  # noqa: BLE001 - exit must go on
            pass
