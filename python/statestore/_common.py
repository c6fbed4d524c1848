"""What the blocking and the asyncio clients share: argument shaping and small types."""

from __future__ import annotations

import enum
from typing import Any, Dict, Union

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


__all__ = ["BytesLike", "Condition", "Version"]
