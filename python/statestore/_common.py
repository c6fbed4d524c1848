"""What the blocking and the asyncio clients share: every operation's one body (argument
shaping, the native call, the conversion of its result) and the attributes read from the native
objects. An ``@operation`` is a method of both flavours at once: each flavour's class only says
how a call completes, by its base (``Blocking``: on the caller's thread, ``Awaiting``: on the
event loop)."""

from __future__ import annotations

import contextvars
import enum
import functools
import inspect
import os
import re
import types
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    ClassVar,
    Coroutine,
    Dict,
    Generic,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Tuple,
    Type,
    TypedDict,
    TypeVar,
    Union,
    overload,
)

from . import _native
from ._aio import wait
from ._errors import StateStoreError
from ._lifecycle import track
from ._native import AcquireResult, DeleteResult, Loss, SetResult, Value, Version
from ._timing import Seconds

if TYPE_CHECKING:
    from typing_extensions import Concatenate, ParamSpec, Unpack

    _P = ParamSpec("_P")
else:
    try:
        from typing import ParamSpec
    except ImportError:
        # Python 3.9 has no ParamSpec and typing_extensions is only for type checkers; at run
        # time `_P` only has to be something `Generic` accepts.
        ParamSpec = TypeVar
    _P = ParamSpec("_P")

_T = TypeVar("_T")
_N = TypeVar("_N")
_RB = TypeVar("_RB")
_RS = TypeVar("_RS")
_W = TypeVar("_W")
#: The key type of a mapping given to ``set_many`` (mappings are invariant in their keys).
_K = TypeVar("_K", bound=Union[str, bytes, bytearray, memoryview])
#: What a client returns for keys, values and names: ``bytes``, or ``str`` when connected with
#: ``decode_responses=True`` (``Client[bytes]`` / ``Client[str]``; a bare ``Client`` is
#: ``Client[bytes]``, as ``connect()`` gives). The default needs typing_extensions, which only
#: type checkers load.
if TYPE_CHECKING:
    from typing_extensions import TypeVar as _TypeVarWithDefault

    _V = _TypeVarWithDefault("_V", bound=Union[bytes, str], default=bytes)
else:
    _V = TypeVar("_V", bound=Union[bytes, str])

#: Keys and values: ``str`` (encoded as UTF-8), ``bytes``, ``bytearray`` or ``memoryview``.
BytesLike = Union[str, bytes, bytearray, memoryview]


class Condition(enum.Enum):
    """When a SET applies."""

    ALWAYS = "always"
    #: Only if the key does not exist.
    NX = "nx"
    #: Only if the key does not exist or already holds the same value (how a holder renews).
    NEX = "nex"


#: The condition names ``set`` also accepts in place of :class:`Condition`.
_ConditionName = Union[
    Literal["always"], Literal["nx"], Literal["nex"], Literal["ALWAYS"], Literal["NX"], Literal["NEX"]
]

_Path = Union[str, os.PathLike[str]]


class ConnectOptions(TypedDict, total=False):
    """The keyword arguments of ``connect`` after ``host`` and ``port`` (``None``: the default);
    ``statestore.CONNECT_OPTIONS`` documents each."""

    client_id: Optional[str]
    keep_alive: Optional[Seconds]
    session_expiry: Optional[Seconds]
    clean_start: Optional[bool]
    tls: Optional[bool]
    ca_file: Optional[_Path]
    cert_file: Optional[_Path]
    key_file: Optional[_Path]
    key_password_file: Optional[_Path]
    username: Optional[str]
    password: Optional[str]
    password_file: Optional[_Path]
    sat_token_file: Optional[_Path]
    sat_check_interval: Optional[Seconds]
    default_timeout: Optional[Seconds]
    reconnect_initial_delay: Optional[Seconds]
    reconnect_max_delay: Optional[Seconds]
    reconnect_max_attempts: Optional[int]
    reconnect_max_elapsed: Optional[Seconds]
    max_packet_size: Optional[int]
    max_in_flight: Optional[int]


class EnvOptions(ConnectOptions, total=False):
    """The keyword arguments of ``from_env``: they override the ``AIO_*`` variables."""

    host: Optional[str]
    port: Optional[int]


def condition_name(condition: Union[Condition, str]) -> _ConditionName:
    if isinstance(condition, Condition):
        return condition.value
    if isinstance(condition, str):
        # Any other name is refused by the native module with the names it accepts.
        return condition  # type: ignore[return-value]
    raise TypeError(f"argument 'condition': expected statestore.Condition, got {type(condition).__name__}")


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




