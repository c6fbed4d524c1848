"""Every operation of both clients against the in-process state store."""

from __future__ import annotations

import asyncio
import datetime
from typing import Callable

import pytest

import statestore
from statestore import AsyncClient, Client, Condition, Version
from statestore.testing import LocalStateStore


def test_set_get_delete(client: Client, key: str) -> None:
    r = client.set(key, "blue")
    assert r.applied and isinstance(r.version, Version) and r
    v = client.get(key)
    assert v is not None and v.value == b"blue" and v.version == r.version
    assert v.decode() == "blue"
    d = client.delete(key)
    assert d.outcome == "deleted" and d.deleted
    assert client.get(key) is None
    assert client.delete(key).outcome == "not_found"


async def test_async_set_get_delete(aclient: AsyncClient, key: str) -> None:
    r = await aclient.set(key, "blue")
    assert r.applied
    v = await aclient.get(key)
    assert v is not None and v.value == b"blue" and v.version == r.version
    assert (await aclient.delete(key)).deleted
    assert await aclient.get(key) is None


@pytest.mark.parametrize("value", ["text é", b"\x00\xff", bytearray(b"ba"), memoryview(b"mv")])
def test_every_bytes_type(client: Client, key: str, value: object) -> None:
    client.set(key, value)  # type: ignore[arg-type]
    got = client.get(key)
    expected = value.encode() if isinstance(value, str) else bytes(value)  # type: ignore[call-overload]
    assert got is not None and got.value == expected
    client.set(memoryview(key.encode()), b"x")
    assert client.get(bytearray(key.encode())).value == b"x"  # type: ignore[union-attr]


def test_conditions(client: Client, key: str) -> None:
    assert client.set(key, "me", condition=Condition.NX).applied
    assert not client.set(key, "you", condition=Condition.NX).applied
    assert client.set(key, "me", condition=Condition.NEX).applied
    assert not client.set(key, "you", condition="nex").applied
    assert client.get(key).value == b"me"  # type: ignore[union-attr]


def test_condition_names_come_from_core(client: Client, key: str) -> None:
    """The names of ``Condition`` are core's table's canonical ones, and every name of the table
    is accepted in any case; an unknown one is refused naming them."""
    from statestore import _native

    table = _native.set_conditions()
    assert [c.value for c in Condition] == [names[0] for names in table]
    for names in table:
        for name in names:
            for spelling in (name, name.upper()):
                client.delete(key)
                assert client.set(key, "v", condition=spelling).applied, spelling  # type: ignore[arg-type]
    with pytest.raises(statestore.InvalidArgumentError, match="'nx', 'only_if_absent'"):
        client.set(key, "v", condition="sometimes")  # type: ignore[arg-type]


def test_stub_literals_are_cores_vocabulary() -> None:
    """Every word list of the stubs (``Literal[...]``) is core's vocabulary, word for word, and
    ``CONNECT_OPTIONS`` names only kinds core knows."""
    import ast
    import pathlib

    from statestore import _native

    vocabulary = _native.vocabulary()
    stub = ast.parse((pathlib.Path(_native.__file__).parent / "_native.pyi").read_text())

    def literal(node: ast.expr) -> list[str]:
        assert isinstance(node, ast.Subscript) and ast.unparse(node.value) == "Literal", ast.unparse(node)
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [e.value for e in elements if isinstance(e, ast.Constant)]

    def returned(cls: str, method: str) -> list[str]:
        for node in stub.body:
            if isinstance(node, ast.ClassDef) and node.name == cls:
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == method and item.returns:
                        return literal(item.returns)
        raise AssertionError(f"the stub has no {cls}.{method}")

    def alias(name: str) -> list[str]:
        (words,) = [literal(n.value) for n in stub.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == name]
        return words

    conditions = alias("_Condition")
    in_stub = {
        "condition": [c for c in conditions if c.islower()],
        "event_kind": returned("Event", "kind"),
        "delete_outcome": returned("DeleteResult", "outcome"),
        "loss_reason": returned("Loss", "reason"),
        "lease_state": returned("Lease", "state"),
        "connection_state": alias("_ConnectionState"),
    }
    # Connection changes reach Python as ConnectionEvent objects, never as an Event.
    vocabulary["event_kind"].remove("connection")
    assert set(vocabulary) == set(in_stub) | {"option_kind"}, "a list core has and the stub does not"
    for name, words in in_stub.items():
        assert words == vocabulary[name], name
    assert {kind for _, kind, *_ in statestore.CONNECT_OPTIONS} <= set(vocabulary["option_kind"])


