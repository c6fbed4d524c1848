"""The exception classes: one base, one subclass per core error code.

The classes are generated from the code table of the compiled module (one table, in core), so
a new core error code becomes a class without an edit here; ``_errors.pyi`` declares them for
type checkers and ``stubtest`` keeps it honest.
"""

from __future__ import annotations

import builtins
from typing import Dict, Tuple, Type

from . import _native

__all__ = ["StateStoreError", "ServiceError"]


class StateStoreError(Exception):
    """Every error of the library. ``code`` is the core's stable numeric code, ``name`` its
    upper snake case name, ``outcome_unknown`` says whether a failed write may have been applied
    (timeout, lost connection): read the key before repeating it."""

    code: int = -1
    name: str = ""
    category: str = ""
    outcome_unknown: bool = False

    def __init__(self, message: str, *, outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.outcome_unknown = outcome_unknown


class ServiceError(StateStoreError):
    """The state store refused the request (``-ERR ...``) or answered outside the protocol;
    the subclass says which error."""


StateStoreError.__module__ = "statestore"
ServiceError.__module__ = "statestore"


# Builtins the classes of a category also derive from, so that `except TimeoutError` and
# friends work.
_ALSO: Dict[str, Tuple[type, ...]] = {
    "ARGUMENT": (builtins.ValueError,),
    "TIMEOUT": (builtins.TimeoutError,),
    "CONNECTION": (builtins.ConnectionError,),
    "RUNTIME": (builtins.RuntimeError,),
}

_BY_CODE: Dict[int, Type[StateStoreError]] = {}


def _define() -> None:
    for code, name, class_name, category, description in _native.error_codes():
        base: Type[StateStoreError] = ServiceError if category == "SERVICE" else StateStoreError
        cls = type(
            class_name,
            (base, *_ALSO.get(category, ())),
            {"code": code, "name": name, "category": category, "__module__": "statestore", "__doc__": description},
        )
        globals()[class_name] = cls
        __all__.append(class_name)
        _BY_CODE[code] = cls


def _make(code: int, message: str, outcome_unknown: bool) -> StateStoreError:
    cls = _BY_CODE.get(code, StateStoreError)
    return cls(message, outcome_unknown=outcome_unknown)


_define()
_native._set_error_factory(_make)