# --- how a call completes: the only difference between the two flavours


def _published(run: Callable[..., Any], op: Callable[..., Any], then: Any) -> Any:
    """``run`` named, documented and signed as ``op``, but returning what ``run`` returns."""
    functools.update_wrapper(run, op)
    signature = inspect.signature(op)
    returns = getattr(then, "returns", None) or getattr(then, "__name__", None)
    if returns is None:
        call = re.fullmatch(r"_native\.Operation\[(.*)\]", str(signature.return_annotation))
        returns = call.group(1) if call else signature.return_annotation
    run.__signature__ = signature.replace(return_annotation=returns)  # type: ignore[attr-defined]
    return run


def _invoke(op: Callable[..., _T], public: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> _T:
    """``op(*args, **kwargs)``; a mistake in the arguments (a misspelt keyword, one too many)
    names the public method the caller used (``Client.set()``), not the private one."""
    try:
        return op(*args, **kwargs)
    except TypeError as error:
        # No frame below this one: Python refused the arguments before running ``op``.
        if error.__traceback__ is None or error.__traceback__.tb_next is not None:
            raise
        private = f"{op.__qualname__}()"
        message = str(error)
        if private not in message:
            raise
        raise TypeError(message.replace(private, f"{public.__qualname__}()")) from None


@overload
def blocking(op: "Callable[_P, _native.Operation[_T]]", then: None = None) -> "Callable[_P, _T]": ...
@overload
def blocking(op: "Callable[_P, _native.Operation[_N]]", then: Callable[[_N], _T]) -> "Callable[_P, _T]": ...
def blocking(op: Any, then: Any = None) -> Any:
    """``op``'s call waited for on the caller's thread (GIL released, Ctrl-C honoured)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        result = _invoke(op, run, args, kwargs).wait()
        return result if then is None else then(result)

    return _published(run, op, then)


@overload
def awaitable(op: "Callable[_P, _native.Operation[_T]]", then: None = None) -> "Callable[_P, Coroutine[Any, Any, _T]]": ...
@overload
def awaitable(
    op: "Callable[_P, _native.Operation[_N]]", then: Callable[[_N], _T]
) -> "Callable[_P, Coroutine[Any, Any, _T]]": ...
def awaitable(op: Any, then: Any = None) -> Any:
    """``op``'s call completed on the running event loop."""

    async def run(*args: Any, **kwargs: Any) -> Any:
        result = await wait(_invoke(op, run, args, kwargs))
        return result if then is None else then(result)

    return _published(run, op, then)


def wrapping(op: "Callable[_P, _N]", then: Callable[[_N], _T]) -> "Callable[_P, _T]":
    """``op``'s native object (no call: nothing to wait for) wrapped by ``then``."""

    def run(*args: Any, **kwargs: Any) -> Any:
        return then(_invoke(op, run, args, kwargs))

    return _published(run, op, then)  # type: ignore[no-any-return]


class Blocking:
    """Base of the blocking flavour's classes: their ``@operation`` methods wait on the caller's
    thread."""


class Awaiting:
    """Base of the asyncio flavour's classes: their ``@operation`` methods are coroutines."""


class operation(Generic[_P, _T]):
    """An operation of both flavours, written once as a method that starts the native call
    (returning ``_native.Operation[T]``): in a ``Blocking`` class a method returning ``T``, in an
    ``Awaiting`` class a coroutine method giving ``T``, each with the body's name, parameters and
    docstring. ``Shared`` puts the flavour's plain function in each flavour class, so a call
    costs what a hand-written method costs."""

    def __init__(self, op: "Callable[Concatenate[Any, _P], _native.Operation[_T]]") -> None:
        self._op = op
        self._name = op.__name__
        self.__doc__ = op.__doc__
        self.__wrapped__ = op

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def made_for(self, flavour: type) -> Callable[..., Any]:
        """The function ``flavour`` (a ``Blocking`` or ``Awaiting`` class) has for this operation."""
        made: Callable[..., Any] = (awaitable if issubclass(flavour, Awaiting) else blocking)(self._op)
        made.__name__ = self._name
        made.__qualname__ = f"{flavour.__qualname__}.{self._name}"
        return made

    @overload
    def __get__(self, obj: None, owner: Optional[type] = None) -> "operation[_P, _T]": ...
    @overload
    def __get__(self, obj: Blocking, owner: Optional[type] = None) -> "Callable[_P, _T]": ...
    @overload
    def __get__(self, obj: Awaiting, owner: Optional[type] = None) -> "Callable[_P, Coroutine[Any, Any, _T]]": ...
    def __get__(self, obj: Optional[object], owner: Optional[type] = None) -> Any:
        # Only reached on the shared base classes: each flavour class has its own function.
        if obj is None:
            return self
        return types.MethodType(self.made_for(type(obj)), obj)


class Native(Generic[_T]):
    """An attribute read from the native object (``self._native``); ``settable`` ones are
    written through to it."""

    def __init__(self, doc: Optional[str] = None, *, settable: bool = False) -> None:
        self.__doc__ = doc
        self._settable = settable
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: Optional[type] = None) -> "Native[_T]": ...
    @overload
    def __get__(self, obj: object, owner: Optional[type] = None) -> _T: ...
    def __get__(self, obj: Optional[object], owner: Optional[type] = None) -> Any:
        if obj is None:
            return self
        return getattr(obj._native, self._name)  # type: ignore[attr-defined]

    def __set__(self, obj: object, value: _T) -> None:
        if not self._settable:
            raise AttributeError(f"attribute {self._name!r} of {type(obj).__name__!r} is read-only")
        setattr(obj._native, self._name, value)  # type: ignore[attr-defined]