def test_vdel(client: Client, key: str) -> None:
    client.set(key, "me")
    assert client.vdel(key, "you").outcome == "value_mismatch"
    assert client.vdel(key, "me").deleted
    assert client.vdel(key, "me").outcome == "not_found"


def test_expiry_seconds_and_timedelta(client: Client, key: str) -> None:
    with client.observe(key) as obs:
        client.set(key, "a", expiry=0.2)
        assert obs.next(timeout=10).kind == "set"  # type: ignore[union-attr]
        event = obs.next(timeout=10)
        assert event is not None and event.kind == "delete"
    assert client.get(key) is None
    client.set(key, "b", expiry=datetime.timedelta(minutes=1))
    assert client.get(key) is not None


def test_fencing_and_persist(client: Client, key: str) -> None:
    lock = client.set(key + "/lock", "me", condition=Condition.NX, expiry=10)
    token = lock.version
    assert token is not None
    client.set(key, "v1", fencing_token=token, persist=True)
    with pytest.raises(statestore.FencingTokenRequiredError) as info:
        client.set(key, "v2")
    assert isinstance(info.value, statestore.ServiceError) and info.value.code == 101
    older = Version("000000000000001:00000:x")
    with pytest.raises(statestore.FencingTokenLowerVersionError):
        client.set(key, "v3", fencing_token=older)
    with pytest.raises(statestore.FencingTokenLowerVersionError):
        client.delete(key, fencing_token=older)
    assert client.delete(key, fencing_token=str(token)).deleted


def test_a_key_left_fenced_by_a_released_lock_is_cleaned_up_as_the_error_says(client: Client, key: str) -> None:
    with client.lock(key + "/lock", ttl=10.0) as guard:
        client.set(key, "half-done", fencing_token=guard.fencing_token)
    # The lock is gone; the key is still fenced, and the error says how to clean it up.
    with pytest.raises(statestore.FencingTokenRequiredError) as info:
        client.delete(key)
    assert "read its current version with GET and delete it with that version" in str(info.value)
    value = client.get(key)
    assert value is not None and value.version is not None
    assert client.delete(key, fencing_token=value.version).deleted
    assert client.set(key, "fresh").applied  # an ordinary key again


def test_keys(client: Client, key: str) -> None:
    for i in range(30):
        client.set(f"{key}:{i:02}", "x")
    client.set(f"{key}-other", "x")
    found = sorted(client.keys(f"{key}:*"))
    assert found == [f"{key}:{i:02}".encode() for i in range(30)]


async def test_async_keys(aclient: AsyncClient, key: str) -> None:
    await aclient.set(f"{key}:a", "x")
    await aclient.set(f"{key}:b", "x")
    assert sorted([k async for k in aclient.keys(f"{key}:*")]) == [f"{key}:a".encode(), f"{key}:b".encode()]


def test_decode_responses(server: statestore.testing.LocalStateStore, key: str) -> None:
    with Client.connect(server.host, server.port, decode_responses=True) as c:
        c.set(key, "é")
        v = c.get(key)
        assert v is not None and v.value == "é"
        assert list(c.keys(key)) == [key]


def test_timeouts(client: Client, key: str) -> None:
    assert client.get(key, timeout=5.0) is None
    assert client.set(key, "x", timeout=datetime.timedelta(seconds=5)).applied
    with pytest.raises(statestore.InvalidArgumentError):
        client.get(key, timeout=0)


def test_versions_are_ordered_hashable_values(client: Client, key: str) -> None:
    a = client.set(key, "1").version
    b = client.set(key, "2").version
    assert a is not None and b is not None
    assert a < b and b > a and a != b and a <= a
    assert Version(str(a)) == a and hash(Version(str(a))) == hash(a)
    assert len({a, b, Version(str(a))}) == 2
    assert repr(a).startswith("Version(") and a.node and a.wall_ms > 0
    import pickle

    assert pickle.loads(pickle.dumps(a)) == a
    with pytest.raises(ValueError):
        Version("not a version")
    with pytest.raises(AttributeError):
        a.counter = 3  # type: ignore[misc]


