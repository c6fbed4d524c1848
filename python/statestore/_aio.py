"""Native calls as asyncio awaitables. The core completes a call on one of its threads, which
only queues the result on the completion queue of the caller's event loop (no GIL there) and
wakes the loop through the queue's descriptor (a socket pair) watched with ``loop.add_reader``; the
loop resolves the futures on its own thread, many per wake-up. No thread per call; cancelling
the awaiting task cancels the core call."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, TypeVar

from . import _native

if TYPE_CHECKING:
    import asyncio

_T = TypeVar("_T")

_queues: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _native.Completions]" = weakref.WeakKeyDictionary()


def _queue(loop: asyncio.AbstractEventLoop) -> _native.Completions:
    queue = _queues.get(loop)
    if queue is None:
        queue = _native.Completions()
        loop.add_reader(queue.fileno(), queue.drain)
        _queues[loop] = queue
    return queue


async def wait(call: "_native.Operation[_T]") -> _T:
    import asyncio  # here, not at the top: `import statestore` must not load asyncio

    loop = asyncio.get_running_loop()
    future: "asyncio.Future[_T]" = loop.create_future()
    call.deliver_to(_queue(loop), future)
    try:
        return await future
    except asyncio.CancelledError:
        call.cancel()
        raise
