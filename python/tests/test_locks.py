"""Locks, leases and elections, contended by threads and by asyncio tasks."""

from __future__ import annotations

import asyncio
import threading

import pytest

import statestore
from statestore import AsyncClient, Client
from statestore.testing import LocalStateStore

WORKERS = 8
ROUNDS = 5


def test_lock_with_fencing(client: Client, key: str) -> None:
    with client.lock(key + "/lock", ttl=10.0) as guard:
        assert guard.held and isinstance(guard.fencing_token, statestore.Version)
        client.set(key, "done", fencing_token=guard.fencing_token)
        assert client.lock(key + "/lock").try_acquire() is None
        assert client.lock(key + "/lock").holder() == guard.holder_name
    assert not guard.held
    assert client.lock(key + "/lock").holder() is None


def test_lock_timeout(client: Client, key: str) -> None:
    with client.lock(key, ttl=10.0):
        with pytest.raises(statestore.TimeoutError) as info:
            client.lock(key, ttl=10.0, timeout=0.3).acquire()
        assert isinstance(info.value, TimeoutError)


def test_lost_without_waiting_answers_for_a_lease_not_held(client: Client, key: str) -> None:
    """``lost(timeout=0)`` on a lease that is not held says so (``None``), every time: the answer
    is known before the wait starts, so no wait can miss it."""
    never = client.lease(key, "never")
    released = client.lease(key, "released")
    assert released.state == "not_held"
    released.acquire(10.0)
    assert released.state == "held"
    released.release()
    assert released.state == "not_held"
    for _ in range(300):
        assert never.lost(timeout=0) is None
        assert released.lost(timeout=0) is None


def test_threads_contend(server: LocalStateStore, key: str) -> None:
    holders = 0
    most = 0
    mutex = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        nonlocal holders, most
        try:
            with server.client() as c:
                lock = c.lock(key + "/lock", ttl=10.0)
                for _ in range(ROUNDS):
                    with lock as guard:
                        with mutex:
                            holders += 1
                            most = max(most, holders)
                        old = c.get(key)
                        n = int(old.value) if old else 0
                        c.set(key, str(n + 1), fencing_token=guard.fencing_token)
                        with mutex:
                            holders -= 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(50)
    assert not errors, errors
    assert most == 1
    with server.client() as c:
        assert c.get(key).value == str(WORKERS * ROUNDS).encode()  # type: ignore[union-attr]


async def test_tasks_contend(server: LocalStateStore, key: str) -> None:
    holders = 0
    most = 0

    async def work(c: AsyncClient) -> None:
        nonlocal holders, most
        for _ in range(ROUNDS):
            async with c.lock(key + "/lock", ttl=10.0) as guard:
                holders += 1
                most = max(most, holders)
                old = await c.get(key)
                await asyncio.sleep(0)  # let the others run while we hold it
                n = int(old.value) if old else 0
                await c.set(key, str(n + 1), fencing_token=guard.fencing_token)
                holders -= 1

    clients = [await server.async_client() for _ in range(WORKERS)]
    try:
        await asyncio.gather(*(work(c) for c in clients))
    finally:
        for c in clients:
            await c.close()
    assert most == 1
    async with await server.async_client() as c:
        assert (await c.get(key)).value == str(WORKERS * ROUNDS).encode()  # type: ignore[union-attr]


def test_update_from_threads(server: LocalStateStore, key: str) -> None:
    def work() -> None:
        with server.client() as c:
            for _ in range(3):
                c.lock(key + "/lock", ttl=10.0).update(key, lambda old: str(int(old or 0) + 1))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(50)
    with server.client() as c:
        assert c.get(key).value == b"12"  # type: ignore[union-attr]
        assert c.lock(key + "/lock").update(key, lambda old: None) is None
        assert c.get(key) is None


def test_update_fn_raises_releases(client: Client, key: str) -> None:
    lock = client.lock(key + "/lock", ttl=10.0)

    def boom(old: object) -> bytes:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        lock.update(key, boom)
    assert lock.holder() is None
    assert client.get(key) is None


async def test_async_update(aclient: AsyncClient, key: str) -> None:
    lock = aclient.lock(key + "/lock", ttl=10.0)

    async def bump(old: bytes | None) -> bytes:
        return str(int(old or 0) + 1).encode()

    assert await lock.update(key, bump) == b"1"
    assert await lock.update(key, lambda old: b"x" + old) == b"x1"


def test_lease(client: Client, key: str) -> None:
    lease = client.lease(key, "me")
    assert lease.state == "not_held" and lease.holder() is None
    got = lease.try_acquire(10.0)
    assert got.acquired and got.fencing_token == lease.fencing_token and lease.held
    other = client.lease(key, "you")
    busy = other.try_acquire(10.0)
    assert not busy and busy.holder == b"me"
    with pytest.raises(statestore.TimeoutError):
        other.acquire(10.0, timeout=0.3)
    lease.renew()
    assert lease.fencing_token == got.fencing_token
    assert lease.release() is True
    assert lease.lost(timeout=1) is None
    assert other.acquire(10.0) is not None
    other.release()
    with pytest.raises(statestore.NotHeldError):
        lease.renew()


def test_lease_loss_by_expiry(client: Client, key: str) -> None:
    lease = client.lease(key, "me")
    lease.acquire(0.3)
    loss = lease.lost(timeout=10)
    assert loss is not None and loss.reason == "expired" and lease.state == "lost"
    assert lease.loss is not None and lease.loss.reason == "expired"