def test_connect_options(server: statestore.testing.LocalStateStore) -> None:
    with Client.connect(
        server.host,
        server.port,
        client_id="py-options",
        keep_alive=datetime.timedelta(seconds=30),
        default_timeout=5,
        clean_start=True,
    ) as c:
        assert c.client_id == "py-options"
    names = {o[0] for o in statestore.CONNECT_OPTIONS}
    assert {"tls", "ca_file", "password", "sat_token_file", "default_timeout"} <= names
    with pytest.raises(statestore.InvalidArgumentError, match="no_such"):
        Client.connect(server.host, server.port, no_such=1)
    # Whatever the value, an unknown name says so (a float is not read as a wrong type).
    with pytest.raises(statestore.InvalidArgumentError, match=r"timeout: unknown setting \(did you mean default_timeout\?\)"):
        Client.connect(server.host, server.port, timeout=2.0)
    # A host with its port, or a URL, where a host name goes: says what to pass instead.
    with pytest.raises(statestore.InvalidArgumentError, match=f'includes a port: pass host "{server.host}" and port {server.port}'):
        Client.connect(f"{server.host}:{server.port}")
    with pytest.raises(statestore.InvalidArgumentError, match=r"is a URL, not a host name: .*from_url"):
        Client.connect(f"mqtt://{server.host}:{server.port}")
    with pytest.raises(statestore.InvalidArgumentError):
        Client.connect(server.host, server.port, keep_alive=1)
    with pytest.raises(TypeError, match="keep_alive"):
        Client.connect(server.host, server.port, keep_alive=[1])


def test_connection_refused() -> None:
    with pytest.raises(statestore.ConnectionError) as info:
        Client.connect("127.0.0.1", 1, default_timeout=2)
    assert isinstance(info.value, ConnectionError)  # the builtin, too


def test_from_env(server: statestore.testing.LocalStateStore, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    monkeypatch.setenv("AIO_BROKER_HOSTNAME", server.host)
    monkeypatch.setenv("AIO_BROKER_TCP_PORT", str(server.port))
    monkeypatch.setenv("AIO_MQTT_USE_TLS", "false")
    with Client.from_env() as c:
        assert c.set(key, "env").applied
    # Without AIO_BROKER_HOSTNAME: refused, saying what to do, unless the options give the host.
    monkeypatch.delenv("AIO_BROKER_HOSTNAME")
    with pytest.raises(statestore.InvalidArgumentError, match="AIO_BROKER_HOSTNAME is not set.*give the host"):
        Client.from_env()
    with Client.from_env(host=server.host) as c:
        assert c.get(key) is not None


async def test_async_from_env(server: statestore.testing.LocalStateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIO_BROKER_HOSTNAME", server.host)
    monkeypatch.setenv("AIO_BROKER_TCP_PORT", str(server.port))
    monkeypatch.setenv("AIO_MQTT_USE_TLS", "false")
    async with await AsyncClient.from_env() as c:
        assert not c.closed
    assert c.closed


def test_close_is_idempotent_and_final(server: statestore.testing.LocalStateStore, key: str) -> None:
    c = server.client()
    c.close()
    c.close()
    assert c.closed
    with pytest.raises(statestore.ClosedError):
        c.get(key)


def test_testing_fixture(statestore_server: statestore.testing.LocalStateStore, key: str) -> None:
    with statestore_server.client() as c:
        assert c.set(key, "x").applied


def test_client_fixture(statestore_client: "statestore.Client[bytes]", key: str) -> None:
    assert statestore_client.connection_state == "connected"
    assert statestore_client.set(key, "x").applied
    got = statestore_client.get(key)
    assert got is not None and got.value == b"x"


def test_quota(key: str) -> None:
    with statestore.testing.LocalStateStore(max_keys=1) as s, s.client() as c:
        c.set(key, "1")
        with pytest.raises(statestore.QuotaExceededError):
            c.set(key + "2", "2")


def test_password_authentication(tmp_path: "object", key: str) -> None:
    import pathlib

    with statestore.testing.LocalStateStore(username="app", password="s3cret") as s:
        with Client.connect(s.host, s.port, username="app", password="s3cret") as c:
            assert c.set(key, "x").applied
        secret = pathlib.Path(str(tmp_path)) / "password"
        secret.write_text("s3cret\n")
        with Client.connect(s.host, s.port, username="app", password_file=secret) as c:
            assert c.get(key) is not None
        with pytest.raises(statestore.ConnectionError):
            Client.connect(s.host, s.port, username="app", password="wrong", default_timeout=3)
        # The store's URL and its clients carry the account.
        assert s.url == f"mqtt://app:s3cret@{s.host}:{s.port}"
        assert "s3cret" not in repr(s)
        with s.client() as c:
            assert c.get(key) is not None


def test_tls(tmp_path: "object", key: str) -> None:
    import pathlib
    import subprocess

    d = pathlib.Path(str(tmp_path))

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
            "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"))
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
            "-keyout", str(d / "server.key"), "-out", str(d / "server.csr"))
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
            "-CAcreateserial", "-days", "1", "-extfile", str(d / "ext.cnf"), "-out", str(d / "server.pem"))
    with statestore.testing.LocalStateStore(tls_cert=d / "server.pem", tls_key=d / "server.key") as s:
        with Client.connect("localhost", s.port, tls=True, ca_file=d / "ca.pem") as c:
            assert c.set(key, "over tls").applied
        with pytest.raises(statestore.ConnectionError):  # the system roots do not know our CA
            Client.connect("localhost", s.port, tls=True, default_timeout=3)
        assert s.url == f"mqtts://127.0.0.1:{s.port}"
        with s.client(ca_file=d / "ca.pem") as c:
            assert c.get(key) is not None


