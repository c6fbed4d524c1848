"""What a type checker shows for each operation of both flavours: ``mypy --strict`` reveals
the type of every method an ``@operation`` makes, and ``tests/test_types.py`` compares it with
the comment on the line below each ``reveal_type``. Never run, only type-checked."""

from __future__ import annotations

import statestore
from statestore import AsyncClient, Client


def flavours(
    c: Client,
    s: "Client[str]",
    a: AsyncClient,
    t: "AsyncClient[str]",
    l: "statestore.Lease[bytes]",
    al: "statestore.AsyncLease[str]",
    g: "statestore.LockGuard[bytes]",
    e: "statestore.AsyncElection[bytes]",
    lk: "statestore.Lock[str]",
) -> None:
    reveal_type(c.set)
    # def (key: str | bytes | bytearray | memoryview[int], value: str | bytes | bytearray | memoryview[int], *, condition: statestore._common.Condition | Literal['always'] | Literal['nx'] | Literal['nex'] | Literal['ALWAYS'] | Literal['NX'] | Literal['NEX'] =, expiry: int | float | datetime.timedelta | None =, fencing_token: statestore._native.Version | None =, persist: bool =, timeout: int | float | datetime.timedelta | None =) -> statestore._native.SetResult
    reveal_type(c.get)
    # def (key: str | bytes | bytearray | memoryview[int], *, timeout: int | float | datetime.timedelta | None =) -> statestore._native.Value[bytes] | None
    reveal_type(s.get)
    # def (key: str | bytes | bytearray | memoryview[int], *, timeout: int | float | datetime.timedelta | None =) -> statestore._native.Value[str] | None
    reveal_type(c.delete)
    # def (key: str | bytes | bytearray | memoryview[int], *, fencing_token: statestore._native.Version | None =, timeout: int | float | datetime.timedelta | None =) -> statestore._native.DeleteResult
    reveal_type(c.vdel)
    # def (key: str | bytes | bytearray | memoryview[int], value: str | bytes | bytearray | memoryview[int], *, fencing_token: statestore._native.Version | None =, timeout: int | float | datetime.timedelta | None =) -> statestore._native.DeleteResult
    reveal_type(c.unobserve)
    # def (key: str | bytes | bytearray | memoryview[int])
    reveal_type(c.close)
    # def ()
    reveal_type(a.set)
    # def (key: str | bytes | bytearray | memoryview[int], value: str | bytes | bytearray | memoryview[int], *, condition: statestore._common.Condition | Literal['always'] | Literal['nx'] | Literal['nex'] | Literal['ALWAYS'] | Literal['NX'] | Literal['NEX'] =, expiry: int | float | datetime.timedelta | None =, fencing_token: statestore._native.Version | None =, persist: bool =, timeout: int | float | datetime.timedelta | None =) -> typing.Coroutine[Any, Any, statestore._native.SetResult]
    reveal_type(a.get)
    # def (key: str | bytes | bytearray | memoryview[int], *, timeout: int | float | datetime.timedelta | None =) -> typing.Coroutine[Any, Any, statestore._native.Value[bytes] | None]
    reveal_type(t.get)
    # def (key: str | bytes | bytearray | memoryview[int], *, timeout: int | float | datetime.timedelta | None =) -> typing.Coroutine[Any, Any, statestore._native.Value[str] | None]
    reveal_type(a.delete)
    # def (key: str | bytes | bytearray | memoryview[int], *, fencing_token: statestore._native.Version | None =, timeout: int | float | datetime.timedelta | None =) -> typing.Coroutine[Any, Any, statestore._native.DeleteResult]
    reveal_type(a.vdel)
    # def (key: str | bytes | bytearray | memoryview[int], value: str | bytes | bytearray | memoryview[int], *, fencing_token: statestore._native.Version | None =, timeout: int | float | datetime.timedelta | None =) -> typing.Coroutine[Any, Any, statestore._native.DeleteResult]
    reveal_type(a.unobserve)
    # def (key: str | bytes | bytearray | memoryview[int]) -> typing.Coroutine[Any, Any, None]
    reveal_type(a.close)
    # def () -> typing.Coroutine[Any, Any, None]
    reveal_type(l.try_acquire)
    # def (ttl: int | float | datetime.timedelta) -> statestore._native.AcquireResult[bytes]
    reveal_type(l.acquire)
    # def (ttl: int | float | datetime.timedelta, *, timeout: int | float | datetime.timedelta | None =) -> statestore._native.Version
    reveal_type(l.renew)
    # def ()
    reveal_type(l.release)
    # def () -> bool
    reveal_type(l.holder)
    # def () -> bytes | None
    reveal_type(al.holder)
    # def () -> typing.Coroutine[Any, Any, str | None]
    reveal_type(al.try_acquire)
    # def (ttl: int | float | datetime.timedelta) -> typing.Coroutine[Any, Any, statestore._native.AcquireResult[str]]
    reveal_type(g.release)
    # def ()
    reveal_type(g.renew)
    # def ()
    reveal_type(e.campaign)
    # def (*, timeout: int | float | datetime.timedelta | None =) -> typing.Coroutine[Any, Any, statestore._native.Version]
    reveal_type(e.try_campaign)
    # def () -> typing.Coroutine[Any, Any, statestore._native.AcquireResult[bytes]]
    reveal_type(e.resign)
    # def () -> typing.Coroutine[Any, Any, None]
    reveal_type(e.leader)
    # def () -> typing.Coroutine[Any, Any, bytes | None]
    reveal_type(lk.holder)
    # def () -> str | None
    reveal_type(lk.acquire)
    # def () -> statestore._sync.LockGuard[str]