def test_lost_is_the_loss_or_none_for_every_timeout(client: Client, key: str) -> None:
    """``lost(timeout)`` means what it means in every language (core's ``lost_within``): no
    timeout waits until lost or released, ``0`` answers now, a number waits at most that long;
    the answer is the loss, or ``None`` (released, never held, or still held)."""
    held = client.lease(key + "/held", "me", auto_renew=True)
    held.acquire(10.0)
    assert held.lost(timeout=0) is None
    assert held.lost(timeout=0.2) is None
    assert held.held
    guard = client.lock(key + "/lock", ttl=10.0).acquire()
    assert guard.lost(timeout=0) is None and guard.held
    held.release()
    guard.release()
    for timeout in (None, 0, 1):
        assert held.lost(timeout=timeout) is None
        assert guard.lost(timeout=timeout) is None
    expiring = client.lease(key + "/expiring", "me")
    expiring.acquire(0.3)
    for timeout in (None, 0, 1):
        loss = expiring.lost(timeout=timeout)
        assert loss is not None and loss.reason == "expired", timeout


async def test_async_lost_is_the_loss_or_none_for_every_timeout(aclient: AsyncClient, key: str) -> None:
    """The asyncio twin gives the same answers."""
    held = aclient.lease(key + "/held", "me", auto_renew=True)
    await held.acquire(10.0)
    assert await held.lost(timeout=0) is None
    assert await held.lost(timeout=0.2) is None
    assert held.held
    await held.release()
    for timeout in (None, 0, 1):
        assert await held.lost(timeout=timeout) is None
    expiring = aclient.lease(key + "/expiring", "me")
    await expiring.acquire(0.3)
    for timeout in (None, 0, 1):
        loss = await expiring.lost(timeout=timeout)
        assert loss is not None and loss.reason == "expired", timeout


def test_lease_loss_on_close(server: LocalStateStore, key: str) -> None:
    c = server.client()
    lease = c.lease(key, "me", auto_renew=True)
    lease.acquire(10.0)
    waiter: list[object] = []
    t = threading.Thread(target=lambda: waiter.append(lease.lost(timeout=10)))
    t.start()
    c.close()
    t.join(10)
    assert waiter and waiter[0].reason == "client_closed"  # type: ignore[attr-defined]


async def test_async_lease_loss(aclient: AsyncClient, key: str) -> None:
    lease = aclient.lease(key, "me")
    await lease.acquire(0.3)
    loss = await lease.lost(timeout=10)
    assert loss is not None and loss.reason == "expired"


def test_election(server: LocalStateStore, key: str) -> None:
    with server.client() as a, server.client() as b:
        ea = a.election(key, "a", 10.0)
        eb = b.election(key, "b", 10.0)
        with ea.observe() as changes:
            assert changes.next(timeout=10).kind == "vacant"  # type: ignore[union-attr]
            ea.campaign()
            assert ea.is_leader and eb.leader() == b"a"
            elected = changes.next(timeout=10)
            assert elected is not None and elected.kind == "elected" and elected.holder == b"a"
            assert not eb.try_campaign().acquired
            with pytest.raises(statestore.TimeoutError):
                eb.campaign(timeout=0.3)
            ea.resign()
            assert eb.campaign(timeout=10) is not None
            kinds = set()
            while "elected" not in kinds or eb.leader() != b"b":
                event = changes.next(timeout=10)
                assert event is not None
                kinds.add(event.kind)
            eb.resign()


async def test_async_election(aclient: AsyncClient, key: str) -> None:
    e = aclient.election(key, "me", 10.0)
    token = await e.campaign(timeout=10)
    assert e.fencing_token == token and await e.leader() == b"me"
    await e.resign()
    assert await e.lost(timeout=1) is None


def test_one_lock_object_entered_by_several_threads(client: Client, key: str) -> None:
    lock = client.lock(key + "/lock", ttl=10.0)
    tokens: list[statestore.Version] = []
    mutex = threading.Lock()

    def work() -> None:
        for _ in range(3):
            with lock as guard:
                assert guard.held
                with mutex:
                    tokens.append(guard.fencing_token)
            assert not guard.held  # this block released its own guard

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(50)
    assert len(set(tokens)) == 12
    assert lock.holder() is None


async def test_one_lock_object_entered_by_several_tasks(aclient: AsyncClient, key: str) -> None:
    lock = aclient.lock(key + "/lock", ttl=10.0)

    async def work() -> statestore.Version:
        async with lock as guard:
            await asyncio.sleep(0)
            return guard.fencing_token

    tokens = await asyncio.gather(*(work() for _ in range(4)))
    assert len(set(tokens)) == 4 and await lock.holder() is None


def test_an_update_function_that_waits_for_its_own_lock_fails_at_once(client: Client, key: str) -> None:
    lock = client.lock(f"{key}-lock", ttl=5)
    same = client.lock(f"{key}-lock", ttl=5)
    refused: list = []

    def outer(old: object) -> str:
        for nested in (lambda: lock.update(f"{key}-other", lambda _: "x"), same.acquire, lambda: same.__enter__()):
            with pytest.raises(statestore.InvalidArgumentError, match="wait for itself") as info:
                nested()
            refused.append(info.value)
        return "outer"

    assert lock.update(key, outer) == b"outer"
    assert len(refused) == 3
    with same:  # outside the function the lock is an ordinary lock again
        pass