FLAVOURS = [
    (statestore.Client, statestore.AsyncClient),
    (statestore.Lease, statestore.AsyncLease),
    (statestore.Lock, statestore.AsyncLock),
    (statestore.LockGuard, statestore.AsyncLockGuard),
    (statestore.Election, statestore.AsyncElection),
]
# Methods whose asyncio twin works differently (async iteration, a lazy observation, an async fn).
OWN_BODIES = {"keys", "observe", "update", "connection_events"}


@pytest.mark.parametrize("blocking, asyncio_twin", FLAVOURS, ids=lambda c: c.__name__)
def test_both_flavours_share_each_operation(blocking: type, asyncio_twin: type) -> None:
    """One body per operation: the twins have the same names, parameters and docs."""
    import inspect

    names = {n for n in dir(blocking) if not n.startswith("_")}
    assert names == {n for n in dir(asyncio_twin) if not n.startswith("_")}
    for name in sorted(names - OWN_BODIES):
        one, two = getattr(blocking, name), getattr(asyncio_twin, name)
        assert one.__doc__ == two.__doc__, name
        if inspect.isfunction(one) or inspect.ismethod(one):
            assert inspect.signature(one).parameters == inspect.signature(two).parameters, name
            returns = (inspect.signature(one).return_annotation, inspect.signature(two).return_annotation)
            assert returns[0] == returns[1].replace("Async", ""), name
            if name not in {"connect", "from_env", "from_url", "lock", "lease", "election"}:
                assert inspect.iscoroutinefunction(two), name


def test_read_only_attributes_stay_read_only(client: statestore.Client, key: str) -> None:
    lease = client.lease(key, "me")
    with pytest.raises(AttributeError):
        lease.held = True  # type: ignore[misc]
    lease.auto_renew = True
    assert lease.auto_renew is True


LONE_SURROGATES = ["a\ud800b", "\udc00", "x\udbff"]


def _refused(call: Callable[[], object], name: str) -> None:
    with pytest.raises(statestore.InvalidArgumentError, match="not valid Unicode") as caught:
        call()
    assert name in str(caught.value), str(caught.value)


