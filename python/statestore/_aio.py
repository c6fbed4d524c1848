"""Native calls as asyncio awaitables: the core completes them on its dispatcher thread, which
hands the result to the caller's loop with ``call_soon_threadsafe`` (no thread per call).
Cancelling the awaiting task cancels the core call."""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

_T = TypeVar("_T")

from . import _native


def _resolve(future: "asyncio.Future[Any]", ok: bool, value: Any) -> None:
    if future.done():  # cancelled meanwhile
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


async def wait(call: "_native.Call[_T]") -> _T:
    loop = asyncio.get_running_loop()
    future: "asyncio.Future[_T]" = loop.create_future()
    call.deliver(loop, future, _resolve)
    try:
        return await future
    except asyncio.CancelledError:
        call.cancel()
        raise
