"""Clients still open at interpreter exit are closed then, so that no background thread is
left talking to a finished interpreter."""

from __future__ import annotations

import atexit
import weakref
from typing import Any

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