@pytest.mark.parametrize("bad", LONE_SURROGATES)
def test_text_that_is_not_unicode_is_refused_naming_the_argument(
    server: LocalStateStore, client: statestore.Client, key: str, bad: str
) -> None:
    version = client.set(key, "v").version
    assert version is not None
    _refused(lambda: client.set(bad, "v"), "key")
    _refused(lambda: client.set(key, bad), "value")
    _refused(lambda: client.set(key, "v", condition=bad), "condition")
    _refused(lambda: client.set(key, "v", fencing_token=str(version) + bad), "fencing_token")
    _refused(lambda: client.delete(key, fencing_token=str(version) + bad), "fencing_token")
    _refused(lambda: Version(str(version) + bad), "text")
    _refused(lambda: client.lease(bad, "me"), "key")
    _refused(lambda: client.election(bad, "me", ttl=1.0), "name")
    _refused(lambda: client.get(bad), "key")
    _refused(lambda: client.vdel(key, bad), "value")
    _refused(lambda: client.observe(bad), "key")
    _refused(lambda: list(client.keys(bad)), "pattern")
    _refused(lambda: client.lock(bad, ttl=1.0), "name")
    _refused(lambda: client.lease(key, bad), "holder")
    _refused(lambda: client.election(key, bad, ttl=1.0), "candidate")
    _refused(lambda: statestore.Client.connect(bad, server.port), "host")
    for option in ("client_id", "username", "password", "ca_file", "password_file", "sat_token_file"):
        _refused(lambda: statestore.Client.connect(server.host, server.port, **{option: bad}), option)
    _refused(lambda: LocalStateStore(username=bad, password="p"), "username")
    _refused(lambda: LocalStateStore(username="u", password=bad), "password")
    _refused(lambda: LocalStateStore(host=bad), "host")
    # Nothing was written under another key.
    assert client.get(key) is not None and client.get(key).value == b"v"  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", LONE_SURROGATES)
async def test_async_text_that_is_not_unicode_is_refused(
    server: LocalStateStore, aclient: statestore.AsyncClient, key: str, bad: str
) -> None:
    with pytest.raises(statestore.InvalidArgumentError, match="key.*not valid Unicode"):
        await aclient.set(bad, "v")
    with pytest.raises(statestore.InvalidArgumentError, match="fencing_token.*not valid Unicode"):
        await aclient.set(key, "v", fencing_token="1:0:n" + bad)
    with pytest.raises(statestore.InvalidArgumentError, match="host.*not valid Unicode"):
        await statestore.AsyncClient.connect(bad, server.port)


def test_batches_give_one_result_per_key_in_order(client: Client, key: str) -> None:
    written = client.set_many({key + "/a": "1", key + "/b": b"2"})
    assert [w.applied for w in written if isinstance(w, statestore.SetResult)] == [True, True]
    values = client.get_many([key + "/b", key + "/none", key + "/a", key + "/b"])
    assert [None if v is None or isinstance(v, Exception) else v.value for v in values] == [b"2", None, b"1", b"2"]
    deleted = client.delete_many((k for k in [key + "/a", key + "/none"]))
    assert [d.outcome for d in deleted if isinstance(d, statestore.DeleteResult)] == ["deleted", "not_found"]
    assert client.get_many([]) == [] and client.set_many([]) == [] and client.delete_many([]) == []


def test_a_refused_key_is_an_exception_instance_in_the_list(client: Client, key: str) -> None:
    token = client.set(key + "/lock", "me").version
    assert token is not None
    client.set(key + "/fenced", "v1", fencing_token=token)
    older = Version("000000000000001:00000:x")
    results = client.set_many([(key + "/free", "x"), (key + "/fenced", "x")], fencing_token=older)
    assert isinstance(results[0], statestore.SetResult) and results[0].applied
    assert isinstance(results[1], statestore.FencingTokenLowerVersionError)
    assert isinstance(results[1], statestore.StateStoreError)


async def test_async_batches(aclient: AsyncClient, key: str) -> None:
    await aclient.set_many([(key, "v")])
    [value] = await aclient.get_many([key])
    assert value is not None and not isinstance(value, Exception) and value.value == b"v"
    [deleted] = await aclient.delete_many([key])
    assert isinstance(deleted, statestore.DeleteResult) and deleted.deleted