class Described:
    """``repr`` as ``<statestore.Lease key='k' holder_name='me' state='held'>``: the class name
    and the attributes ``_shown`` names, as they are now."""

    _shown: ClassVar[Tuple[str, ...]] = ()

    def __repr__(self) -> str:
        parts = [f"<statestore.{type(self).__name__}"]
        for name in self._shown:
            try:
                value = repr(getattr(self, name))
            except Exception:  # a repr must not raise, whatever the state of the object
                value = "?"
            parts.append(f"{name}={value}")
        return " ".join(parts) + ">"


class Shared(Described, Generic[_W]):
    """Base of the public classes: the native object they wrap. The shared operations are
    ``@operation`` methods here, which every flavour class gets as its own function below. The
    few whose result is a flavour's own class are private methods here (``_lock``) that each
    flavour publishes under their public name (``lock = wrapping(ClientBase._lock, Lock)``),
    which gets its name back below."""

    def __init__(self, native: _W) -> None:
        self._native = native

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, attr in list(vars(cls).items()):
            if callable(attr) and hasattr(attr, "__wrapped__") and attr.__name__ != name:
                attr.__name__ = name
                attr.__qualname__ = f"{cls.__qualname__}.{name}"
        if issubclass(cls, (Blocking, Awaiting)):
            for name in dir(cls):
                shared = inspect.getattr_static(cls, name)
                if isinstance(shared, operation):
                    setattr(cls, name, shared.made_for(cls))


_S = TypeVar("_S")


class ClosedOnExit:
    """``with obj:`` ends with ``obj._on_exit()`` (close, stop)."""

    def _on_exit(self) -> None:
        raise NotImplementedError

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[types.TracebackType],
    ) -> None:
        self._on_exit()


# --- the operations, once


