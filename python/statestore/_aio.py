"""Native calls as asyncio awaitables. The core completes a call on one of its threads, which
only queues the result on the completion queue of the caller's event loop (no GIL there) and
wakes the loop through the queue's descriptor (a socket pair) watched with ``loop.add_reader``; the
loop resolves the futures on its own thread, many per wake-up. No thread per call; cancelling
the awaiting task cancels the core call. A call that completes in its first steps, on the
caller's thread (one refused before sending), returns without a loop round trip."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, TypeVar, cast

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
    done, outcome = call.start(_queue(loop), loop)
    if done:
        return cast(_T, outcome)
    try:
        return await cast("asyncio.Future[_T]", outcome)
    except asyncio.CancelledError:
        call.cancel()
        raise