def test_batch_arguments_are_checked_naming_the_item(client: Client, key: str) -> None:
    with pytest.raises(TypeError, match="argument 'keys': expected an iterable"):
        client.get_many(key)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="argument 'keys': expected an iterable"):
        client.delete_many(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"argument 'keys\[1\]'"):
        client.get_many([key, 5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"argument 'items\[1\]': expected a \(key, value\) pair"):
        client.set_many([(key, "v"), key])  # type: ignore[list-item]
    with pytest.raises(statestore.InvalidArgumentError, match="batch item 1 .*the key is empty"):
        client.set_many([(key, "v"), ("", "v")])
    assert client.get(key) is None, "nothing was sent"


def test_reprs_say_what_each_object_is_and_its_state(server: LocalStateStore, key: str) -> None:
    k = key.encode()
    with server.client() as client:
        assert repr(client) == f"<statestore.Client {client.client_id!r} connected>"
        lease = client.lease(key, "me")
        assert repr(lease) == f"<statestore.Lease key={k!r} holder_name=b'me' state='not_held'>"
        lease.acquire(5)
        assert repr(lease).endswith("state='held'>")
        lease.release()
        lock = client.lock(key + "-lock", ttl=5)
        assert repr(lock) == f"<statestore.Lock name={(key + '-lock').encode()!r} ttl=5.0>"
        with lock as guard:
            assert repr(guard).startswith(f"<statestore.LockGuard name={(key + '-lock').encode()!r} holder_name=")
            assert repr(guard).endswith(" held=True>")
        assert repr(guard).endswith(" held=False>")
        election = client.election(key + "-el", "me", ttl=5)
        assert repr(election) == f"<statestore.Election name={(key + '-el').encode()!r} candidate=b'me' is_leader=False>"
        with client.observe(key) as observation:
            assert repr(observation) == f"<statestore.Observation key={k!r} closed=False>"
        assert repr(observation) == f"<statestore.Observation key={k!r} closed=True>"
    assert repr(client) == f"<statestore.Client {client.client_id!r} closed>"


async def test_async_reprs_name_the_async_classes(server: LocalStateStore, key: str) -> None:
    async with await AsyncClient.connect(server.host, server.port, decode_responses=True) as client:
        assert repr(client) == f"<statestore.AsyncClient {client.client_id!r} connected>"
        lease = client.lease(key, "me")
        assert repr(lease) == f"<statestore.AsyncLease key={key!r} holder_name='me' state='not_held'>"
        observation = client.observe(key)
        assert repr(observation) == "<statestore.AsyncObservation key=None closed=False>"  # not started
        async with observation:
            assert repr(observation) == f"<statestore.AsyncObservation key={key!r} closed=False>"


async def test_async_with_connect_connects_for_the_block(server: LocalStateStore, key: str) -> None:
    async with AsyncClient.connect(server.host, server.port) as client:
        assert isinstance(client, AsyncClient) and client.connection_state == "connected"
        await client.set(key, "v")
    assert client.connection_state == "closed"
    url = f"mqtt://{server.host}:{server.port}"
    async with AsyncClient.from_url(url, decode_responses=True) as text:
        value = await text.get(key)
        assert value is not None and value.value == "v"
    assert text.connection_state == "closed"
    with pytest.raises(statestore.ConnectionError):
        async with AsyncClient.connect(server.host, 1):  # nothing to close: never connected
            pass
    # Still the connecting coroutine for asyncio's own functions.
    task = asyncio.create_task(AsyncClient.connect(server.host, server.port))
    async with await task as tasked:
        assert tasked.connection_state == "connected"
    async with await asyncio.wait_for(AsyncClient.connect(server.host, server.port), 30) as waited:
        assert waited.connection_state == "connected"


def test_results_are_equal_hashable_and_picklable_by_their_fields(client: Client, key: str) -> None:
    import pickle

    written = client.set(key, "v")
    read, again = client.get(key), client.get(key)
    assert read is not None and read == again and hash(read) == hash(again) and read is not again
    assert read == statestore.Value(b"v", written.version)  # what a test builds to compare with
    assert read != statestore.Value(b"w", written.version) and read != b"v"
    assert {read, again} == {read}
    deleted = client.delete(key)
    examples = [
        written,
        read,
        deleted,
        statestore.AcquireResult(False, None, b"bob"),
        statestore.Event("lost", b"k", loss=statestore.Loss("taken_over", b"bob", None, "taken over by bob")),
        statestore.ConnectionEvent("reconnecting", "connection refused", 2, 0.5),
    ]
    for result in examples:
        copy = pickle.loads(pickle.dumps(result))
        assert copy == result and type(copy) is type(result) and repr(copy) == repr(result), result
    assert deleted == statestore.DeleteResult("deleted", deleted.version)


def test_result_constructors_check_their_arguments() -> None:
    with pytest.raises(statestore.InvalidArgumentError, match="outcome: \"gone\" is not a delete outcome; use one of 'deleted'"):
        statestore.DeleteResult("gone", None)  # type: ignore[arg-type]
    with pytest.raises(statestore.InvalidArgumentError, match="kind: \"changed\" is not an event kind"):
        statestore.Event("changed", b"k")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="argument 'value': expected bytes or str, got int"):
        statestore.Value(5, None)  # type: ignore[type-var]