class ClientBase(Shared["_native.Client[_V]"], Generic[_RB, _RS, _V]):
    """``_RB`` and ``_RS``: what ``connect`` returns without and with ``decode_responses``
    (the client, or a coroutine giving it); ``_V``: ``bytes`` or ``str`` accordingly."""

    def __init__(self, native: "_native.Client[_V]") -> None:
        super().__init__(native)
        track(self)

    @classmethod
    def _complete(cls, start: "Callable[[], _native.Operation[Any]]") -> Any:
        """The client from the connection ``start()`` makes (asyncio: started when awaited)."""
        raise NotImplementedError

    @overload
    @classmethod
    def connect(
        cls,
        host: str = ...,
        port: int = ...,
        *,
        decode_responses: Literal[False] = False,
        **options: Unpack[ConnectOptions],
    ) -> _RB: ...
    @overload
    @classmethod
    def connect(
        cls, host: str = ..., port: int = ..., *, decode_responses: Literal[True], **options: Unpack[ConnectOptions]
    ) -> _RS: ...
    @overload
    @classmethod
    def connect(
        cls, host: str = ..., port: int = ..., *, decode_responses: bool, **options: Unpack[ConnectOptions]
    ) -> Union[_RB, _RS]: ...
    @classmethod
    def connect(
        cls,
        host: str = "localhost",
        port: int = 1883,
        *,
        decode_responses: bool = False,
        **options: Unpack[ConnectOptions],
    ) -> Union[_RB, _RS]:
        """Connects to the broker at ``host:port``. ``options`` are the connection settings
        (``client_id``, ``tls``, ``ca_file``, ``username``, ``password``, ``default_timeout``,
        ...: see ``statestore.ConnectOptions`` and ``statestore.CONNECT_OPTIONS``); durations
        are seconds or ``timedelta``. ``decode_responses=True`` returns values and keys as
        ``str`` (a ``Client[str]``; otherwise ``bytes``, a ``Client[bytes]``)."""
        return cls._complete(lambda: _native.Client.connect(host, port, options, decode_responses))  # type: ignore[no-any-return]

    @overload
    @classmethod
    def from_env(cls, *, decode_responses: Literal[False] = False, **options: Unpack[EnvOptions]) -> _RB: ...
    @overload
    @classmethod
    def from_env(cls, *, decode_responses: Literal[True], **options: Unpack[EnvOptions]) -> _RS: ...
    @overload
    @classmethod
    def from_env(cls, *, decode_responses: bool, **options: Unpack[EnvOptions]) -> Union[_RB, _RS]: ...
    @classmethod
    def from_env(cls, *, decode_responses: bool = False, **options: Unpack[EnvOptions]) -> Union[_RB, _RS]:
        """Connects with the ``AIO_*`` environment variables of an Azure IoT Operations pod
        (then ``options`` override them)."""
        return cls._complete(lambda: _native.Client.from_env(options, decode_responses))  # type: ignore[no-any-return]

    @overload
    @classmethod
    def from_url(
        cls, url: str, *, decode_responses: Literal[False] = False, **options: Unpack[EnvOptions]
    ) -> _RB: ...
    @overload
    @classmethod
    def from_url(cls, url: str, *, decode_responses: Literal[True], **options: Unpack[EnvOptions]) -> _RS: ...
    @overload
    @classmethod
    def from_url(
        cls, url: str, *, decode_responses: bool, **options: Unpack[EnvOptions]
    ) -> Union[_RB, _RS]: ...
    @classmethod
    def from_url(
        cls, url: str, *, decode_responses: bool = False, **options: Unpack[EnvOptions]
    ) -> Union[_RB, _RS]:
        """Connects with a connection URL, ``mqtt://[user[:password]@]host[:port][?option=value&...]``
        or ``mqtts://...`` (TLS; port 1883 or 8883 by default). Query options are the names of
        ``statestore.CONNECT_OPTIONS`` (``?client_id=app&keep_alive=30s&ca_file=/ca.pem``);
        ``options`` given as keywords override the URL's. A malformed URL raises
        ``InvalidArgumentError`` naming the part at fault, with the password shown as ``***``."""
        return cls._complete(lambda: _native.Client.from_url(url, options, decode_responses))  # type: ignore[no-any-return]

    client_id: Native[str] = Native("The MQTT client id.")
    closed: Native[bool] = Native("Whether the client was closed.")
    connection_state: Native["_native._ConnectionState"] = Native(
        "The connection's state: connecting, connected, reconnecting, gave_up or closed."
    )

    @operation
    def set(
        self,
        key: BytesLike,
        value: BytesLike,
        *,
        condition: Union[Condition, _ConditionName] = Condition.ALWAYS,
        expiry: Optional[Seconds] = None,
        fencing_token: Optional[Version] = None,
        persist: bool = False,
        timeout: Optional[Seconds] = None,
    ) -> _native.Operation[SetResult]:
        """Sets ``key`` to ``value``; ``condition`` NX/NEX, ``expiry`` (time to live),
        ``fencing_token`` for a fenced key, ``persist`` to survive a service restart."""
        return self._native.set(key, value, condition_name(condition), expiry, fencing_token, persist, timeout)

    @operation
    def get(self, key: BytesLike, *, timeout: Optional[Seconds] = None) -> _native.Operation[Optional[Value[_V]]]:
        """The key's value and version, or ``None`` if it does not exist."""
        return self._native.get(key, timeout)

    @operation
    def delete(
        self, key: BytesLike, *, fencing_token: Optional[Version] = None, timeout: Optional[Seconds] = None
    ) -> _native.Operation[DeleteResult]:
        """Deletes ``key``."""
        return self._native.delete(key, fencing_token, timeout)

    @operation
    def vdel(
        self,
        key: BytesLike,
        value: BytesLike,
        *,
        fencing_token: Optional[Version] = None,
        timeout: Optional[Seconds] = None,
    ) -> _native.Operation[DeleteResult]:
        """Deletes ``key`` only if it holds ``value``."""
        return self._native.vdel(key, value, fencing_token, timeout)

    @operation
    def get_many(
        self, keys: Iterable[BytesLike], *, timeout: Optional[Seconds] = None
    ) -> _native.Operation[List[Union[Optional[Value[_V]], StateStoreError]]]:
        """The values of ``keys``: a list in the order of ``keys``, one item per key (a
        duplicate is read each time): its ``Value``, ``None`` if absent, or the exception
        instance of its failure (returned, not raised, as redis-py pipelines do with
        ``raise_on_error=False``). Client-side pipelining (the protocol has no multi-key
        command): up to ``max_in_flight`` GETs in flight, one round trip into the library for
        the whole batch. An invalid key raises ``InvalidArgumentError`` naming it, and nothing
        is sent. ``timeout`` is each GET's."""
        return self._native.get_many(keys, timeout)

    @operation
    def set_many(
        self,
        items: Union[Mapping[_K, BytesLike], Iterable[Tuple[BytesLike, BytesLike]]],
        *,
        condition: Union[Condition, _ConditionName] = Condition.ALWAYS,
        expiry: Optional[Seconds] = None,
        fencing_token: Optional[Version] = None,
        persist: bool = False,
        timeout: Optional[Seconds] = None,
    ) -> _native.Operation[List[Union[SetResult, StateStoreError]]]:
        """Sets each ``(key, value)`` of ``items`` (pairs, or a mapping) with the options of
        ``set``, applied to each: a list in the order of ``items`` with each item's
        ``SetResult`` or the exception instance of its failure (e.g. a fencing token too old
        for that key). Pipelined and checked before sending as ``get_many``."""
        pairs = items.items() if isinstance(items, Mapping) else items
        return self._native.set_many(pairs, condition_name(condition), expiry, fencing_token, persist, timeout)

    @operation
    def delete_many(
        self, keys: Iterable[BytesLike], *, fencing_token: Optional[Version] = None, timeout: Optional[Seconds] = None
    ) -> _native.Operation[List[Union[DeleteResult, StateStoreError]]]:
        """Deletes each of ``keys``: a list in the order of ``keys`` with each key's
        ``DeleteResult`` or the exception instance of its failure. Pipelined and checked
        before sending as ``get_many``."""
        return self._native.delete_many(keys, fencing_token, timeout)

    @operation
    def unobserve(self, key: BytesLike) -> _native.Operation[None]:
        """Ends every observation of ``key`` on this client."""
        return self._native.unobserve(key)

    def _lock(
        self, name: BytesLike, ttl: Seconds = 10.0, *, timeout: Optional[Seconds] = None, auto_renew: bool = True
    ) -> _native.Lock[_V]:
        """A lock named ``name`` held for ``ttl`` (renewed automatically while held).
        ``with client.lock(name) as guard:`` (asyncio: ``async with``) waits (up to ``timeout``)
        and releases."""
        return _native.Lock(self._native, name, ttl, timeout, auto_renew)

    def _lease(self, key: BytesLike, holder: BytesLike, *, auto_renew: bool = False) -> _native.Lease[_V]:
        """A lease on ``key`` for the holder name ``holder`` (unique per holder)."""
        return _native.Lease(self._native, key, holder, auto_renew)

    def _election(self, name: BytesLike, candidate: BytesLike, ttl: Seconds = 10.0) -> _native.Election[_V]:
        """Leader election ``name`` with this client as ``candidate`` (a unique name)."""
        return _native.Election(self._native, name, candidate, ttl)

    @operation
    def close(self) -> _native.Operation[None]:
        """Closes the client: calls in flight fail with ``ClosedError``, observations end. A
        lock, lease or election being acquired is given back first (its request may have been
        applied), so close never leaves it taken until its TTL ends."""
        return self._native.close()

    def __repr__(self) -> str:
        try:
            state: str = self.connection_state
        except Exception:  # a repr must not raise, whatever the state of the client
            state = "?"
        return f"<statestore.{type(self).__name__} {self.client_id!r} {state}>"


