"""What the blocking and the asyncio clients share: argument shaping and small types."""

from __future__ import annotations

import contextvars
import enum
from typing import Any, Dict, Tuple, Union

from ._native import Version

#: Keys and values: ``str`` (encoded as UTF-8), ``bytes``, ``bytearray`` or ``memoryview``.
BytesLike = Union[str, bytes, bytearray, memoryview]


class Condition(enum.Enum):
    """When a SET applies."""

    ALWAYS = "always"
    #: Only if the key does not exist.
    NX = "nx"
    #: Only if the key does not exist or already holds the same value (how a holder renews).
    NEX = "nex"


def condition_name(condition: Union[Condition, str]) -> str:
    if isinstance(condition, Condition):
        return condition.value
    if isinstance(condition, str):
        return condition
    raise TypeError(f"argument 'condition': expected statestore.Condition, got {type(condition).__name__}")


def options_dict(options: Dict[str, Any]) -> Dict[str, Any]:
    return options


# The guards taken by `with lock:` / `async with lock:` blocks, per lock object, in the current
# thread or task's context: one Lock object may be entered by several threads or tasks at once,
# and each block releases its own guard.
_HELD: "contextvars.ContextVar[Dict[int, Tuple[Any, ...]]]" = contextvars.ContextVar("statestore_held", default={})


def push_guard(lock: object, guard: Any) -> None:
    held = dict(_HELD.get())
    held[id(lock)] = held.get(id(lock), ()) + (guard,)
    _HELD.set(held)


def pop_guard(lock: object) -> Any:
    held = dict(_HELD.get())
    stack = held[id(lock)]
    if len(stack) > 1:
        held[id(lock)] = stack[:-1]
    else:
        del held[id(lock)]
    _HELD.set(held)
    return stack[-1]


__all__ = ["BytesLike", "Condition", "Version"]
