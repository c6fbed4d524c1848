"""Clients still open at interpreter exit are closed then, so that no background thread is
left talking to a finished interpreter. The thread that exits is recorded first: from then on,
a thread returning from the library while the interpreter finalizes stays parked in it instead
of being ended there by Python (which aborts the process before Python 3.14)."""

from __future__ import annotations

import atexit
import weakref
from typing import Any

from . import _native

_open: "weakref.WeakSet[Any]" = weakref.WeakSet()


def track(client: Any) -> None:
    _open.add(client)


@atexit.register
def _close_all() -> None:
    _native.exiting()
    for client in list(_open):
        try:
            client._native.close().wait()
        except BaseException:  # noqa: BLE001 - exit must go on
            pass