class _Holding(Protocol):
    @property
    def held(self) -> bool: ...
    def renew(self) -> _native.Operation[None]: ...


_H = TypeVar("_H", bound=_Holding)


class HoldingBase(Shared[_H]):
    """What a lease and a held lock share."""

    held: Native[bool] = Native("Whether it is held now.")

    @operation
    def renew(self) -> _native.Operation[None]:
        return self._native.renew()


class LosableBase:
    """``lost()`` of a lease, a held lock and an election."""

    _native: Any

    def _lost(self, timeout: Optional[Seconds] = None) -> _native.Operation[Optional[Loss[Any]]]:
        """Waits until the current holding (or leadership) is not held, for at most ``timeout``
        (``None``: until then; ``0``: the state now), and says why: the loss, or ``None`` if
        it was released (or resigned), never held, or is still held when the time is up."""
        return self._native.lost(timeout)


class LeaseBase(HoldingBase["_native.Lease[_V]"], Generic[_V]):
    _shown = ("key", "holder_name", "state")
    key: Native[_V] = Native()
    holder_name: Native[_V] = Native()
    fencing_token: Native[Optional[Version]] = Native("The current holding's fencing token.")
    state: Native[Literal["not_held", "held", "lost"]] = Native('``"not_held"``, ``"held"`` or ``"lost"``.')
    loss: Native[Optional["_native.Loss[_V]"]] = Native('Why the last holding was lost (state ``"lost"``).')
    auto_renew: Native[bool] = Native(settable=True)

    @operation
    def try_acquire(self, ttl: Seconds) -> _native.Operation[AcquireResult[_V]]:
        """One attempt: ``AcquireResult(acquired, fencing_token, holder)``."""
        return self._native.try_acquire(ttl)

    @operation
    def acquire(self, ttl: Seconds, *, timeout: Optional[Seconds] = None) -> _native.Operation[Version]:
        """Waits until acquired (or ``timeout``: ``TimeoutError``); returns the fencing token."""
        return self._native.acquire(ttl, timeout)

    @operation
    def release(self) -> _native.Operation[bool]:
        """Releases the lease; ``True`` if the key was deleted."""
        return self._native.release()

    @operation
    def holder(self) -> _native.Operation[Optional[_V]]:
        """The current holder name on the service (``None``: free)."""
        return self._native.holder()


class LockGuardBase(HoldingBase["_native.LockGuard[_V]"], Generic[_V]):
    _shown = ("name", "holder_name", "held")
    fencing_token: Native[Version] = Native()
    name: Native[_V] = Native()
    holder_name: Native[_V] = Native()

    @operation
    def release(self) -> _native.Operation[None]:
        """Releases the lock (idempotent)."""
        return self._native.release()


class LockBase(Shared["_native.Lock[_V]"], Generic[_V]):
    _shown = ("name", "ttl")
    name: Native[_V] = Native()
    ttl: Native[float] = Native()

    def _acquire(self) -> _native.Operation[_native.LockGuard[_V]]:
        """Waits for the lock (up to the lock's ``timeout``, if any)."""
        return self._native.lock()

    def _try_acquire(self) -> _native.Operation[Optional[_native.LockGuard[_V]]]:
        """One attempt: the guard, or ``None`` if someone else holds the lock."""
        return self._native.try_lock()

    @operation
    def holder(self) -> _native.Operation[Optional[_V]]:
        """The current holder name on the service (``None``: free)."""
        return self._native.holder()


class ElectionBase(Shared["_native.Election[_V]"], Generic[_V]):
    _shown = ("name", "candidate", "is_leader")
    name: Native[_V] = Native()
    candidate: Native[_V] = Native()
    is_leader: Native[bool] = Native()
    fencing_token: Native[Optional[Version]] = Native()

    @operation
    def campaign(self, *, timeout: Optional[Seconds] = None) -> _native.Operation[Version]:
        """Waits until elected (renewed automatically while leader); the fencing token."""
        return self._native.campaign(timeout)

    @operation
    def try_campaign(self) -> _native.Operation[AcquireResult[_V]]:
        return self._native.try_campaign()

    @operation
    def resign(self) -> _native.Operation[None]:
        return self._native.resign()

    @operation
    def leader(self) -> _native.Operation[Optional[_V]]:
        """The current leader's name (``None``: vacant)."""
        return self._native.leader()


__all__ = ["BytesLike", "Condition", "ConnectOptions", "EnvOptions", "Version"]
